/* Unit tests of server/diag/patterns + classify: every row of the pattern table is matched by
 * its own example line (and no earlier row), ordinary training and NCCL output matches nothing,
 * details and numbers are extracted, summary templates render. */
#include "tests/unit/check.h"

#include <stdlib.h>

#include "server/diag/classify.h"
#include "server/diag/patterns.h"

/* Classifies an exact-size heap copy of line: nothing may read past it (ASan checks). */
static const struct diag_pattern *hit(const char *line, size_t *at)
{
    size_t dummy, n = strlen(line);
    char *copy = malloc(n ? n : 1);
    memcpy(copy, line, n);
    const struct diag_pattern *p = classify_line(copy, n, at ? at : &dummy);
    free(copy);
    return p;
}

static const char *hit_id(const char *line)
{
    const struct diag_pattern *p = hit(line, NULL);
    return p ? p->id : "(none)";
}

/* The table's own contract: each example is classified by its row. */
static void test_table_examples(void)
{
    size_t n;
    const struct diag_pattern *t = patterns_table(&n);
    CHECK(n > 60);
    for (size_t i = 0; i < n; i++) {
        CHECK(t[i].id && t[i].anchor && strlen(t[i].anchor) >= 4);
        CHECK(t[i].example != NULL);
        if (!t[i].example)
            continue;
        const char *got = hit_id(t[i].example);
        if (strcmp(got, t[i].id) != 0)
            fprintf(stderr, "row %s: example classified as %s\n", t[i].id, got);
        CHECK_STR(got, t[i].id);
        for (size_t j = 0; j < i; j++)
            CHECK(strcmp(t[i].id, t[j].id) != 0); /* ids are unique */
        if (!(t[i].flags & (PAT_TRACEBACK | PAT_TORCHRUN)))
            CHECK(t[i].kind != DIAG_KIND_NONE);
    }
}

/* Every kind of failure the issue names has at least one row (or comes from endings). */
static void test_kinds_covered(void)
{
    size_t n;
    const struct diag_pattern *t = patterns_table(&n);
    enum diag_kind from_logs[] = {
        DIAG_CUDA_OOM, DIAG_HOST_OOM,   DIAG_NCCL_ERROR, DIAG_NCCL_TIMEOUT, DIAG_XID,
        DIAG_ECC,      DIAG_CUDA_ERROR, DIAG_ASSERTION,  DIAG_SEGFAULT,     DIAG_BUS_ERROR,
        DIAG_NAN_LOSS, DIAG_DISK_FULL,  DIAG_RENDEZVOUS, DIAG_PREEMPTION,   DIAG_NODE_LOST,
        DIAG_DEADLINE, DIAG_KILLED,     DIAG_TERMINATED, DIAG_EXIT
    };
    for (size_t k = 0; k < sizeof(from_logs) / sizeof(from_logs[0]); k++) {
        bool found = false;
        for (size_t i = 0; i < n; i++)
            found = found || t[i].kind == from_logs[k];
        CHECK(found);
    }
    for (int k = 0; k < DIAG_KIND_COUNT; k++) {
        const struct diag_kind_info *ki = kinds_info((enum diag_kind)k);
        CHECK(ki->name && ki->reason && ki->summary);
        CHECK_INT(kinds_parse(ki->name), k);
        CHECK(ki->retry != DIAG_RETRY_KIND);
    }
    CHECK_INT(kinds_parse("no_such_kind"), DIAG_KIND_NONE);
    CHECK_STR(kinds_info(DIAG_CUDA_OOM)->name, "cuda_oom");
    CHECK_INT(kinds_retry_of(DIAG_CUDA_OOM, DIAG_RETRY_KIND), DIAG_DETERMINISTIC);
    CHECK_INT(kinds_retry_of(DIAG_PREEMPTION, DIAG_RETRY_KIND), DIAG_RETRYABLE);
    CHECK_INT(kinds_retry_of(DIAG_NCCL_TIMEOUT, DIAG_RETRY_KIND), DIAG_RETRYABLE);
    CHECK_INT(kinds_retry_of(DIAG_PYTHON_EXCEPTION, DIAG_RETRY_KIND), DIAG_DETERMINISTIC);
    CHECK_INT(kinds_retry_of(DIAG_CUDA_OOM, DIAG_RETRYABLE), DIAG_RETRYABLE);
}

