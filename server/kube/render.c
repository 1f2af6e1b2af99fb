/*
 * render: spec -> PyTorchJob / TrainJob / Secret JSON (see render.h). Pure; thread-safe.
 * Field names and defaults follow the Kubeflow APIs: PyTorchJob (Training Operator v1.9,
 * kubeflow.org/v1) and TrainJob (Trainer v2.0-v2.3, trainer.kubeflow.org/v1alpha1);
 * docs/kubernetes.md has the mapping from spec fields.
 */
#include "server/kube/render.h"

#include "core/buf.h"
#include "core/crypto.h"
#include "core/jsonx.h"

#define MANAGER "trainyard.io/trainyard"

const char *kube_render_kind(const struct spec_view *v)
{
    const json_t *m = json_object_get(v->kubernetes, "manifest");
    const char *kind = m ? jsonx_str(m, "kind") : jsonx_str(v->kubernetes, "kind");
    return kind && !strcmp(kind, "TrainJob") ? "TrainJob" : "PyTorchJob";
}

void kube_render_name(const struct spec_view *v, const char *job_id, char *out, size_t size)
{
    const json_t *m = json_object_get(v->kubernetes, "manifest");
    const char *name = jsonx_str(json_object_get(m, "metadata"), "name");
    if (name)
        snprintf(out, size, "%s", name);
    else
        snprintf(out, size, "ty-%s", job_id);
}

const char *kube_render_namespace(const struct spec_view *v, const char *def)
{
    const json_t *m = json_object_get(v->kubernetes, "manifest");
    const char *ns = jsonx_str(json_object_get(m, "metadata"), "namespace");
    if (!ns)
        ns = jsonx_str(v->kubernetes, "namespace");
    return ns && *ns ? ns : def;
}

void kube_render_secret_name(const char *object_name, char *out, size_t size)
{
    snprintf(out, size, "%s-token", object_name);
}

void kube_render_path(const char *kind, const char *ns, char *out, size_t size)
{
    if (!strcmp(kind, "TrainJob"))
        snprintf(out, size, "/apis/trainer.kubeflow.org/v1alpha1/namespaces/%s/trainjobs", ns);
    else if (!strcmp(kind, "Secret"))
        snprintf(out, size, "/api/v1/namespaces/%s/secrets", ns);
    else
        snprintf(out, size, "/apis/kubeflow.org/v1/namespaces/%s/pytorchjobs", ns);
}

static json_t *base_labels(const char *job_id, const char *job_name)
{
    return json_pack("{s:s,s:s,s:s}", KUBE_LABEL_JOB_ID, job_id, KUBE_LABEL_JOB_NAME, job_name,
                     "app.kubernetes.io/managed-by", "trainyard");
}

/* The job object's labels: trainyard's, the user's, Kueue's queue and priority. */
static json_t *object_labels(const struct spec_view *v, const struct kube_render_ctx *rc)
{
    json_t *l = json_object();
    if (v->labels)
        json_object_update(l, v->labels);
    json_object_update_new(l, base_labels(rc->job_id, v->name));
    if (v->queue)
        json_object_set_new(l, "kueue.x-k8s.io/queue-name", json_string(v->queue));
    const char *prio = jsonx_str(v->kubernetes, "priority_class");
    if (prio)
        json_object_set_new(l, "kueue.x-k8s.io/priority-class", json_string(prio));
    return l;
}

static json_t *annotations(const struct spec_view *v, bool pod)
{
    json_t *a = json_object();
    json_t *given = json_object_get(v->kubernetes, "annotations");
    if (given)
        json_object_update(a, given);
    if (pod) /* a running job must not be consolidated away by Karpenter */
        json_object_set_new(a, "karpenter.sh/do-not-disrupt", json_string("true"));
    return a;
}

static json_t *pod_meta(const struct spec_view *v, const struct kube_render_ctx *rc)
{
    return json_pack("{s:o,s:o}", "labels", base_labels(rc->job_id, v->name), "annotations",
                     annotations(v, true));
}

