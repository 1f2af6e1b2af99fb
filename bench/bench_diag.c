/*
 * bench_diag: cost of failure diagnosis and progress parsing on the log-ingest path.
 *
 * Builds a realistic mix of log lines in memory (default 3,000,000 lines over 8 ranks: mostly
 * NCCL INFO chatter and ordinary framework logging, ~12% progress lines of every supported
 * format, torchrun-prefixed lines, and rare warnings/errors), then times
 *   classify   classify_line() alone,
 *   progparse  progparse_line() alone,
 *   diag_feed  the whole per-line call (prefix, stream, traceback state, classifier, progress
 *              tracker and metric samples) on one struct diag,
 * plus two adversarial mixes (all NCCL INFO; NCCL WARN spam where every line is a finding).
 * Prints ns/line and lines/s for each: best of 5 runs, in CPU time of the thread.
 *
 * Usage: bench_diag [lines]
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench/logmix.h"
#include "core/clock.h"
#include "server/diag/classify.h"
#include "server/diag/diag.h"
#include "server/diag/progparse.h"

static volatile size_t sink;

/* CPU time of this thread: the machine is shared, wall time would count other processes. */
static int64_t cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (int64_t)ts.tv_sec * NS_PER_SEC + ts.tv_nsec;
}

static double run_classify(const struct corpus *c)
{
    int64_t t0 = cpu_ns();
    size_t hits = 0, at;
    for (size_t i = 0; i < c->n; i++)
        hits += classify_line(c->arena + c->off[i], c->len[i], &at) != NULL;
    sink = hits;
    return (double)(cpu_ns() - t0);
}

static double run_progparse(const struct corpus *c)
{
    int64_t t0 = cpu_ns();
    size_t hits = 0;
    struct progparse pp;
    for (size_t i = 0; i < c->n; i++)
        hits += progparse_line(c->arena + c->off[i], c->len[i], &pp);
    sink = hits;
    return (double)(cpu_ns() - t0);
}

static double run_diag(const struct corpus *c, size_t *samples, size_t *findings)
{
    struct diag *d = diag_new(NULL);
    struct progress_sample s[16];
    int64_t t0 = cpu_ns(), now = 1714564800LL * NS_PER_SEC;
    size_t k = 0;
    for (size_t i = 0; i < c->n; i++) {
        struct diag_line ln = { c->rank[i], (int64_t)i + 1, now + (int64_t)i * 5000,
                                c->arena + c->off[i], c->len[i] };
        k += diag_feed(d, &ln, s, 16);
    }
    double ns = (double)(cpu_ns() - t0);
    *samples = k;
    *findings = diag_nfindings(d);
    diag_free(d);
    return ns;
}

static void report(const char *what, const struct corpus *c, double best_ns, const char *extra)
{
    double per = best_ns / (double)c->n;
    printf("  %-10s %8.1f ns/line  %12.0f lines/s  %8.1f MB/s%s\n", what, per, 1e9 / per,
           (double)c->used / (best_ns / 1e9) / 1e6, extra);
}

static void measure(const char *title, size_t n, int mix)
{
    struct corpus c;
    build(&c, n, mix);
    printf("%s: %zu lines, %.1f bytes/line average\n", title, c.n, (double)c.used / (double)c.n);
    double bc = 1e30, bp = 1e30, bd = 1e30;
    size_t samples = 0, findings = 0;
    for (int rep = 0; rep < 5; rep++) {
        double t = run_classify(&c);
        bc = t < bc ? t : bc;
        t = run_progparse(&c);
        bp = t < bp ? t : bp;
        t = run_diag(&c, &samples, &findings);
        bd = t < bd ? t : bd;
    }
    char extra[128];
    report("classify", &c, bc, "");
    report("progparse", &c, bp, "");
    snprintf(extra, sizeof(extra), "  (%zu samples, %zu findings)", samples, findings);
    report("diag_feed", &c, bd, extra);
    corpus_free(&c);
}

int main(int argc, char **argv)
{
    size_t n = argc > 1 ? (size_t)strtoull(argv[1], NULL, 10) : 3000000;
    if (n < 1000)
        n = 1000;
    measure("realistic mix (55% NCCL INFO, 12% progress, 33% other, 0.05% warnings/errors)", n, 0);
    measure("all NCCL INFO", n / 3, 1);
    measure("NCCL WARN spam (every line a finding)", n / 3, 2);
    return 0;
}
