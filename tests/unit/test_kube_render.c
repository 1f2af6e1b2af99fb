/*
 * kube render: the objects a spec becomes, field by field as the Training Operator v1 and the
 * Trainer v2 (in each of its three forms of pod settings) read them.
 */
#include "tests/unit/check.h"

#include "job/spec.h"
#include "core/jsonx.h"
#include "server/kube/render.h"

static struct spec_limits limits = { .max_string_bytes = 65536,
                                     .max_ranks = 4096,
                                     .max_nodes = 1024,
                                     .max_procs_per_node = 64,
                                     .max_env = 256,
                                     .max_labels = 64,
                                     .max_args = 4096 };

static json_t *canonical(const char *text)
{
    struct spec_options o = { .limits = &limits,
                              .default_executor = "kubernetes",
                              .kubernetes_enabled = true,
                              .local_enabled = true };
    json_t *in = json_loads(text, 0, NULL);
    struct err err;
    err_init(&err);
    json_t *spec = spec_validate(in, &o, &err);
    if (!spec)
        fprintf(stderr, "spec: %s\n", err.msg);
    err_release(&err);
    json_decref(in);
    return spec;
}

/* The value at a '/'-separated path (array indexes as numbers), or NULL. */
static json_t *at(json_t *v, const char *path)
{
    char key[128];
    while (v && *path) {
        size_t n = strcspn(path, "/");
        snprintf(key, sizeof(key), "%.*s", (int)n, path);
        char *end;
        long i = strtol(key, &end, 10);
        v = json_is_array(v) && *end == '\0' ? json_array_get(v, (size_t)i)
                                             : json_object_get(v, key);
        path += n + (path[n] == '/');
    }
    return v;
}

static const char *str(json_t *v, const char *path)
{
    return json_string_value(at(v, path));
}

static json_t *render(const char *spec_text, enum kube_trainer_api api)
{
    json_t *spec = canonical(spec_text);
    struct spec_view v;
    spec_view(spec, &v);
    const char *avoid[] = { "bad-node-1", NULL }, *suspect[] = { "suspect-node-1", NULL };
    struct kube_render_ctx rc = { .job_id = "abc123",
                                  .namespace = "ml",
                                  .attempt = 2,
                                  .url = "https://ty.example",
                                  .with_token = true,
                                  .trainer_api = api,
                                  .avoid_nodes = avoid,
                                  .prefer_not_nodes = suspect };
    struct err err;
    err_init(&err);
    json_t *o = kube_render(&v, &rc, &err);
    if (!o)
        fprintf(stderr, "render: %s\n", err.msg);
    err_release(&err);
    json_decref(spec);
    return o;
}

static const char *env_value(json_t *envs, const char *name)
{
    size_t i;
    json_t *e;
    json_array_foreach(envs, i,
                       e) if (!strcmp(jsonx_str(e, "name"), name)) return jsonx_str(e, "value");
    return NULL;
}

static void pytorchjob(void)
{
    json_t *o = render("{\"name\":\"big\",\"image\":\"img:1\",\"nodes\":4,\"procs_per_node\":8,"
                       "\"resources\":{\"gpus\":8,\"efa\":32,\"shm\":\"32Gi\"},"
                       "\"restart\":{\"policy\":\"exit_code\",\"max_restarts\":5},"
                       "\"placement\":{\"avoid_nodes\":[\"n7\"]},\"env\":{\"A\":\"1\"}}",
                       TRAINER_RUNTIME_PATCHES);
    CHECK_STR(str(o, "metadata/name"), "ty-abc123");
    CHECK_STR(str(o, "metadata/namespace"), "ml");
    CHECK_STR(jsonx_str(at(o, "metadata/labels"), "trainyard.io/job-id"), "abc123");
    CHECK_STR(str(o, "spec/nprocPerNode"), "8");
    CHECK_INT(json_integer_value(at(o, "spec/runPolicy/backoffLimit")), 5);
    CHECK_STR(str(o, "spec/pytorchReplicaSpecs/Worker/restartPolicy"), "ExitCode");
    CHECK_INT(json_integer_value(at(o, "spec/pytorchReplicaSpecs/Master/replicas")), 1);
    CHECK_INT(json_integer_value(at(o, "spec/pytorchReplicaSpecs/Worker/replicas")), 3);
    json_t *c = at(o, "spec/pytorchReplicaSpecs/Worker/template/spec/containers/0");
    CHECK_STR(jsonx_str(c, "name"), "pytorch");
    CHECK_STR(jsonx_str(at(c, "resources/limits"), "vpc.amazonaws.com/efa"), "32");
    CHECK_STR(env_value(at(c, "env"), "TRAINYARD_ATTEMPT"), "2");
    CHECK_STR(env_value(at(c, "env"), "TRAINYARD_URL"), "https://ty.example");
    CHECK_STR(env_value(at(c, "env"), "A"), "1");
    json_t *aff = at(o, "spec/pytorchReplicaSpecs/Master/template/spec/affinity/nodeAffinity/"
                        "requiredDuringSchedulingIgnoredDuringExecution/nodeSelectorTerms/0/"
                        "matchExpressions/0/values");
    CHECK_INT(json_array_size(aff), 2); /* the spec's and the marked node */
    CHECK_STR(json_string_value(json_array_get(aff, 1)), "bad-node-1");
    /* a suspect node only while others fit: preferred, not required */
    json_t *pref = at(o, "spec/pytorchReplicaSpecs/Worker/template/spec/affinity/nodeAffinity/"
                         "preferredDuringSchedulingIgnoredDuringExecution/0");
    CHECK_INT(json_integer_value(json_object_get(pref, "weight")), 100);
    json_t *expr =
        json_array_get(json_object_get(json_object_get(pref, "preference"), "matchExpressions"), 0);
    CHECK_STR(jsonx_str(expr, "operator"), "NotIn");
    CHECK_STR(json_string_value(json_array_get(json_object_get(expr, "values"), 0)),
              "suspect-node-1");
    json_decref(o);
    o = render("{\"name\":\"one\",\"image\":\"i\"}", TRAINER_RUNTIME_PATCHES);
    CHECK(at(o, "spec/pytorchReplicaSpecs/Worker") == NULL); /* one node: a Master alone */
    CHECK_STR(str(o, "spec/pytorchReplicaSpecs/Master/restartPolicy"), "Never");
    CHECK_INT(json_integer_value(at(o, "spec/runPolicy/backoffLimit")), 0);
    CHECK(at(o, "spec/pytorchReplicaSpecs/Master/template/spec/affinity") != NULL);
    json_decref(o);
}