/* Output of healthy jobs: none of it is a finding. */
static void test_ordinary_lines(void)
{
    static const char *const lines[] = {
        "ip-10-0-1-7:4242:4242 [0] NCCL INFO Bootstrap : Using eth0:10.0.1.7<0>",
        "ip-10-0-1-7:4242:4242 [0] NCCL INFO cudaDriverVersion 12040",
        "ip-10-0-1-7:4242:4310 [0] NCCL INFO Channel 00/32 :    0   1   2   3   4   5   6   7",
        "ip-10-0-1-7:4242:4310 [0] NCCL INFO Channel 01/0 : 0[0] -> 1[1] via P2P/CUMEM/read",
        "ip-10-0-1-7:4242:4310 [0] NCCL INFO comm 0x55d0c8a0 rank 0 nRanks 16 nNodes 2 "
        "localRanks 8 localRank 0 MNNVL 0",
        "ip-10-0-1-7:4242:4310 [0] NCCL INFO ncclCommInitRank comm 0x55d0c8a0 rank 0 nranks 16 "
        "cudaDev 0 nvmlDev 0 busId 53000 commId 0x4b2e1f - Init COMPLETE",
        "ip-10-0-1-7:4242:4310 [0] NCCL INFO NET/OFI Selected Provider is efa (found 4 nics)",
        "{'loss': 2.3456, 'grad_norm': 1.234, 'learning_rate': 4.9e-05, 'epoch': 0.12}",
        " 45%|████▌     | 450/1000 [01:23<01:40,  5.43it/s]",
        " iteration      100/  500000 | consumed samples:        51200 | elapsed time per "
        "iteration (ms): 1234.5 | learning rate: 1.500000E-04 | lm loss: 7.123456E+00 | loss "
        "scale: 1.0 | grad norm: 1.234 | number of skipped iterations:   0 | number of nan "
        "iterations:   0 |",
        "[2024-05-01 12:00:00,123] [INFO] [logging.py:96:log_dist] [Rank 0] step=10, "
        "skipped=0, lr=[0.0001], mom=[(0.9, 0.999)]",
        "step=100 loss=2.3 lr=1e-4 tokens_per_sec=12000",
        "Saving model checkpoint to /checkpoints/step_4000",
        "/usr/lib/python3/site-packages/torch/utils/data/dataloader.py:558: UserWarning: This "
        "DataLoader will create 16 worker processes in total.",
        "W0501 11:59:00.000000 140211 torch/distributed/run.py:779] Setting OMP_NUM_THREADS "
        "environment variable for each process to be 1 in default",
        "INFO:root:evaluation accuracy 0.8123 at step 4000",
        "Epoch 3/10: training loss decreased from 2.31 to 2.29",
        "loss is 2.31 at step 100",
        "Killed 3 stale processes before start",
        "GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-5d1c1a4e-2f3b-4a1c-9d8e-000000000000)",
        "wandb: Run history: loss ▇▆▅▄▃▂▁",
        "",
        "abc",
    };
    for (size_t i = 0; i < sizeof(lines) / sizeof(lines[0]); i++) {
        const char *got = hit_id(lines[i]);
        if (strcmp(got, "(none)") != 0)
            fprintf(stderr, "ordinary line matched %s: %s\n", got, lines[i]);
        CHECK_STR(got, "(none)");
    }
}