static void env_add(json_t *env, const char *name, const char *value)
{
    json_array_append_new(env, json_pack("{s:s,s:s}", "name", name, "value", value));
}

static bool env_given(const struct spec_view *v, const char *name)
{
    return v->env && json_object_get(v->env, name);
}

/* The ranks' checkpoint directory: checkpoint.path, else /checkpoints. Every pod mounts a
 * volume there, so that it exists and the ranks may write it before they start: the claim
 * (kept across pods and nodes), else an emptyDir (kept across the restarts of a container in
 * its pod, as restartPolicy OnFailure makes them, but not when a pod is made again). */
static const char *checkpoint_dir(const struct spec_view *v)
{
    const char *path = jsonx_str(v->checkpoint, "path");
    return path ? path : "/checkpoints";
}

/* TRAINYARD_* for the ranks, then the spec's env (plain values and secret references). */
static json_t *env_list(const struct spec_view *v, const struct kube_render_ctx *rc,
                        const char *object_name)
{
    json_t *env = json_array();
    char num[16], secret[300];
    snprintf(num, sizeof(num), "%d", rc->attempt);
    const char *mine[][2] = { { "TRAINYARD_JOB_ID", rc->job_id },
                              { "TRAINYARD_ATTEMPT", num },
                              { "TRAINYARD_RESTART_COUNT", num },
                              { "TRAINYARD_URL", rc->url },
                              { "TRAINYARD_CHECKPOINT_DIR", checkpoint_dir(v) } };
    for (size_t i = 0; i < sizeof(mine) / sizeof(mine[0]); i++)
        if (mine[i][1] && !env_given(v, mine[i][0]))
            env_add(env, mine[i][0], mine[i][1]);
    if (rc->with_token && !env_given(v, "TRAINYARD_TOKEN")) {
        kube_render_secret_name(object_name, secret, sizeof(secret));
        json_array_append_new(env, json_pack("{s:s,s:{s:{s:s,s:s}}}", "name", "TRAINYARD_TOKEN",
                                             "valueFrom", "secretKeyRef", "name", secret, "key",
                                             KUBE_TOKEN_KEY));
    }
    const char *k;
    json_t *val;
    json_object_foreach(v->env, k, val)
    {
        if (json_is_string(val))
            env_add(env, k, json_string_value(val));
        else
            json_array_append_new(env, json_pack("{s:s,s:{s:{s:s,s:s}}}", "name", k, "valueFrom",
                                                 "secretKeyRef", "name", jsonx_str(val, "secret"),
                                                 "key", jsonx_str(val, "key")));
    }
    return env;
}

static json_t *resources(const struct spec_view *v)
{
    json_t *req = json_object(), *lim = json_object();
    const json_t *r = v->resources;
    const char *cpu = jsonx_str(r, "cpu"), *mem = jsonx_str(r, "memory");
    char n[16];
    if (cpu)
        json_object_set_new(req, "cpu", json_string(cpu));
    if (mem) {
        json_object_set_new(req, "memory", json_string(mem));
        json_object_set_new(lim, "memory", json_string(mem));
    }
    if (jsonx_int(r, "gpus", 0) > 0) {
        snprintf(n, sizeof(n), "%lld", (long long)jsonx_int(r, "gpus", 0));
        json_object_set_new(lim, "nvidia.com/gpu", json_string(n));
    }
    if (jsonx_int(r, "efa", 0) > 0) {
        snprintf(n, sizeof(n), "%lld", (long long)jsonx_int(r, "efa", 0));
        json_object_set_new(lim, "vpc.amazonaws.com/efa", json_string(n));
    }
    return json_pack("{s:o,s:o}", "requests", req, "limits", lim);
}

