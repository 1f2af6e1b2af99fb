/*
 * trainjob: Kubeflow Trainer v2 as seen from the API: the TrainJob controller, and the JobSet
 * and Indexed Job controllers underneath it, collapsed into one reconciler. The runtime
 * (ClusterTrainingRuntime or TrainingRuntime) gives the pod template; spec.trainer overrides
 * the `node` container (image, command, args, env, resourcesPerNode) and numNodes. Pods are
 * named <job>-node-0-<index>-<5 random> with the jobset.sigs.k8s.io and batch.kubernetes.io
 * labels; their owner is the (unserved) Job <job>-node-0, whose uid gc.c can derive. Conditions
 * are Suspended/Complete/Failed only, with JobSet's reasons, as in Trainer v2.2+.
 * Not simulated: initializers, launcher (MPI), JobSet failure policy restarts, Kueue.
 */
#include "tests/kube/jobs.h"

#include "core/clock.h"
#include "core/crypto.h"
#include "core/jsonx.h"
#include "tests/kube/events.h"
#include "tests/kube/gc.h"
#include "tests/kube/store.h"
#include "tests/kube/world.h"

static const struct event_source src = { "trainjob-controller", NULL };

static const json_t *runtime_of(struct world *w, const json_t *job)
{
    const json_t *ref = kpath(job, "spec.runtimeRef");
    const char *kind = kstr(ref, "kind")[0] ? kstr(ref, "kind") : "ClusterTrainingRuntime";
    bool cluster = !strcmp(kind, "ClusterTrainingRuntime");
    const struct resource *res =
        resource_lookup("trainer.kubeflow.org", "v1alpha1",
                        cluster ? "clustertrainingruntimes" : "trainingruntimes");
    return store_get(w->store, res, kstr(kpath(job, "metadata"), "namespace"), kstr(ref, "name"));
}

/* The pod template of the runtime's `node` replicated job (borrowed), or NULL. */
static const json_t *node_template(const json_t *runtime)
{
    size_t i;
    json_t *rj;
    json_array_foreach (kpath(runtime, "spec.template.spec.replicatedJobs"), i, rj)
        if (!strcmp(kstr(rj, "name"), "node"))
            return kpath(rj, "template.spec.template");
    return NULL;
}

static int num_nodes(const json_t *job, const json_t *runtime)
{
    json_t *n = kpath(job, "spec.trainer.numNodes");
    if (json_is_integer(n))
        return (int)json_integer_value(n);
    return (int)jsonx_int(kpath(runtime, "spec.mlPolicy"), "numNodes", 1);
}

static void override_node(json_t *c, const json_t *job, int nnodes)
{
    const json_t *tr = kpath(job, "spec.trainer");
    const char *keys[] = { "image", "command", "args" };
    for (size_t i = 0; i < 3; i++)
        if (json_object_get(tr, keys[i]))
            json_object_set(c, keys[i], json_object_get(tr, keys[i]));
    if (json_object_get(tr, "resourcesPerNode"))
        json_object_set(c, "resources", json_object_get(tr, "resourcesPerNode"));
    size_t i;
    json_t *e;
    json_array_foreach (json_object_get(tr, "env"), i, e)
        jobs_set_env(c, kstr(e, "name"), kstr(e, "value"));
    const char *name = kstr(kpath(job, "metadata"), "name");
    char buf[300];
    snprintf(buf, sizeof(buf), "%d", nnodes);
    jobs_set_env(c, "PET_NNODES", buf);
    json_t *npn = json_object_get(tr, "numProcPerNode");
    if (json_is_integer(npn))
        snprintf(buf, sizeof(buf), "%lld", (long long)json_integer_value(npn));
    else
        snprintf(buf, sizeof(buf), "%s", json_is_string(npn) ? json_string_value(npn) : "auto");
    jobs_set_env(c, "PET_NPROC_PER_NODE", buf);
    json_array_append_new(json_object_get(c, "env"),
                          json_pack("{s:s, s:{s:{s:s}}}", "name", "PET_NODE_RANK", "valueFrom",
                                    "fieldRef", "fieldPath",
                                    "metadata.annotations['batch.kubernetes.io/"
                                    "job-completion-index']"));
    snprintf(buf, sizeof(buf), "%s-node-0-0.%s", name, name);
    jobs_set_env(c, "PET_MASTER_ADDR", buf);
    jobs_set_env(c, "PET_MASTER_PORT", "29500");
    json_object_set_new(c, "ports",
                        json_pack("[{s:i, s:s}]", "containerPort", 29500, "protocol", "TCP"));
}

