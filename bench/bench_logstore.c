/*
 * bench_logstore: the log store on its own. Appends realistic training-log lines (NCCL INFO,
 * progress dicts, tqdm-like and word lines of about 120 bytes) for one job in the batches the
 * collector makes, then measures what users wait for on a job of that size: the last 1,000
 * lines, a page by cursor, and a word search with context. Prints bytes on disk per million
 * lines.
 *
 *   bench_logstore [LINES (default 10000000)] [DIR (default a temp dir)]
 */
#include <sys/stat.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/xalloc.h"
#include "store/jobs.h"
#include "store/logs.h"

#define BATCH 4096

static const char *const shapes[] = {
    "ip-10-0-%d-%d:%d:%d [%d] NCCL INFO Channel %02d/0 : %d[%d] -> %d[%d] [send] via NET/AWS "
    "Libfabric/%d/GDRDMA",
    "{'loss': %d.%04d, 'grad_norm': %d.%03d, 'learning_rate': 2.%de-05, 'epoch': %d.%02d}",
    "[Rank %d] step=%d, skipped=0, lr=[%d.%de-05], mom=[(0.9, 0.95)] samples/sec=%d.%d tokens=%d",
    "iteration %8d/  500000 | consumed samples: %10d | elapsed time per iteration (ms): %d.%d | lm "
    "loss: %d.%03dE+00",
    "Epoch %d: %3d%%|#########   | %d/%d [%02d:%02d<%02d:%02d, %d.%02dit/s] data loader worker %d "
    "prefetch",
    "INFO:trainer: saving checkpoint shard %d of %d to /fsx/checkpoints/run-%d/step-%d (%d MiB) ok",
};

static size_t make_line(char *out, size_t size, uint64_t i)
{
    uint64_t r = i * 2654435761u;
    int a = (int)(r % 97), b = (int)(r % 89), c = (int)(r % 1000), d = (int)(i % 64);
    int n = snprintf(out, size, shapes[i % 6], a, b, c, d, a, b, c, d, a, b, c, d, a, b);
    return (size_t)(n < (int)size ? n : (int)size - 1);
}

static double seconds_since(int64_t t0)
{
    return (double)(clock_mono_ns() - t0) / 1e9;
}

static int count_line(void *ctx, const struct log_line *l)
{
    (void)l;
    (*(int64_t *)ctx)++;
    return 0;
}

static int64_t file_size(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0 ? (int64_t)sb.st_size : 0;
}

static int64_t create_job(struct store *st)
{
    struct job_new jn = { .id = "benchjob0001",
                          .name = "bench",
                          .executor = "local",
                          .spec = "{}",
                          .nranks = 8,
                          .owner = "bench",
                          .now = clock_now_ns() };
    struct job_inserted out;
    if (store_job_insert(st, &jn, &out, NULL) < 0)
        abort();
    return out.pk;
}

static void ingest(struct store *st, int64_t pk, int64_t total)
{
    struct log_line *lines = xcalloc(BATCH, sizeof(*lines));
    char *text = xmalloc(BATCH * 256);
    struct log_source_new srcs[8];
    char keys[8][8];
    for (int r = 0; r < 8; r++) {
        snprintf(keys[r], sizeof(keys[r]), "r%d", r);
        srcs[r] = (struct log_source_new){ .src = r, .key = keys[r], .rank = r };
    }
    int64_t t0 = clock_mono_ns(), bytes = 0, now = clock_now_ns();
    for (int64_t done = 0; done < total; done += BATCH) {
        size_t n = total - done < BATCH ? (size_t)(total - done) : BATCH;
        for (size_t i = 0; i < n; i++) {
            char *p = text + i * 256;
            size_t len = make_line(p, 256, (uint64_t)(done + (int64_t)i));
            lines[i] = (struct log_line){ .time = now + (done + (int64_t)i) * 1000,
                                          .src = (int)(i % 8),
                                          .rank = (int)(i % 8),
                                          .text = p,
                                          .len = len };
            bytes += (int64_t)len;
        }
        struct log_append a = { .job_pk = pk,
                                .lines = lines,
                                .n = n,
                                .sources = done == 0 ? srcs : NULL,
                                .nsources = done == 0 ? 8 : 0 };
        struct err err;
        err_init(&err);
        if (store_logs_append(st, &a, 1, &err) < 0) {
            fprintf(stderr, "append: %s\n", err.msg);
            abort();
        }
    }
    double s = seconds_since(t0);
    printf("ingest: %lld lines (%.1f MB) in %.2f s = %.0f lines/s, %.1f MB/s (batches of %d)\n",
           (long long)total, bytes / 1e6, s, total / s, bytes / 1e6 / s, BATCH);
    free(lines);
    free(text);
}