static void test_precedence_and_case(void)
{
    /* Specific beats generic wherever the generic anchor sits. */
    CHECK_STR(hit_id("RuntimeError: CUDA error: out of memory"), "cuda_oom_runtime");
    CHECK_STR(hit_id("RuntimeError: CUDA error: an illegal memory access was encountered"),
              "cuda_illegal_address");
    CHECK_STR(hit_id("x [3] NCCL WARN Cuda failure 'out of memory'"), "cuda_oom_nccl");
    CHECK_STR(hit_id("RuntimeError: DataLoader worker (pid 7) is killed by signal: Bus error."),
              "dataloader_bus_error");
    /* Case-insensitive rows. */
    CHECK_STR(hit_id("[1.2] Out of memory: Killed process 99 (python) total-vm:1kB"), "oom_killer");
    CHECK_STR(hit_id("LOSS IS NAN"), "nan_loss_text");
    CHECK_STR(hit_id("RuntimeError: NCCL error in: x.cpp:1, unhandled system error"), "nccl_error");
    /* Whole-line rows do not fire inside other text. */
    CHECK_STR(hit_id("   Killed   "), "shell_killed");
    CHECK_STR(hit_id("Killed by the user"), "(none)");
    /* Only the first CLASSIFY_SCAN_MAX bytes are looked at. */
    char big[CLASSIFY_SCAN_MAX + 64];
    memset(big, 'x', sizeof(big));
    memcpy(big + CLASSIFY_SCAN_MAX + 8, "SIGSEGV", 7);
    CHECK(classify_line(big, sizeof(big), NULL) == NULL);
    memcpy(big + 100, "SIGSEGV", 7);
    CHECK(classify_line(big, sizeof(big), NULL) != NULL);
    /* Lines are byte strings: no NUL terminator needed, NUL bytes harmless. */
    const char raw[] = "abc\0SIGSEGV received";
    CHECK_STR(classify_line(raw, sizeof(raw) - 1, NULL)->id, "sigsegv");
    CHECK(classify_line("SIGSEGV", 6, NULL) == NULL);
}

static void detail_of(const char *line, char *out, size_t cap, long *num, bool *has)
{
    size_t at;
    const struct diag_pattern *p = hit(line, &at);
    out[0] = '\0';
    *has = false;
    if (!p)
        return;
    classify_detail(p, line, strlen(line), at, out, cap);
    *has = classify_num(p, line, strlen(line), at, num);
}

static void test_details(void)
{
    char d[CLASSIFY_DETAIL_MAX];
    long num = 0;
    bool has;
    detail_of("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 5 has "
              "a total capacity of 79.15 GiB",
              d, sizeof(d), &num, &has);
    CHECK_STR(d, "2.00 GiB");
    detail_of("torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB (GPU "
              "0; 15.78 GiB total capacity)",
              d, sizeof(d), &num, &has);
    CHECK_STR(d, "20.00 MiB");
    detail_of("[9.1] NVRM: Xid (PCI:0000:b7:00): 48, pid='<unknown>', name=<unknown>, An "
              "uncorrectable double bit error (DBE) has been detected",
              d, sizeof(d), &num, &has);
    CHECK_STR(d, "0000:b7:00");
    CHECK(has);
    CHECK_INT(num, 48);
    detail_of("NVRM: GPU 0000:53:00.0: GPU has fallen off the bus.", d, sizeof(d), &num, &has);
    CHECK(has);
    CHECK_INT(num, 79);
    detail_of("Memory cgroup out of memory: Killed process 4242 (python3) total-vm:9kB, "
              "anon-rss:8kB",
              d, sizeof(d), &num, &has);
    CHECK_STR(d, "4242 (python3)");
    detail_of("[Rank 3] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1234, "
              "OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600031 ms",
              d, sizeof(d), &num, &has);
    CHECK_STR(d, "ALLREDUCE");
    CHECK_INT(num, 1234);
    detail_of("E0501 api.py:826] failed (exitcode: -9) local_rank: 2 (pid: 77) of binary: py", d,
              sizeof(d), &num, &has);
    CHECK_STR(d, "2");
    CHECK_INT(num, -9);
    detail_of("OSError: [Errno 28] No space left on device: '/ckpt/x.pt'", d, sizeof(d), &num,
              &has);
    CHECK_STR(d, "/ckpt/x.pt");
    CHECK(!has);
    detail_of("RuntimeError: CUDA error: misaligned address\r", d, sizeof(d), &num, &has);
    CHECK_STR(d, "misaligned address");
    /* Invalid UTF-8 and control characters never reach a summary. */
    detail_of("RuntimeError: CUDA error: bad \xff\xfe byte\ttab", d, sizeof(d), &num, &has);
    CHECK_STR(d, "bad ?? byte tab");
}

