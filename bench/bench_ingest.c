/*
 * bench_ingest: log ingest through the collector and the store, without and with the
 * diagnosis hook, on the same data in the same run. Three modes:
 *   without diagnosis  the collector and the store alone;
 *   diag_feed only     a hook that feeds every stored line to one struct diag (the analysis);
 *   with diagnosis     the daemon's hook (health_lines: the batch goes to the feeder thread,
 *                      which runs diag_feed and stores the metric samples the progress parser
 *                      finds as time series); timed until the feeder has fed every line.
 *
 * The realistic mix of bench/logmix.h (default 1,000,000 lines over 8 ranks) is written once
 * as the ranks' log files (the local shim's record format); each run opens a fresh store,
 * points a collector at the files and times collect_flush() until every line is committed,
 * and the store's writer has applied the queued metric samples. Runs alternate between the
 * modes; the best of each is reported as lines/s (wall), CPU per line of the whole process
 * (collector, writer, feeder) and of the collector thread (the ingest path itself).
 *
 * Usage: bench_ingest [lines] [repetitions] [mode]
 */
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "bench/logmix.h"
#include "server/ingest/collect.h"
#include "core/clock.h"
#include "server/ingest/logrec.h"
#include "core/wakeups.h"
#include "server/diag/diag.h"
#include "server/health/health.h"
#include "store/jobs.h"
#include "store/store.h"

static int64_t cpu_ns(clockid_t which)
{
    struct timespec ts;
    clock_gettime(which, &ts);
    return (int64_t)ts.tv_sec * NS_PER_SEC + ts.tv_nsec;
}

/* Writes each rank's lines as log records into dir/r<rank>.log; returns the bytes written. */
static size_t write_logs(const struct corpus *c, const char *dir)
{
    struct buf b[NRANKS];
    int64_t t = 1714564800LL * NS_PER_SEC;
    for (int r = 0; r < NRANKS; r++)
        buf_init(&b[r]);
    for (size_t i = 0; i < c->n; i++) {
        struct logrec rec = { .time = t + (int64_t)i * 2000,
                              .stream = STREAM_STDOUT,
                              .text = c->arena + c->off[i],
                              .len = c->len[i] };
        logrec_format(&b[c->rank[i]], &rec);
    }
    size_t total = 0;
    for (int r = 0; r < NRANKS; r++) {
        char path[512];
        snprintf(path, sizeof(path), "%s/r%d.log", dir, r);
        FILE *f = fopen(path, "w");
        if (!f || fwrite(b[r].data, 1, b[r].len, f) != b[r].len)
            fprintf(stderr, "bench_ingest: cannot write %s\n", path);
        if (f)
            fclose(f);
        total += b[r].len;
        buf_release(&b[r]);
    }
    return total;
}

struct result {
    double wall_ns, cpu_ns, collector_ns; /* wall; CPU of the process; of the collector */
};

enum mode { WITHOUT, FEED_ONLY, WITH, NMODES };

/* The analysis alone, as a hook: every line to one diagnosis, samples dropped. */
static void feed_only(void *ctx, int64_t pk, const struct log_line *lines, size_t n)
{
    (void)pk;
    struct progress_sample s[16];
    for (size_t i = 0; i < n; i++) {
        struct diag_line l = { .rank = lines[i].rank,
                               .seq = lines[i].seq,
                               .time_ns = lines[i].time,
                               .text = lines[i].text,
                               .len = lines[i].len };
        diag_feed(ctx, &l, s, 16);
    }
}

