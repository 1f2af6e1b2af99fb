/*
 * bench_submit_cpu: the CPU one job submission costs, stage by stage, without HTTP or TCP:
 * parsing the body, validating it into the canonical spec, the submission record, the 201 body,
 * and the store's group commit (synchronous=FULL, batches of 64 as under load). Prints
 * microseconds per submission for each. Usage: bench_submit_cpu [N] (default 20000).
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "api/api.h"
#include "api/jobs.h"
#include "job/spec.h"
#include "core/buf.h"
#include "core/jsonx.h"
#include "core/parse.h"
#include "store/store.h"

static const char body[] =
    "{\"name\":\"bench-llama-finetune\",\"image\":\"nvcr.io/nvidia/pytorch:24.10-py3\","
    "\"command\":[\"torchrun\",\"--nnodes\",\"4\",\"--nproc-per-node\",\"8\",\"train.py\"],"
    "\"args\":[\"--model\",\"llama-3-8b\",\"--lr\",\"3e-5\",\"--batch-size\",\"16\",\"--epochs\","
    "\"3\",\"--bf16\"],\"env\":{\"NCCL_DEBUG\":\"WARN\",\"FI_PROVIDER\":\"efa\",\"HF_HOME\":"
    "\"/fsx/hf\",\"WANDB_PROJECT\":\"llama\"},\"nodes\":1,\"procs_per_node\":1,\"resources\":"
    "{\"gpus\":8,\"efa\":4,\"memory\":\"512Gi\",\"shm\":\"64Gi\"},\"placement\":{\"instance_type\":"
    "\"p5.48xlarge\",\"capacity_type\":\"on-demand\"},\"restart\":{\"policy\":\"on_failure\","
    "\"max_restarts\":3},\"deadline_seconds\":86400,\"labels\":{\"team\":\"nlp\",\"project\":"
    "\"llama\",\"owner\":\"alice\"},\"suspend\":true}";

static double cpu_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static struct api api;
static atomic_int committed;

static void done(void *ctx, struct submission *s, const struct jobs_submitted *r)
{
    (void)ctx;
    if (r->rc < 0) {
        fprintf(stderr, "insert failed: %s\n", r->err ? r->err->msg : "?");
        exit(1);
    }
    jobs_submission_free(s);
    atomic_fetch_add(&committed, 1);
}

static void setup(const char *path)
{
    struct store_options o = { .sync_full = true, .busy_timeout_ms = 1000, .max_batch = 64 };
    struct err err;
    err_init(&err);
    api.store = store_open(path, &o, &err);
    if (!api.store) {
        fprintf(stderr, "%s\n", err.msg);
        exit(1);
    }
    api.limits = (struct api_limits){ .spec = { .max_string_bytes = 65536,
                                                .max_ranks = 4096,
                                                .max_nodes = 1024,
                                                .max_procs_per_node = 64,
                                                .max_env = 1024,
                                                .max_labels = 64,
                                                .max_args = 1024 },
                                      .max_body_bytes = 1 << 20,
                                      .max_json_depth = 32 };
    api.default_executor = "local";
    api.local_enabled = true;
    api.local_gpus = 8; /* a GPU machine: the spec asks for 8 */
}

static struct submission *submission(const json_t *doc)
{
    struct jobs_submit_opts o = { .owner = "bench", .scope = SCOPE_ADMIN, .request_id = "req" };
    struct err err;
    err_init(&err);
    struct submission *s = jobs_submission_new(&api, doc, &o, &err);
    if (!s) {
        fprintf(stderr, "invalid: %s\n", err.msg);
        exit(1);
    }
    return s;
}

int main(int argc, char **argv)
{
    int n = 20000;
    if (argc > 1 && parse_int(argv[1], 64, 10000000, &n) < 0)
        return 2;
    char dir[] = "/tmp/bench-submit-cpu.XXXXXX", path[64];
    if (!mkdtemp(dir))
        return 1;
    snprintf(path, sizeof(path), "%s/t.db", dir);
    setup(path);
    struct spec_options so = { .limits = &api.limits.spec,
                               .default_executor = "local",
                               .local_enabled = true,
                               .local_gpus = 8 };
    double t0 = cpu_us();
    for (int i = 0; i < n; i++)
        json_decref(jsonx_loadb(body, sizeof(body) - 1, 32, NULL));
    double t1 = cpu_us();
    json_t *doc = jsonx_loadb(body, sizeof(body) - 1, 32, NULL);
    struct buf text = BUF_INIT;
    struct spec_view view;
    for (int i = 0; i < n; i++) {
        buf_reset(&text);
        spec_check(doc, &so, &text, &view, NULL);
    }
    buf_release(&text);
    double t2 = cpu_us();
    for (int i = 0; i < n; i++)
        jobs_submission_free(submission(doc));
    double t3 = cpu_us();
    struct submission *s = submission(doc);
    struct buf out = BUF_INIT;
    for (int i = 0; i < n; i++) {
        buf_reset(&out);
        jobs_submission_write(&out, s);
    }
    double t4 = cpu_us();
    printf("body %zu bytes, 201 body %zu bytes, %d submissions\n", sizeof(body) - 1, out.len, n);
    buf_release(&out);
    jobs_submission_free(s);
    struct submission **subs = malloc(sizeof(*subs) * (size_t)n);
    for (int i = 0; i < n; i++)
        subs[i] = submission(doc);
    double t5 = cpu_us();
    for (int i = 0; i < n; i++)
        jobs_submission_start(subs[i], done, NULL);
    while (atomic_load(&committed) < n)
        nanosleep(&(struct timespec){ .tv_nsec = 1000000 }, NULL);
    double t6 = cpu_us();
    printf("parse body (jsonx_loadb)    %6.1f us\n", (t1 - t0) / n);
    printf("validate, canonical text    %6.1f us\n", (t2 - t1) / n);
    printf("submission record (all)     %6.1f us (validate, canonical text, id, views; freed)\n",
           (t3 - t2) / n);
    printf("201 body (written as text)  %6.1f us\n", (t4 - t3) / n);
    printf("store: group commit         %6.1f us (batches of 64, synchronous=FULL)\n",
           (t6 - t5) / n);
    printf("total                       %6.1f us\n", (t1 - t0 + t3 - t2 + t4 - t3 + t6 - t5) / n);
    store_close(api.store);
    json_decref(doc);
    free(subs);
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    return system(cmd) == 0 ? 0 : 1;
}