static json_t *new_pod(struct world *w, const json_t *job, const json_t *tmpl_in, int index,
                       int nnodes)
{
    const json_t *m = json_object_get(job, "metadata");
    const char *name = kstr(m, "name");
    char jobname[300], pname[320], idx[16], rnd[6], juid[40], hostname[320];
    snprintf(jobname, sizeof(jobname), "%s-node-0", name);
    snprintf(idx, sizeof(idx), "%d", index);
    crypto_random_id(rnd, 5);
    snprintf(pname, sizeof(pname), "%s-%d-%s", jobname, index, rnd);
    snprintf(hostname, sizeof(hostname), "%s-%d", jobname, index);
    gc_child_uid(kstr(m, "uid"), jobname, juid);
    json_t *tmpl = json_deep_copy(tmpl_in);
    json_t *meta = kobj(tmpl, "metadata"), *spec = kobj(tmpl, "spec");
    json_t *labels = kobj(meta, "labels");
    json_t *add = json_pack(
        "{s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s}", "jobset.sigs.k8s.io/jobset-name",
        name, "jobset.sigs.k8s.io/replicatedjob-name", "node", "jobset.sigs.k8s.io/job-index", "0",
        "jobset.sigs.k8s.io/replicatedjob-replicas", "1", "jobset.sigs.k8s.io/restart-attempt", "0",
        "batch.kubernetes.io/job-completion-index", idx, "batch.kubernetes.io/job-name", jobname,
        "job-name", jobname, "batch.kubernetes.io/controller-uid", juid, "controller-uid", juid);
    json_object_update(labels, add);
    json_object_update(kobj(meta, "annotations"), add);
    json_decref(add);
    json_object_set_new(meta, "name", json_string(pname));
    json_object_set_new(meta, "namespace", json_string(kstr(m, "namespace")));
    /* Behind a real API server the JobSet and Job in between are not objects there, and its
     * garbage collector would delete a pod whose owner does not exist: the TrainJob owns it. */
    json_object_set_new(
        meta, "ownerReferences",
        w->remote
            ? json_pack("[{s:s, s:s, s:s, s:s, s:b, s:b}]", "apiVersion",
                        "trainer.kubeflow.org/v1alpha1", "kind", "TrainJob", "name", name, "uid",
                        kstr(m, "uid"), "controller", 1, "blockOwnerDeletion", 1)
            : json_pack("[{s:s, s:s, s:s, s:s, s:b, s:b}]", "apiVersion", "batch/v1", "kind", "Job",
                        "name", jobname, "uid", juid, "controller", 1, "blockOwnerDeletion", 1));
    jobs_copy_test_annotations(job, meta);
    json_object_set_new(spec, "hostname", json_string(hostname));
    json_object_set_new(spec, "subdomain", json_string(name));
    if (!json_object_get(spec, "restartPolicy"))
        json_object_set_new(spec, "restartPolicy", json_string("OnFailure"));
    size_t i;
    json_t *c;
    json_array_foreach (json_object_get(spec, "containers"), i, c)
        if (!strcmp(kstr(c, "name"), "node"))
            override_node(c, job, nnodes);
    return tmpl;
}

/* The pod currently holding index idx (not being deleted), or NULL. */
static const json_t *pod_at(json_t **pods, size_t n, int idx)
{
    char want[16];
    snprintf(want, sizeof(want), "%d", idx);
    for (size_t i = 0; i < n; i++)
        if (!strcmp(
                kstr(kpath(pods[i], "metadata.labels"), "batch.kubernetes.io/job-completion-index"),
                want) &&
            !kpath(pods[i], "metadata.deletionTimestamp"))
            return pods[i];
    return NULL;
}

static bool suspend(struct world *w, const json_t *job, json_t *status, json_t **pods, size_t n)
{
    json_int_t gen = jsonx_int(kpath(job, "metadata"), "generation", 1);
    if (!json_is_true(kpath(job, "spec.suspend"))) {
        if (jobs_condition_true(status, "Suspended"))
            jobs_condition(status, "Suspended", "False", "Resumed", "TrainJob is resumed", gen);
        return false;
    }
    for (size_t i = 0; i < n; i++)
        jobs_delete_pod(w, job, pods[i], &src);
    jobs_condition(status, "Suspended", "True", "Suspended", "TrainJob is suspended", gen);
    json_object_set_new(status, "jobsStatus",
                        json_pack("[{s:s, s:i, s:i, s:i, s:i, s:i}]", "name", "node", "ready", 0,
                                  "succeeded", 0, "failed", 0, "active", 0, "suspended", 1));
    return true;
}