static struct result run(const char *logdir, enum mode mode)
{
    bool with_diag = mode == WITH;
    char dir[] = "/tmp/ty-bench-ingest-db.XXXXXX";
    struct result res = { 0, 0, 0 };
    if (!mkdtemp(dir))
        return res;
    char *path = xasprintf("%s/t.db", dir);
    struct store_options so = { .busy_timeout_ms = 5000, .max_batch = 512 };
    struct store *st = store_open(path, &so, NULL);
    struct job_new jn = { .id = "benchjob",
                          .name = "bench",
                          .executor = "local",
                          .spec = "{\"name\":\"bench\"}",
                          .nranks = NRANKS,
                          .owner = "bench",
                          .now = clock_now_ns() };
    struct job_inserted ins;
    store_job_insert(st, &jn, &ins, NULL);
    struct health *h = with_diag ? health_new(st, NULL) : NULL;
    if (h && health_start(h, NULL) < 0)
        fprintf(stderr, "bench_ingest: no feeder thread\n");
    if (h) {
        struct job j = { .pk = ins.pk, .id = "benchjob", .name = "bench" };
        health_attempt(h, &j, 0, NRANKS, false);
    }
    struct diag *d = mode == FEED_ONLY ? diag_new(NULL) : NULL;
    struct wakeups *nt = wakeups_new();
    struct collect_options co = { .max_bytes = INT64_MAX, .max_age_ns = INT64_MAX };
    if (h)
        co.stored = (struct collect_stored){ .ctx = h, .lines = health_lines };
    else if (d)
        co.stored = (struct collect_stored){ .ctx = d, .lines = feed_only };
    struct collect *c = collect_new(st, nt, &co);
    struct log_sources src = collect_sources(c);
    for (int r = 0; r < NRANKS; r++) {
        char key[16], file[512];
        snprintf(key, sizeof(key), "a0/r%d", r);
        snprintf(file, sizeof(file), "%s/r%d.log", logdir, r);
        struct log_origin o = { .rank = r, .attempt = 0, .pid = 1000 + r };
        src.add_file(src.ctx, ins.pk, key, file, &o);
        src.file_done(src.ctx, ins.pk, key);
    }
    int64_t w0 = clock_mono_ns(), c0 = cpu_ns(CLOCK_PROCESS_CPUTIME_ID);
    int64_t t0 = cpu_ns(CLOCK_THREAD_CPUTIME_ID);
    collect_flush(c);
    res.collector_ns = (double)(cpu_ns(CLOCK_THREAD_CPUTIME_ID) - t0);
    if (h)
        health_drain(h);   /* the analysis has seen every line */
    store_check(st, NULL); /* the writer has applied everything queued before it */
    res.wall_ns = (double)(clock_mono_ns() - w0);
    res.cpu_ns = (double)(cpu_ns(CLOCK_PROCESS_CPUTIME_ID) - c0);
    collect_free(c);
    health_free(h);
    diag_free(d);
    wakeups_free(nt);
    store_close(st);
    char *rm = xasprintf("rm -rf '%s'", dir);
    if (system(rm) != 0)
        fprintf(stderr, "bench_ingest: cannot remove %s\n", dir);
    free(rm);
    free(path);
    return res;
}

int main(int argc, char **argv)
{
    size_t n = argc > 1 ? (size_t)strtoull(argv[1], NULL, 10) : 1000000;
    long reps = argc > 2 ? strtol(argv[2], NULL, 10) : 3;
    if (n < 1000)
        n = 1000;
    if (reps < 1)
        reps = 1;
    /* A third argument runs only that mode (1: diag_feed only, 2: with diagnosis) and the
     * baseline, e.g. under perf. */
    long only = argc > 3 ? strtol(argv[3], NULL, 10) : -1;
    struct corpus c;
    build(&c, n, 0);
    char logdir[] = "/tmp/ty-bench-ingest-logs.XXXXXX";
    if (!mkdtemp(logdir))
        return 1;
    size_t bytes = write_logs(&c, logdir);
    printf("ingest of %zu lines (%zu ranks, %.1f MB of records), best of %d runs each, "
           "alternating:\n",
           c.n, (size_t)NRANKS, (double)bytes / 1e6, (int)reps);
    struct result best[NMODES];
    for (int m = 0; m < NMODES; m++)
        best[m] = (struct result){ 1e30, 1e30, 1e30 };
    for (long rep = 0; rep < reps; rep++) {
        for (int m = 0; m < NMODES; m++) {
            if (only >= 0 && m != only && m != WITHOUT)
                continue;
            struct result r = run(logdir, (enum mode)m);
            best[m].wall_ns = r.wall_ns < best[m].wall_ns ? r.wall_ns : best[m].wall_ns;
            best[m].cpu_ns = r.cpu_ns < best[m].cpu_ns ? r.cpu_ns : best[m].cpu_ns;
            best[m].collector_ns =
                r.collector_ns < best[m].collector_ns ? r.collector_ns : best[m].collector_ns;
        }
    }
    static const char *const names[] = { "without diagnosis", "diag_feed only", "with diagnosis" };
    double nl = (double)c.n;
    printf("  %-18s %10s %8s %15s %15s\n", "", "lines/s", "vs none", "CPU us/line",
           "collector us/l");
    for (int m = 0; m < NMODES; m++)
        if (best[m].wall_ns < 1e29)
            printf("  %-18s %10.0f %+7.1f%% %8.2f (%+5.2f) %8.2f (%+5.2f)\n", names[m],
                   nl / (best[m].wall_ns / 1e9), -100.0 * (1.0 - best[0].wall_ns / best[m].wall_ns),
                   best[m].cpu_ns / 1e3 / nl, (best[m].cpu_ns - best[0].cpu_ns) / 1e3 / nl,
                   best[m].collector_ns / 1e3 / nl,
                   (best[m].collector_ns - best[0].collector_ns) / 1e3 / nl);
    char *rm = xasprintf("rm -rf '%s'", logdir);
    if (system(rm) != 0)
        fprintf(stderr, "bench_ingest: cannot remove %s\n", logdir);
    free(rm);
    corpus_free(&c);
    return 0;
}
