/*
 * Tests of the Prometheus text writer (core/prom.c): HELP and TYPE once per family, samples with
 * labels (escaped so a value cannot end the line or the quote), an optional last label,
 * histogram suffixes, and values that read back exactly. What a scraper parses is checked with
 * promtool on the real daemon's /metrics (tests/integration/37-metrics-format.sh).
 */
#include "tests/unit/check.h"

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>

#include "core/prom.h"

static void families(void)
{
    struct buf b = BUF_INIT;
    struct prom p;
    prom_init(&p, &b);
    prom_family(&p, "trainyard_jobs", PROM_GAUGE, "Jobs stored, by state.");
    prom_sample(&p, NULL, 3, "state", "running", NULL);
    prom_sample(&p, NULL, 0, "state", "queued", NULL);
    prom_scalar(&p, "trainyard_job_starts_total", PROM_COUNTER, "Job attempts started.", 7);
    CHECK_STR(buf_cstr(&b), "# HELP trainyard_jobs Jobs stored, by state.\n"
                            "# TYPE trainyard_jobs gauge\n"
                            "trainyard_jobs{state=\"running\"} 3\n"
                            "trainyard_jobs{state=\"queued\"} 0\n"
                            "# HELP trainyard_job_starts_total Job attempts started.\n"
                            "# TYPE trainyard_job_starts_total counter\n"
                            "trainyard_job_starts_total 7\n");
    buf_reset(&b);

    /* Label values from users: a backslash, a quote and a newline cannot break the line. */
    prom_family(&p, "trainyard_job_step", PROM_GAUGE, "Help with a \\ and a\nnewline.");
    prom_sample(&p, NULL, 12, "job_id", "k3v9", "job_name", "a\"b\\c\nd", NULL);
    /* An optional last label: NULL as its name leaves it out. */
    const char *unit = NULL;
    prom_sample(&p, NULL, 1, "job_id", "x", unit ? "unit" : NULL, unit, NULL);
    unit = "tokens/s";
    prom_sample(&p, NULL, 1, "job_id", "x", unit ? "unit" : NULL, unit, NULL);
    CHECK_STR(buf_cstr(&b), "# HELP trainyard_job_step Help with a \\\\ and a\\nnewline.\n"
                            "# TYPE trainyard_job_step gauge\n"
                            "trainyard_job_step{job_id=\"k3v9\",job_name=\"a\\\"b\\\\c\\nd\"} 12\n"
                            "trainyard_job_step{job_id=\"x\"} 1\n"
                            "trainyard_job_step{job_id=\"x\",unit=\"tokens/s\"} 1\n");
    buf_reset(&b);

    /* Histograms and summaries: one family, suffixed samples. */
    prom_family(&p, "trainyard_http_request_duration_seconds", PROM_HISTOGRAM, "Latency.");
    prom_sample(&p, "_bucket", 2, "operation", "jobs_get", "le", "0.005", NULL);
    prom_sample(&p, "_bucket", 3, "operation", "jobs_get", "le", "+Inf", NULL);
    prom_sample(&p, "_sum", 0.0123, "operation", "jobs_get", NULL);
    prom_sample(&p, "_count", 3, "operation", "jobs_get", NULL);
    CHECK_STR(
        buf_cstr(&b),
        "# HELP trainyard_http_request_duration_seconds Latency.\n"
        "# TYPE trainyard_http_request_duration_seconds histogram\n"
        "trainyard_http_request_duration_seconds_bucket{operation=\"jobs_get\",le=\"0.005\"} 2\n"
        "trainyard_http_request_duration_seconds_bucket{operation=\"jobs_get\",le=\"+Inf\"} 3\n"
        "trainyard_http_request_duration_seconds_sum{operation=\"jobs_get\"} 0.0123\n"
        "trainyard_http_request_duration_seconds_count{operation=\"jobs_get\"} 3\n");
    buf_release(&b);
}

static const char *value(double v)
{
    static struct buf b;
    buf_reset(&b);
    prom_value(&b, v);
    return buf_cstr(&b);
}

static void values(void)
{
    CHECK_STR(value(0), "0");
    CHECK_STR(value(-0.0), "0");
    CHECK_STR(value(42), "42");
    CHECK_STR(value(-7), "-7");
    CHECK_STR(value(18446744073709551615.0), "1.8446744073709552e+19"); /* past 2^53 */
    CHECK_STR(value(9007199254740991.0), "9007199254740991");
    CHECK_STR(value(0.505363), "0.505363");
    CHECK_STR(value(1.5), "1.5");
    CHECK_STR(value(1714564800.123), "1714564800.123");
    CHECK_STR(value(0.1 + 0.2), "0.30000000000000004"); /* 15 digits would not read back */
    CHECK_STR(value(NAN), "NaN");
    CHECK_STR(value(INFINITY), "+Inf");
    CHECK_STR(value(-INFINITY), "-Inf");
    /* Every value reads back as the same double. */
    bool exact = true;
    srand(7);
    for (int i = 0; i < 100000; i++) {
        double v = ((double)rand() / RAND_MAX - 0.5) * pow(10, rand() % 40 - 20);
        exact = exact && strtod(value(v), NULL) == v;
    }
    CHECK(exact);
}

int main(void)
{
    families();
    values();
    return check_done();
}
