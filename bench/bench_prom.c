/*
 * bench_prom: the CPU cost of writing GET /metrics text, the Prometheus writer (core/prom.c)
 * against the printf lines it replaced, on the two shapes that make a scrape long:
 *   histogram  the request-latency histogram with every route and status class observed
 *              (apimetrics_write(), the real function, and the same lines with printf as the
 *              code wrote them before);
 *   per-job    six gauge families with a sample per running job (job_id, job_name, unit), as
 *              health_metrics() writes them, for 1,000 jobs.
 * Prints the time per scrape-part and per line: best of 7 runs, CPU time of the thread.
 *
 * Usage: bench_prom
 */
#include <stdio.h>
#include <time.h>

#include "api/apimetrics.h"
#include "api/routes.h"
#include "core/clock.h"
#include "core/prom.h"

#define JOBS 1000
#define RUNS 7

static const double bounds[] = {
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10
};
static const char *const bound_text[] = { "0.001", "0.0025", "0.005", "0.01", "0.025", "0.05",
                                          "0.1",   "0.25",   "0.5",   "1",    "2.5",   "10" };
static const char *const classes[] = { "2xx", "3xx", "4xx", "5xx" };

static int64_t cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (int64_t)ts.tv_sec * NS_PER_SEC + ts.tv_nsec;
}

static size_t lines(const struct buf *b)
{
    size_t n = 0;
    for (size_t i = 0; i < b->len; i++)
        n += b->data[i] == '\n';
    return n;
}

/* The histogram as write_cell() printed it before the writer (one cell per route and class). */
static void histogram_printf(struct buf *out)
{
    buf_puts(out, "# HELP trainyard_http_request_duration_seconds Time to answer API requests, "
                  "by operation and status class (log follows excluded).\n"
                  "# TYPE trainyard_http_request_duration_seconds histogram\n");
    for (size_t r = 0; r < routes_count; r++) {
        const char *op = routes[r].operation_id;
        for (int k = 0; k < 4; k++) {
            unsigned long long count = 1000 + r;
            for (int i = 0; i < 12; i++)
                buf_printf(out,
                           "trainyard_http_request_duration_seconds_bucket{operation=\"%s\","
                           "code=\"%s\",le=\"%g\"} %llu\n",
                           op, classes[k], bounds[i], count - (unsigned long long)(12 - i));
            buf_printf(
                out,
                "trainyard_http_request_duration_seconds_bucket{operation=\"%s\",code=\"%s\","
                "le=\"+Inf\"} %llu\n"
                "trainyard_http_request_duration_seconds_sum{operation=\"%s\",code=\"%s\"} "
                "%.9f\n"
                "trainyard_http_request_duration_seconds_count{operation=\"%s\",code=\"%s\"} "
                "%llu\n",
                op, classes[k], count, op, classes[k], 1.234567 * (double)count, op, classes[k],
                count);
        }
    }
}

/* The same lines with the writer. */
static void histogram_prom(struct buf *out)
{
    struct prom p;
    prom_init(&p, out);
    prom_family(&p, "trainyard_http_request_duration_seconds", PROM_HISTOGRAM,
                "Time to answer API requests, by operation and status class (log follows "
                "excluded).");
    for (size_t r = 0; r < routes_count; r++) {
        const char *op = routes[r].operation_id;
        for (int k = 0; k < 4; k++) {
            double count = 1000 + (double)r;
            for (int i = 0; i < 12; i++)
                prom_sample(&p, "_bucket", count - (12 - i), "operation", op, "code", classes[k],
                            "le", bound_text[i], NULL);
            prom_sample(&p, "_bucket", count, "operation", op, "code", classes[k], "le", "+Inf",
                        NULL);
            prom_sample(&p, "_sum", 1.234567 * count, "operation", op, "code", classes[k], NULL);
            prom_sample(&p, "_count", count, "operation", op, "code", classes[k], NULL);
        }
    }
}

static const char *const job_families[] = { "trainyard_job_step",    "trainyard_job_total_steps",
                                            "trainyard_job_loss",    "trainyard_job_throughput",
                                            "trainyard_job_stalled", "trainyard_job_findings" };
static char job_ids[JOBS][16], job_names[JOBS][32];

/* health_metrics() before the writer: a printf per sample, values with %.17g. */
static void jobs_printf(struct buf *out)
{
    for (int f = 0; f < 6; f++) {
        const char *name = job_families[f];
        buf_printf(out, "# HELP %s %s\n# TYPE %s gauge\n", name, "A per-job gauge.", name);
        for (int j = 0; j < JOBS; j++) {
            double v = f == 2 ? 2.0 + j / 1000.0 : (double)(j * 10 + f);
            buf_printf(out, "%s{job_id=\"%s\",job_name=\"%s\"", name, job_ids[j], job_names[j]);
            if (f == 3)
                buf_printf(out, ",unit=\"%s\"", "tokens/s");
            buf_printf(out, "} %.17g\n", v);
        }
    }
}

static void jobs_prom(struct buf *out)
{
    struct prom p;
    prom_init(&p, out);
    for (int f = 0; f < 6; f++) {
        prom_family(&p, job_families[f], PROM_GAUGE, "A per-job gauge.");
        for (int j = 0; j < JOBS; j++) {
            double v = f == 2 ? 2.0 + j / 1000.0 : (double)(j * 10 + f);
            prom_sample(&p, NULL, v, "job_id", job_ids[j], "job_name", job_names[j],
                        f == 3 ? "unit" : NULL, "tokens/s", NULL);
        }
    }
}

/* Best of RUNS, each writing reps times into a reused buffer: ns per call; *nlines of one. */
static double best(void (*fn)(struct buf *), int reps, size_t *nlines)
{
    struct buf b = BUF_INIT;
    double min = 1e18;
    for (int r = 0; r < RUNS; r++) {
        int64_t t0 = cpu_ns();
        for (int i = 0; i < reps; i++) {
            buf_reset(&b);
            fn(&b);
        }
        double ns = (double)(cpu_ns() - t0) / reps;
        min = ns < min ? ns : min;
    }
    *nlines = lines(&b);
    buf_release(&b);
    return min;
}

static void report(const char *what, void (*fn)(struct buf *), int reps)
{
    size_t n;
    double ns = best(fn, reps, &n);
    printf("%-38s %6zu lines  %8.1f us  %6.1f ns/line\n", what, n, ns / 1000, ns / (double)n);
}

int main(void)
{
    for (int j = 0; j < JOBS; j++) {
        snprintf(job_ids[j], sizeof(job_ids[j]), "k%011d", j * 7919);
        snprintf(job_names[j], sizeof(job_names[j]), "llama-finetune-%d", j);
    }
    /* Every route and status class observed, so apimetrics_write() writes every cell. */
    for (size_t r = 0; r < routes_count; r++)
        for (int s = 200; s < 600; s += 100)
            for (int i = 0; i < 12; i++)
                apimetrics_observe(&routes[r], s, (int64_t)(bounds[i] * 0.9 * NS_PER_SEC));
    printf("GET /metrics text, best of %d, CPU time of the thread (%zu routes, %d jobs)\n", RUNS,
           routes_count, JOBS);
    report("apimetrics_write() (all cells)", apimetrics_write, 200);
    report("histogram, printf (before)", histogram_printf, 200);
    report("histogram, prom writer (after)", histogram_prom, 200);
    report("per-job families, printf (before)", jobs_printf, 50);
    report("per-job families, prom writer (after)", jobs_prom, 50);
    return 0;
}
