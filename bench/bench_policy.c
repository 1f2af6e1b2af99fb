/*
 * bench_policy: the CPU the cluster policy adds to one Kubernetes submission by a non-admin
 * token (api/policy.h): reading the token's policy from the store and checking a native spec,
 * and the same for a PyTorchJob manifest (two pod templates, each with the settings a GPU/EFA
 * job carries), next to spec_check() of the same documents for scale; and the rules alone, the
 * grants already in memory (the rest is the store read and parsing the grants). Prints
 * microseconds per check. Usage: bench_policy [N] (default 20000).
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "api/api.h"
#include "api/policy.h"
#include "api/policy_grants.h"
#include "core/clock.h"
#include "core/jsonx.h"
#include "core/parse.h"
#include "job/spec.h"
#include "store/policies.h"
#include "store/store.h"
#include "store/tokens.h"

static const char native[] =
    "{\"name\":\"bench-llama-finetune\",\"image\":\"nvcr.io/nvidia/pytorch:24.10-py3\","
    "\"executor\":\"kubernetes\",\"command\":[\"torchrun\",\"train.py\"],\"args\":[\"--model\","
    "\"llama-3-8b\",\"--bf16\"],\"env\":{\"NCCL_DEBUG\":\"WARN\",\"FI_PROVIDER\":\"efa\"},"
    "\"nodes\":4,\"procs_per_node\":8,\"resources\":{\"gpus\":8,\"efa\":4,\"memory\":\"512Gi\","
    "\"shm\":\"64Gi\"},\"placement\":{\"instance_type\":\"p5.48xlarge\",\"capacity_type\":"
    "\"on-demand\"},\"checkpoint\":{\"volume_claim\":\"team-a-ckpt\",\"path\":\"/ckpt\"},"
    "\"kubernetes\":{\"namespace\":\"team-a\",\"service_account\":\"trainer\"}}";

/* One replica's pod template, as a user's manifest carries it. */
#define TEMPLATE                                                                                   \
    "{\"replicas\":%d,\"restartPolicy\":\"OnFailure\",\"template\":{\"metadata\":{\"labels\":{"    \
    "\"team\":\"a\"},\"annotations\":{\"note\":\"x\"}},\"spec\":{\"serviceAccountName\":"          \
    "\"trainer\",\"nodeSelector\":{\"node.kubernetes.io/instance-type\":\"p5.48xlarge\"},"         \
    "\"tolerations\":[{\"key\":\"nvidia.com/gpu\",\"operator\":\"Exists\"}],\"volumes\":[{"        \
    "\"name\":\"dshm\",\"emptyDir\":{\"medium\":\"Memory\",\"sizeLimit\":\"64Gi\"}},{\"name\":"    \
    "\"ckpt\",\"persistentVolumeClaim\":{\"claimName\":\"team-a-ckpt\"}}],\"containers\":[{"       \
    "\"name\":\"pytorch\",\"image\":\"nvcr.io/nvidia/pytorch:24.10-py3\",\"command\":["            \
    "\"torchrun\",\"train.py\"],\"env\":[{\"name\":\"NCCL_DEBUG\",\"value\":\"WARN\"},{\"name\":"  \
    "\"FI_PROVIDER\",\"value\":\"efa\"}],\"resources\":{\"limits\":{\"nvidia.com/gpu\":8,"         \
    "\"vpc.amazonaws.com/efa\":4,\"memory\":\"512Gi\"}},\"securityContext\":{\"capabilities\":{"   \
    "\"add\":[\"IPC_LOCK\"]}},\"volumeMounts\":[{\"name\":\"dshm\",\"mountPath\":\"/dev/shm\"},{"  \
    "\"name\":\"ckpt\",\"mountPath\":\"/ckpt\"}]}]}}}"

static double cpu_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static struct api api;
static struct spec_limits limits = { .max_string_bytes = 65536,
                                     .max_ranks = 4096,
                                     .max_nodes = 1024,
                                     .max_procs_per_node = 64,
                                     .max_env = 1024,
                                     .max_labels = 64,
                                     .max_args = 1024 };