static json_t *volumes(const struct spec_view *v)
{
    json_t *vols = json_array();
    const char *shm = jsonx_str(v->resources, "shm");
    if (shm)
        json_array_append_new(vols, json_pack("{s:s,s:{s:s,s:s}}", "name", "dshm", "emptyDir",
                                              "medium", "Memory", "sizeLimit", shm));
    const char *claim = jsonx_str(v->checkpoint, "volume_claim");
    if (claim)
        json_array_append_new(vols, json_pack("{s:s,s:{s:s}}", "name", "checkpoint",
                                              "persistentVolumeClaim", "claimName", claim));
    else
        json_array_append_new(vols, json_pack("{s:s,s:{}}", "name", "checkpoint", "emptyDir"));
    return vols;
}

static json_t *mounts(const struct spec_view *v)
{
    json_t *m = json_array();
    if (jsonx_str(v->resources, "shm"))
        json_array_append_new(m, json_pack("{s:s,s:s}", "name", "dshm", "mountPath", "/dev/shm"));
    json_array_append_new(
        m, json_pack("{s:s,s:s}", "name", "checkpoint", "mountPath", checkpoint_dir(v)));
    return m;
}

static json_t *node_selector(const struct spec_view *v)
{
    json_t *sel = json_object();
    const char *map[][2] = { { "instance_type", "node.kubernetes.io/instance-type" },
                             { "zone", "topology.kubernetes.io/zone" },
                             { "capacity_type", "karpenter.sh/capacity-type" } };
    for (size_t i = 0; i < 3; i++) {
        const char *val = jsonx_str(v->placement, map[i][0]);
        if (val)
            json_object_set_new(sel, map[i][1], json_string(val));
    }
    json_t *given = json_object_get(v->kubernetes, "node_selector");
    if (given)
        json_object_update(sel, given);
    return sel;
}

static json_t *not_in(json_t *names)
{
    return json_pack("{s:[{s:s,s:s,s:o}]}", "matchExpressions", "key", "kubernetes.io/hostname",
                     "operator", "NotIn", "values", names);
}

/* Nodes to avoid: the spec's and those marked bad never (required node affinity NotIn
 * hostname), those marked suspect while others fit (preferred). */
static json_t *affinity(const struct spec_view *v, const struct kube_render_ctx *rc)
{
    json_t *names = json_array(), *maybe = json_array();
    size_t i;
    json_t *n;
    json_array_foreach(json_object_get(v->placement, "avoid_nodes"), i, n)
        json_array_append(names, n);
    for (const char *const *p = rc->avoid_nodes; p && *p; p++)
        json_array_append_new(names, json_string(*p));
    for (const char *const *p = rc->prefer_not_nodes; p && *p; p++)
        json_array_append_new(maybe, json_string(*p));
    json_t *na = json_object();
    if (json_array_size(names))
        json_object_set_new(na, "requiredDuringSchedulingIgnoredDuringExecution",
                            json_pack("{s:[o]}", "nodeSelectorTerms", not_in(names)));
    else
        json_decref(names);
    if (json_array_size(maybe))
        json_object_set_new(na, "preferredDuringSchedulingIgnoredDuringExecution",
                            json_pack("[{s:i,s:o}]", "weight", 100, "preference", not_in(maybe)));
    else
        json_decref(maybe);
    if (json_object_size(na) == 0) {
        json_decref(na);
        return NULL;
    }
    return json_pack("{s:o}", "nodeAffinity", na);
}

/* The pod-level settings shared by every form: volumes, placement, account, pull secrets. */
static void pod_settings(json_t *ps, const struct spec_view *v, const struct kube_render_ctx *rc)
{
    json_t *vols = volumes(v), *sel = node_selector(v), *aff = affinity(v, rc);
    if (json_array_size(vols))
        json_object_set(ps, "volumes", vols);
    if (json_object_size(sel))
        json_object_set(ps, "nodeSelector", sel);
    if (aff)
        json_object_set_new(ps, "affinity", aff);
    json_t *tol = json_object_get(v->kubernetes, "tolerations");
    if (tol)
        json_object_set(ps, "tolerations", tol);
    const char *sa = jsonx_str(v->kubernetes, "service_account");
    if (sa)
        json_object_set_new(ps, "serviceAccountName", json_string(sa));
    json_t *pulls = json_array();
    size_t i;
    json_t *p;
    json_array_foreach(json_object_get(v->kubernetes, "image_pull_secrets"), i, p)
        json_array_append_new(pulls, json_pack("{s:O}", "name", p));
    if (json_array_size(pulls))
        json_object_set(ps, "imagePullSecrets", pulls);
    json_decref(pulls);
    json_decref(vols);
    json_decref(sel);
}