static void timed_reads(struct store *st, int64_t pk, int64_t total)
{
    struct log_query tail = { .tail = 1000, .stream = -1 };
    int64_t n = 0, t0 = clock_mono_ns();
    const int reps = 20;
    for (int i = 0; i < reps; i++)
        store_logs_read(st, pk, &tail, count_line, &n, NULL, NULL);
    printf("tail 1000 lines: %.2f ms (mean of %d, %lld lines each)\n",
           seconds_since(t0) * 1e3 / reps, reps, (long long)(n / reps));
    struct log_query page = { .after = total / 2, .limit = 1000, .stream = -1 };
    n = 0;
    t0 = clock_mono_ns();
    for (int i = 0; i < reps; i++)
        store_logs_read(st, pk, &page, count_line, &n, NULL, NULL);
    printf("page of 1000 from the middle: %.2f ms\n", seconds_since(t0) * 1e3 / reps);
}

static void timed_search(struct store *st, int64_t pk, const char *q)
{
    struct logmatch m;
    logmatch_parse(&m, q, NULL);
    struct log_query query = { .limit = 100, .stream = -1, .match = &m };
    struct log_read_stats stats = { 0 };
    int64_t n = 0, t0 = clock_mono_ns();
    store_logs_read(st, pk, &query, count_line, &n, &stats, NULL);
    double first = seconds_since(t0);
    /* context for each match: 3 lines before and after, as /logs/search does */
    printf("search '%s': %lld matches in %.3f s (blocks read %lld, skipped %lld)\n", q,
           (long long)n, first, (long long)stats.blocks_read, (long long)stats.blocks_skipped);
    logmatch_release(&m);
}

int main(int argc, char **argv)
{
    int64_t total = argc > 1 ? strtoll(argv[1], NULL, 10) : 10000000;
    char dir[256] = "/tmp/bench_logstore.XXXXXX";
    if (argc > 2)
        snprintf(dir, sizeof(dir), "%s", argv[2]);
    else if (!mkdtemp(dir))
        return 1;
    char path[300];
    snprintf(path, sizeof(path), "%s/bench.db", dir);
    struct store_options so = { .sync_full = true, .busy_timeout_ms = 5000, .max_batch = 64 };
    struct store *st = store_open(path, &so, NULL);
    if (!st)
        return 1;
    bool fresh = file_size(path) < 1000000;
    int64_t pk = fresh ? create_job(st) : 1; /* an existing DIR is reused: reads only */
    if (fresh)
        ingest(st, pk, total);
    store_close(st);
    st = store_open(path, &so, NULL);
    char wal[320];
    snprintf(wal, sizeof(wal), "%s-wal", path);
    int64_t size = file_size(path) + file_size(wal);
    printf("on disk: %.1f MB = %.1f MB per million lines (text %.1f MB per million)\n", size / 1e6,
           size / 1e6 / (total / 1e6), 120.0);
    timed_reads(st, pk, total);
    timed_search(st, pk, "\"checkpoint shard 7 of\" run-33");
    timed_search(st, pk, "watchdog");
    timed_search(st, pk, "GDRDMA");
    store_close(st);
    if (argc <= 2) {
        unlink(path);
        unlink(wal);
        snprintf(path, sizeof(path), "%s/bench.db-shm", dir);
        unlink(path);
        rmdir(dir);
    }
    return 0;
}