static void trainjob_forms(void)
{
    const char *spec = "{\"name\":\"t\",\"image\":\"i\",\"nodes\":2,\"deadline_seconds\":60,"
                       "\"resources\":{\"shm\":\"1Gi\"},\"kubernetes\":{\"kind\":\"TrainJob\","
                       "\"runtime\":\"torch-distributed\",\"service_account\":\"sa\"}}";
    json_t *o = render(spec, TRAINER_RUNTIME_PATCHES);
    CHECK_STR(str(o, "apiVersion"), "trainer.kubeflow.org/v1alpha1");
    CHECK_STR(str(o, "spec/runtimeRef/name"), "torch-distributed");
    CHECK_INT(json_integer_value(at(o, "spec/trainer/numNodes")), 2);
    CHECK_INT(json_integer_value(at(o, "spec/activeDeadlineSeconds")), 60);
    json_t *pod = at(o, "spec/runtimePatches/0/trainingRuntimeSpec/template/spec/replicatedJobs/0/"
                        "template/spec/template");
    CHECK_STR(str(pod, "spec/serviceAccountName"), "sa");
    CHECK_STR(str(pod, "spec/containers/0/name"), "node");
    CHECK(at(pod, "spec/containers/0/env") == NULL); /* env goes to trainer.env in v2.2 */
    CHECK_STR(jsonx_str(at(pod, "metadata/labels"), "trainyard.io/job-id"), "abc123");
    json_decref(o);
    o = render(spec, TRAINER_TEMPLATE_OVERRIDES);
    CHECK(at(o, "spec/runtimePatches") == NULL);
    CHECK(at(o, "spec/activeDeadlineSeconds") == NULL); /* only since v2.2 */
    CHECK_STR(str(o, "spec/podTemplateOverrides/0/targetJobs/0/name"), "node");
    CHECK_STR(str(o, "spec/podTemplateOverrides/0/spec/serviceAccountName"), "sa");
    json_decref(o);
    o = render(spec, TRAINER_SPEC_OVERRIDES);
    CHECK_STR(str(o, "spec/podSpecOverrides/0/targetJobs/0/name"), "node");
    CHECK_STR(str(o, "spec/podSpecOverrides/0/serviceAccountName"), "sa");
    CHECK_STR(jsonx_str(at(o, "spec/labels"), "trainyard.io/job-id"), "abc123");
    json_decref(o);
}

static void manifests(void)
{
    json_t *o = render("{\"name\":\"m\",\"executor\":\"kubernetes\",\"kubernetes\":{\"manifest\":"
                       "{\"apiVersion\":\"kubeflow.org/v1\",\"kind\":\"PyTorchJob\",\"metadata\":"
                       "{\"name\":\"mine\",\"labels\":{\"a\":\"b\"}},\"spec\":{"
                       "\"pytorchReplicaSpecs\":{\"Worker\":{\"template\":{\"spec\":{}}}}}}}}",
                       TRAINER_RUNTIME_PATCHES);
    CHECK_STR(str(o, "metadata/name"), "mine");
    CHECK_STR(str(o, "metadata/namespace"), "ml");
    CHECK_STR(str(o, "metadata/labels/a"), "b");
    CHECK_STR(jsonx_str(at(o, "metadata/labels"), "trainyard.io/job-id"), "abc123");
    CHECK_STR(jsonx_str(at(o, "spec/pytorchReplicaSpecs/Worker/template/metadata/labels"),
                        "trainyard.io/job-id"),
              "abc123");
    json_decref(o);
    json_t *spec = canonical("{\"name\":\"m\",\"nodes\":100,\"kubernetes\":{\"manifest\":{"
                             "\"apiVersion\":\"kubeflow.org/v1\",\"kind\":\"PyTorchJob\","
                             "\"metadata\":{\"name\":\"a-very-long-name-that-leaves-no-room-for-"
                             "the-suffix-of-pods\"}}}}");
    struct spec_view v;
    spec_view(spec, &v);
    struct kube_render_ctx rc = { .job_id = "x", .namespace = "ml" };
    struct err err;
    err_init(&err);
    CHECK(kube_render(&v, &rc, &err) == NULL);
    CHECK(err.nfields == 1 && strstr(err.fields[0].message, "would exceed 63") != NULL);
    err_release(&err);
    json_decref(spec);
}