static json_t *pytorch_template(const struct spec_view *v, const struct kube_render_ctx *rc,
                                const char *name)
{
    json_t *c = json_pack("{s:s,s:s,s:o,s:o}", "name", "pytorch", "image", v->image ? v->image : "",
                          "env", env_list(v, rc, name), "resources", resources(v));
    if (v->command)
        json_object_set(c, "command", v->command);
    if (v->args)
        json_object_set(c, "args", v->args);
    json_t *m = mounts(v);
    if (json_array_size(m))
        json_object_set(c, "volumeMounts", m);
    json_decref(m);
    json_t *ps = json_pack("{s:[o]}", "containers", c);
    pod_settings(ps, v, rc);
    return json_pack("{s:o,s:o}", "metadata", pod_meta(v, rc), "spec", ps);
}

static const char *restart_policy(const struct spec_view *v)
{
    if (!strcmp(v->restart_policy, "on_failure"))
        return "OnFailure";
    if (!strcmp(v->restart_policy, "exit_code"))
        return "ExitCode";
    return "Never";
}

static json_t *run_policy(const struct spec_view *v)
{
    /* None, the operator's default: a job that succeeds through its Master keeps the Workers
     * that were finishing too (Running would kill them mid-line). A failed job's running pods
     * are trainyard's to delete (status.c), whatever the policy. */
    json_t *rp = json_pack("{s:s,s:i,s:b}", "cleanPodPolicy", "None", "backoffLimit",
                           strcmp(v->restart_policy, "never") ? v->max_restarts : 0, "suspend", 0);
    if (v->deadline_seconds)
        json_object_set_new(rp, "activeDeadlineSeconds", json_integer(v->deadline_seconds));
    return rp;
}

static json_t *replica(int n, const char *policy, json_t *tmpl)
{
    return json_pack("{s:i,s:s,s:o}", "replicas", n, "restartPolicy", policy, "template", tmpl);
}

static json_t *render_pytorchjob(const struct spec_view *v, const struct kube_render_ctx *rc,
                                 const char *name, const char *ns)
{
    char nproc[16];
    snprintf(nproc, sizeof(nproc), "%d", v->procs_per_node);
    const char *policy = restart_policy(v);
    json_t *specs = json_object();
    json_t *elastic = json_object_get(v->kubernetes, "elastic");
    json_t *spec = json_pack("{s:o,s:s}", "runPolicy", run_policy(v), "nprocPerNode", nproc);
    if (elastic) { /* torchrun rendezvous among Workers only (v1.9 requires Worker) */
        json_object_set_new(specs, "Worker",
                            replica(v->nodes, policy, pytorch_template(v, rc, name)));
        json_t *ep = json_pack(
            "{s:i,s:i,s:s}", "minReplicas", (int)jsonx_int(elastic, "min_nodes", v->nodes),
            "maxReplicas", (int)jsonx_int(elastic, "max_nodes", v->nodes), "rdzvBackend", "c10d");
        if (json_object_get(elastic, "max_restarts"))
            json_object_set_new(ep, "maxRestarts",
                                json_integer(jsonx_int(elastic, "max_restarts", 0)));
        json_object_set_new(spec, "elasticPolicy", ep);
    } else {
        json_object_set_new(specs, "Master", replica(1, policy, pytorch_template(v, rc, name)));
        if (v->nodes > 1)
            json_object_set_new(specs, "Worker",
                                replica(v->nodes - 1, policy, pytorch_template(v, rc, name)));
    }
    json_object_set_new(spec, "pytorchReplicaSpecs", specs);
    return json_pack("{s:s,s:s,s:{s:s,s:s,s:o,s:o},s:o}", "apiVersion", "kubeflow.org/v1", "kind",
                     "PyTorchJob", "metadata", "name", name, "namespace", ns, "labels",
                     object_labels(v, rc), "annotations", annotations(v, false), "spec", spec);
}