/* A store with a submit token governed by a policy that grants what the documents use. */
static void setup(const char *path)
{
    struct store_options o = { .busy_timeout_ms = 1000, .max_batch = 64 };
    struct err err;
    err_init(&err);
    api.store = store_open(path, &o, &err);
    struct token_new t = {
        .id = "tok_bench", .name = "ci", .hash = "h", .scope = "submit", .now = clock_now_ns()
    };
    const char *tokens[] = { "tok_bench" };
    struct policy_put p = {
        .name = "team-a",
        .grants = "{\"namespaces\":[\"team-a\"],\"service_accounts\":[\"trainer\"],"
                  "\"volume_claims\":[\"team-a-*\"],\"image_registries\":[\"nvcr.io/nvidia\"],"
                  "\"node_selectors\":{\"node.kubernetes.io/instance-type\":[\"p5.48xlarge\"],"
                  "\"karpenter.sh/capacity-type\":[\"*\"]}}",
        .tokens = tokens,
        .ntokens = 1,
        .now = clock_now_ns()
    };
    if (!api.store || store_token_insert(api.store, &t, &err) < 0 ||
        store_policy_put(api.store, &p, &err) < 0) {
        fprintf(stderr, "setup: %s\n", err.msg);
        exit(1);
    }
    api.cluster = (struct api_cluster){ .jobs_namespace = "default",
                                        .namespace = "trainyard",
                                        .service_accounts = "trainyard",
                                        .volume_claims = "trainyard-data" };
}

/* Microseconds per spec_check and per policy_check of doc. */
static void measure(const char *what, const json_t *doc, const char *at, int n)
{
    struct spec_options so = { .limits = &limits,
                               .default_executor = "kubernetes",
                               .kubernetes_enabled = true };
    struct buf text = BUF_INIT;
    struct spec_view v;
    struct err err;
    err_init(&err);
    double t0 = cpu_us();
    for (int i = 0; i < n; i++) {
        buf_reset(&text);
        if (spec_check(doc, &so, &text, &v, &err) < 0) {
            fprintf(stderr, "%s: invalid: %s\n", what, err.msg);
            exit(1);
        }
    }
    double t1 = cpu_us();
    struct policy_request who = { .scope = SCOPE_SUBMIT,
                                  .token_id = "tok_bench",
                                  .manifest_at = at };
    for (int i = 0; i < n; i++)
        if (policy_check(&api, &who, &v, &err) < 0) {
            fprintf(stderr, "%s: refused: %s\n", what, err.msg);
            exit(1);
        }
    double t2 = cpu_us();
    struct policy_def *def = store_policy_for_token(api.store, "tok_bench", &err);
    json_t *grants = json_loads(def->grants, 0, NULL);
    struct policy_grants g = { .name = def->name, .doc = grants, .cluster = &api.cluster };
    for (int i = 0; i < n; i++)
        policy_kube_check(&g, &v, at ? at : "/kubernetes/manifest", &err);
    double t3 = cpu_us();
    printf("%-40s spec_check %5.2f us   policy_check %5.2f us, of which the rules %5.2f us\n", what,
           (t1 - t0) / n, (t2 - t1) / n, (t3 - t2) / n);
    json_decref(grants);
    policy_def_free(def);
    buf_release(&text);
}

int main(int argc, char **argv)
{
    int n = 20000;
    if (argc > 1 && parse_int(argv[1], 64, 10000000, &n) < 0)
        return 2;
    char dir[] = "/tmp/bench-policy.XXXXXX", path[64];
    if (!mkdtemp(dir))
        return 1;
    snprintf(path, sizeof(path), "%s/t.db", dir);
    setup(path);
    json_t *spec = jsonx_loadb(native, sizeof(native) - 1, 32, NULL);
    char text[8192];
    snprintf(text, sizeof(text),
             "{\"name\":\"llama\",\"executor\":\"kubernetes\",\"kubernetes\":{\"namespace\":"
             "\"team-a\",\"manifest\":{\"apiVersion\":\"kubeflow.org/v1\",\"kind\":\"PyTorchJob\","
             "\"metadata\":{\"name\":\"llama\",\"namespace\":\"team-a\"},\"spec\":{"
             "\"nprocPerNode\":\"8\",\"pytorchReplicaSpecs\":{\"Master\":" TEMPLATE
             ",\"Worker\":" TEMPLATE "}}}}}",
             1, 3);
    json_t *manifest = jsonx_loadb(text, strlen(text), 32, NULL);
    if (!spec || !manifest)
        return 1;
    printf("bench_policy: %d checks each, CPU time per check\n", n);
    measure("native spec (namespace, account, claim)", spec, NULL, n);
    measure("PyTorchJob manifest (2 pod templates)", manifest, "", n);
    json_decref(spec);
    json_decref(manifest);
    store_close(api.store);
    char cmd[96];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    return system(cmd) == 0 ? 0 : 1;
}