/* The volume named name in a pod spec, and where the first container mounts it ("" if not). */
static json_t *volume(json_t *pod_spec, const char *name, const char **mount_path)
{
    size_t i;
    json_t *e, *found = NULL;
    json_array_foreach(json_object_get(pod_spec, "volumes"), i,
                       e) if (!strcmp(jsonx_str(e, "name"), name)) found = e;
    *mount_path = "";
    json_array_foreach(at(pod_spec, "containers/0/volumeMounts"), i,
                       e) if (!strcmp(jsonx_str(e, "name"), name)) *mount_path =
        jsonx_str(e, "mountPath");
    return found;
}

/* Every pod has its checkpoint directory before the ranks start, mounted where
 * TRAINYARD_CHECKPOINT_DIR says: the claim when given (at checkpoint.path, else /checkpoints),
 * else an emptyDir (writable by any user), with or without checkpoint.path. */
static void checkpoint_dir(void)
{
    static const struct {
        const char *checkpoint, *dir, *claim;
    } cases[] = {
        { "", "/checkpoints", NULL },
        { ",\"checkpoint\":{\"path\":\"/mnt/ck\"}", "/mnt/ck", NULL },
        { ",\"checkpoint\":{\"volume_claim\":\"ckpt\"}", "/checkpoints", "ckpt" },
        { ",\"checkpoint\":{\"volume_claim\":\"ckpt\",\"path\":\"/ck\"}", "/ck", "ckpt" },
    };
    for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
        char spec[256];
        snprintf(spec, sizeof(spec), "{\"name\":\"c\",\"image\":\"i\",\"nodes\":2%s}",
                 cases[k].checkpoint);
        json_t *o = render(spec, TRAINER_RUNTIME_PATCHES);
        for (int r = 0; r < 2; r++) {
            json_t *ps = at(o, r ? "spec/pytorchReplicaSpecs/Worker/template/spec"
                                 : "spec/pytorchReplicaSpecs/Master/template/spec");
            const char *mount;
            json_t *vol = volume(ps, "checkpoint", &mount);
            CHECK_STR(mount, cases[k].dir);
            CHECK_STR(env_value(at(ps, "containers/0/env"), "TRAINYARD_CHECKPOINT_DIR"),
                      cases[k].dir);
            if (cases[k].claim)
                CHECK_STR(str(vol, "persistentVolumeClaim/claimName"), cases[k].claim);
            else
                CHECK(json_is_object(json_object_get(vol, "emptyDir")));
        }
        json_decref(o);
    }
    /* A TrainJob: the volume and mount in the pod settings, the variable in trainer.env. */
    json_t *o = render("{\"name\":\"t\",\"image\":\"i\",\"kubernetes\":{\"kind\":\"TrainJob\"}}",
                       TRAINER_TEMPLATE_OVERRIDES);
    json_t *ps = at(o, "spec/podTemplateOverrides/0/spec");
    const char *mount;
    CHECK(json_is_object(json_object_get(volume(ps, "checkpoint", &mount), "emptyDir")));
    CHECK_STR(mount, "/checkpoints");
    CHECK_STR(env_value(at(o, "spec/trainer/env"), "TRAINYARD_CHECKPOINT_DIR"), "/checkpoints");
    json_decref(o);
}

static void secret(void)
{
    char name[64], path[128];
    kube_render_secret_name("ty-abc", name, sizeof(name));
    CHECK_STR(name, "ty-abc-token");
    json_t *s = kube_render_secret(name, "ml", "abc", "job", "s3cr3t");
    CHECK_STR(str(s, "data/token"), "czNjcjN0");
    CHECK_STR(jsonx_str(at(s, "metadata/labels"), "trainyard.io/job-id"), "abc");
    json_decref(s);
    kube_render_path("TrainJob", "ml", path, sizeof(path));
    CHECK_STR(path, "/apis/trainer.kubeflow.org/v1alpha1/namespaces/ml/trainjobs");
}

int main(void)
{
    pytorchjob();
    trainjob_forms();
    manifests();
    checkpoint_dir();
    secret();
    return check_done();
}