/* The `node` container's and pod's settings as a PodSpecPatch (v2.2) or override spec. */
static json_t *trainjob_pod_patch(const struct spec_view *v, const struct kube_render_ctx *rc)
{
    json_t *ps = json_object();
    json_t *m = mounts(v);
    if (json_array_size(m))
        json_object_set_new(ps, "containers",
                            json_pack("[{s:s,s:O}]", "name", "node", "volumeMounts", m));
    json_decref(m);
    pod_settings(ps, v, rc);
    return ps;
}

static json_t *trainjob_overrides(const struct spec_view *v, const struct kube_render_ctx *rc)
{
    json_t *ps = trainjob_pod_patch(v, rc);
    switch (rc->trainer_api) {
    case TRAINER_RUNTIME_PATCHES:
        return json_pack("[{s:s,s:{s:{s:{s:[{s:s,s:{s:{s:{s:o,s:o}}}}]}}}}]", "manager", MANAGER,
                         "trainingRuntimeSpec", "template", "spec", "replicatedJobs", "name",
                         "node", "template", "spec", "template", "metadata", pod_meta(v, rc),
                         "spec", ps);
    case TRAINER_TEMPLATE_OVERRIDES:
        return json_pack("[{s:[{s:s}],s:o,s:o}]", "targetJobs", "name", "node", "metadata",
                         pod_meta(v, rc), "spec", ps);
    case TRAINER_SPEC_OVERRIDES:
        json_object_set_new(ps, "targetJobs", json_pack("[{s:s}]", "name", "node"));
        return json_pack("[o]", ps);
    }
    return ps;
}

static const char *const override_field[] = {
    [TRAINER_RUNTIME_PATCHES] = "runtimePatches",
    [TRAINER_TEMPLATE_OVERRIDES] = "podTemplateOverrides",
    [TRAINER_SPEC_OVERRIDES] = "podSpecOverrides",
};

static json_t *render_trainjob(const struct spec_view *v, const struct kube_render_ctx *rc,
                               const char *name, const char *ns)
{
    const char *runtime = jsonx_str(v->kubernetes, "runtime");
    json_t *trainer = json_pack("{s:s,s:i,s:i,s:o,s:o}", "image", v->image ? v->image : "",
                                "numNodes", v->nodes, "numProcPerNode", v->procs_per_node, "env",
                                env_list(v, rc, name), "resourcesPerNode", resources(v));
    if (v->command)
        json_object_set(trainer, "command", v->command);
    if (v->args)
        json_object_set(trainer, "args", v->args);
    json_t *spec =
        json_pack("{s:{s:s,s:s,s:s},s:o,s:b}", "runtimeRef", "name",
                  runtime ? runtime : "torch-distributed", "apiGroup", "trainer.kubeflow.org",
                  "kind", "ClusterTrainingRuntime", "trainer", trainer, "suspend", 0);
    if (v->deadline_seconds && rc->trainer_api == TRAINER_RUNTIME_PATCHES)
        json_object_set_new(spec, "activeDeadlineSeconds", json_integer(v->deadline_seconds));
    if (rc->trainer_api == TRAINER_SPEC_OVERRIDES) { /* v2.0 labelled the objects it made */
        json_object_set_new(spec, "labels", base_labels(rc->job_id, v->name));
        json_object_set_new(spec, "annotations", annotations(v, true));
    }
    json_object_set_new(spec, override_field[rc->trainer_api], trainjob_overrides(v, rc));
    return json_pack("{s:s,s:s,s:{s:s,s:s,s:o,s:o},s:o}", "apiVersion",
                     "trainer.kubeflow.org/v1alpha1", "kind", "TrainJob", "metadata", "name", name,
                     "namespace", ns, "labels", object_labels(v, rc), "annotations",
                     annotations(v, false), "spec", spec);
}