struct tally {
    int active, ready, succeeded, failed, restarts;
};

/* Keeps one pod per index (the Indexed Job controller); counts what there is. */
static void sync_pods(struct world *w, const json_t *job, const json_t *tmpl, int nnodes,
                      json_t **pods, size_t n, struct tally *t)
{
    memset(t, 0, sizeof(*t));
    for (size_t i = 0; i < n; i++) {
        const char *phase = kstr(kpath(pods[i], "status"), "phase");
        t->restarts += jobs_restarts(pods[i]);
        if (!strcmp(phase, "Failed")) {
            t->failed++; /* a failed pod counts toward backoffLimit and is replaced */
            jobs_delete_pod(w, job, pods[i], &src);
        }
    }
    for (int idx = 0; idx < nnodes; idx++) {
        const json_t *pod = pod_at(pods, n, idx);
        const char *phase = pod ? kstr(kpath(pod, "status"), "phase") : "";
        if ((!pod || !strcmp(phase, "Failed")) && !jobs_may_create(w)) {
            t->active++;
        } else if (!pod || !strcmp(phase, "Failed")) {
            jobs_create_pod(w, job, new_pod(w, job, tmpl, idx, nnodes), &src);
            t->active++;
        } else if (!strcmp(phase, "Succeeded")) {
            t->succeeded++;
        } else {
            t->active++;
            t->ready += !strcmp(phase, "Running");
        }
    }
}

static int backoff_limit(const json_t *runtime)
{
    size_t i;
    json_t *rj;
    json_array_foreach (kpath(runtime, "spec.template.spec.replicatedJobs"), i, rj)
        if (!strcmp(kstr(rj, "name"), "node"))
            return (int)jsonx_int(kpath(rj, "template.spec"), "backoffLimit", 6);
    return 6;
}

static void reconcile_running(struct world *w, const json_t *job, const json_t *runtime,
                              json_t *status, json_t **pods, size_t n)
{
    json_int_t gen = jsonx_int(kpath(job, "metadata"), "generation", 1);
    const json_t *tmpl = node_template(runtime);
    int nnodes = num_nodes(job, runtime);
    struct tally t;
    sync_pods(w, job, tmpl, nnodes, pods, n, &t);
    bool failed = t.restarts + t.failed > backoff_limit(runtime);
    bool complete = !failed && t.succeeded == nnodes;
    if (failed) {
        for (size_t i = 0; i < n; i++)
            jobs_delete_pod(w, job, pods[i], &src);
        jobs_condition(status, "Failed", "True", "FailedJobs",
                       "jobset failed due to one or more job failures", gen);
    } else if (complete) {
        jobs_condition(status, "Complete", "True", "AllJobsCompleted",
                       "jobset completed successfully", gen);
    }
    json_object_set_new(status, "jobsStatus",
                        json_pack("[{s:s, s:i, s:i, s:i, s:i, s:i}]", "name", "node", "ready",
                                  !failed && !complete && t.ready == nnodes, "succeeded", complete,
                                  "failed", failed, "active", !failed && !complete, "suspended",
                                  0));
}

void trainjob_reconcile(struct world *w, const json_t *job, json_t **index)
{
    const json_t *m = json_object_get(job, "metadata");
    if (json_object_get(m, "deletionTimestamp"))
        return;
    const json_t *st = json_object_get(job, "status");
    if (jobs_condition_true(st, "Complete") || jobs_condition_true(st, "Failed"))
        return; /* finished: the Job controller leaves the pods as they are */
    const struct resource *res = resource_lookup("trainer.kubeflow.org", "v1alpha1", "trainjobs");
    json_t *status = json_deep_copy(st);
    if (!json_is_object(status)) {
        json_decref(status);
        status = json_object();
    }
    const json_t *runtime = runtime_of(w, job);
    if (!runtime || !node_template(runtime)) {
        events_emit(w, job, &src, "Warning", "TrainJobResourcesCreationFailed", NULL,
                    "TrainingRuntime %s not found or has no \"node\" replicated job",
                    kstr(kpath(job, "spec.runtimeRef"), "name"));
        json_decref(status);
        return;
    }
    size_t n;
    json_t **pods = jobs_pods(w, index, kstr(m, "namespace"), "jobset.sigs.k8s.io/jobset-name",
                              kstr(m, "name"), NULL, &n);
    if (!suspend(w, job, status, pods, n))
        reconcile_running(w, job, runtime, status, pods, n);
    store_list_free(pods, n);
    jobs_write_status(w, res, store_get(w->store, res, kstr(m, "namespace"), kstr(m, "name")),
                      status);
}