static void test_render(void)
{
    char out[256];
    struct classify_vars v = { "rank 5", "ip-10-0-1-7", "2.00 GiB", NULL, NULL };
    classify_render(kinds_info(DIAG_CUDA_OOM)->summary, &v, out, sizeof(out));
    CHECK_STR(out, "rank 5 ran out of GPU memory (CUDA OOM: tried to allocate 2.00 GiB) on node "
                   "ip-10-0-1-7");
    v.detail = NULL;
    v.node = "";
    classify_render(kinds_info(DIAG_CUDA_OOM)->summary, &v, out, sizeof(out));
    CHECK_STR(out, "rank 5 ran out of GPU memory (CUDA OOM)");
    struct classify_vars x = { "rank 2", "gpu-3", NULL, "79", "GPU has fallen off the bus" };
    classify_render(kinds_info(DIAG_XID)->summary, &x, out, sizeof(out));
    CHECK_STR(out, "rank 2: GPU error Xid 79 (GPU has fallen off the bus) on node gpu-3");
    classify_render("{who} [{nope}]end", &x, out, sizeof(out));
    CHECK_STR(out, "rank 2 end");
    classify_render("abc {who} def", &x, out, 8);
    CHECK_STR(out, "abc ran");
    /* Every template renders without leftover braces. */
    size_t n;
    const struct diag_pattern *t = patterns_table(&n);
    struct classify_vars all = { "rank 1", "n", "d", "7", "t" };
    for (size_t i = 0; i < n; i++) {
        classify_render(t[i].summary ? t[i].summary : kinds_info(t[i].kind)->summary, &all, out,
                        sizeof(out));
        CHECK(strchr(out, '{') == NULL && strchr(out, '[') == NULL);
    }
}

static void test_lookups(void)
{
    CHECK_INT(kinds_xid(79)->node_fault, 1);
    CHECK_INT(kinds_xid(79)->retry, DIAG_RETRYABLE);
    CHECK_INT(kinds_xid(13)->retry, DIAG_DETERMINISTIC);
    CHECK_INT(kinds_xid(43)->role, DIAG_CONSEQUENCE);
    CHECK_INT(kinds_xid(63)->role, DIAG_INFO);
    CHECK_INT(kinds_xid(12345)->code, -1);
    CHECK_INT(kinds_reason("OOMKilled")->kind, DIAG_HOST_OOM);
    CHECK_INT(kinds_reason("Evicted")->kind, DIAG_EVICTION);
    CHECK_INT(kinds_reason("PreemptionByScheduler")->kind, DIAG_PREEMPTION);
    CHECK_INT(kinds_reason("ErrImagePull")->kind, DIAG_IMAGE_PULL);
    CHECK_INT(kinds_reason("FailedScheduling")->kind, DIAG_SCHEDULING);
    CHECK_INT(kinds_reason("DeadlineExceeded")->kind, DIAG_DEADLINE);
    CHECK(kinds_reason("Completed") == NULL);
    CHECK(kinds_reason(NULL) == NULL);
    const char *t1 = "torch.OutOfMemoryError";
    CHECK_INT(kinds_exception(t1, strlen(t1))->kind, DIAG_CUDA_OOM);
    const char *t2 = "torch.distributed.DistBackendError";
    CHECK_INT(kinds_exception(t2, strlen(t2))->role, DIAG_CONSEQUENCE);
    CHECK(kinds_exception("ValueError", 10) == NULL);
    CHECK(kinds_exception("MyOutOfMemoryError", 18) == NULL);
    CHECK_STR(kinds_signal_name(9), "SIGKILL");
    CHECK(kinds_signal_name(99) == NULL);
    CHECK_STR(kinds_role_name(DIAG_CONSEQUENCE), "consequence");
    CHECK_STR(kinds_retry_name(DIAG_DETERMINISTIC), "deterministic");
}

int main(void)
{
    test_table_examples();
    test_kinds_covered();
    test_ordinary_lines();
    test_precedence_and_case();
    test_details();
    test_render();
    test_lookups();
    return check_done();
}