static void merge_labels(json_t *meta, json_t *add)
{
    json_t *l = json_object_get(meta, "labels");
    if (!json_is_object(l)) {
        l = json_object();
        json_object_set_new(meta, "labels", l);
    }
    json_object_update(l, add);
}

/* A user's manifest, run as is: only the namespace (when absent) and trainyard labels on the
 * object and on each PyTorchJob pod template are added. */
static json_t *render_manifest(const struct spec_view *v, const struct kube_render_ctx *rc,
                               const json_t *manifest, const char *ns)
{
    json_t *obj = json_deep_copy(manifest);
    json_t *meta = json_object_get(obj, "metadata");
    json_object_set_new(meta, "namespace", json_string(ns));
    json_t *labels = object_labels(v, rc);
    merge_labels(meta, labels);
    json_t *base = base_labels(rc->job_id, v->name);
    const char *rt;
    json_t *rs;
    json_object_foreach(json_object_get(json_object_get(obj, "spec"), "pytorchReplicaSpecs"), rt,
                        rs)
    {
        json_t *tmpl = json_object_get(rs, "template");
        if (!json_is_object(tmpl))
            continue;
        if (!json_is_object(json_object_get(tmpl, "metadata")))
            json_object_set_new(tmpl, "metadata", json_object());
        merge_labels(json_object_get(tmpl, "metadata"), base);
    }
    json_decref(base);
    json_decref(labels);
    return obj;
}

/* Operators derive pod and Service names from the object's; they must stay DNS labels. */
static int check_name_length(const char *kind, const char *name, int nodes, struct err *err)
{
    char idx[16];
    snprintf(idx, sizeof(idx), "%d", nodes > 0 ? nodes - 1 : 0);
    size_t longest = strlen(name) + strlen(idx) +
                     (!strcmp(kind, "TrainJob") ? strlen("-node-0--xxxxx") : strlen("-worker-"));
    if (longest <= 63)
        return 0;
    return err_field(err, "/kubernetes/manifest/metadata/name",
                     "is too long: the %s's pod names (%zu characters) would exceed 63", kind,
                     longest);
}

json_t *kube_render(const struct spec_view *v, const struct kube_render_ctx *rc, struct err *err)
{
    char name[256];
    kube_render_name(v, rc->job_id, name, sizeof(name));
    const char *ns = kube_render_namespace(v, rc->namespace);
    const char *kind = kube_render_kind(v);
    if (check_name_length(kind, name, v->nodes, err) < 0)
        return NULL;
    const json_t *manifest = json_object_get(v->kubernetes, "manifest");
    if (manifest)
        return render_manifest(v, rc, manifest, ns);
    if (!v->image) {
        err_field(err, "/image", "is required by the kubernetes executor");
        return NULL;
    }
    if (!strcmp(kind, "TrainJob"))
        return render_trainjob(v, rc, name, ns);
    return render_pytorchjob(v, rc, name, ns);
}

json_t *kube_render_secret(const char *name, const char *ns, const char *job_id,
                           const char *job_name, const char *token)
{
    struct buf b64 = BUF_INIT;
    crypto_base64_encode(&b64, token, strlen(token));
    json_t *s = json_pack("{s:s,s:s,s:{s:s,s:s,s:o},s:s,s:{s:s}}", "apiVersion", "v1", "kind",
                          "Secret", "metadata", "name", name, "namespace", ns, "labels",
                          base_labels(job_id, job_name), "type", "Opaque", "data", KUBE_TOKEN_KEY,
                          buf_cstr(&b64));
    buf_release(&b64);
    return s;
}
