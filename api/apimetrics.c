/*
 * apimetrics: request latency histograms and submission counts (see apimetrics.h). One cell
 * per (route, status class) with cumulative-on-write buckets, so a scrape reads each counter
 * once without locks.
 */
#include "api/apimetrics.h"

#include <stdatomic.h>

#include "api/routes.h"
#include "core/prom.h"

#define MAX_ROUTES 128
#define NBUCKETS   12

static const double bounds[NBUCKETS] = { 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
                                         0.1,   0.25,   0.5,   1,    2.5,   10 };
/* The same bounds as the le labels a scraper has always seen (printf's %g). */
static const char *const bound_text[NBUCKETS] = { "0.001", "0.0025", "0.005", "0.01",
                                                  "0.025", "0.05",   "0.1",   "0.25",
                                                  "0.5",   "1",      "2.5",   "10" };
static const char *const classes[] = { "2xx", "3xx", "4xx", "5xx" };

struct cell {
    atomic_ullong le[NBUCKETS]; /* requests with duration <= bounds[i] */
    atomic_ullong count;
    atomic_ullong sum_ns;
};

/* The last row is for requests no route matched. */
static struct cell cells[MAX_ROUTES + 1][4];
static atomic_ullong submissions;
/* Requests whose sender could not be authenticated, by route and answer: they leave nothing
 * durable behind (no delivery row, no log line), only these counts. */
static const int unauth_codes[] = { 400, 401, 403, 413, 503 };
#define NUNAUTH (sizeof(unauth_codes) / sizeof(unauth_codes[0]))
static atomic_ullong unauthenticated[MAX_ROUTES + 1][NUNAUTH + 1];

static size_t row_of(const struct route *route)
{
    if (route && route >= routes && route < routes + routes_count &&
        (size_t)(route - routes) < MAX_ROUTES)
        return (size_t)(route - routes);
    return MAX_ROUTES;
}

void apimetrics_unauthenticated(const struct route *route, int status)
{
    size_t k = 0;
    while (k < NUNAUTH && unauth_codes[k] != status)
        k++;
    atomic_fetch_add_explicit(&unauthenticated[row_of(route)][k], 1, memory_order_relaxed);
}

void apimetrics_observe(const struct route *route, int status, int64_t ns)
{
    size_t row = row_of(route);
    int cls = status / 100 - 2;
    if (cls < 0 || cls > 3 || ns < 0)
        return;
    struct cell *c = &cells[row][cls];
    double s = (double)ns / 1e9;
    for (int i = 0; i < NBUCKETS; i++)
        if (s <= bounds[i])
            atomic_fetch_add_explicit(&c->le[i], 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&c->sum_ns, (unsigned long long)ns, memory_order_relaxed);
    atomic_fetch_add_explicit(&c->count, 1, memory_order_relaxed);
}

void apimetrics_submission(void)
{
    atomic_fetch_add_explicit(&submissions, 1, memory_order_relaxed);
}

static void write_cell(struct prom *p, const char *op, const char *cls, struct cell *c)
{
    unsigned long long count = atomic_load(&c->count);
    if (!count)
        return;
    for (int i = 0; i < NBUCKETS; i++)
        prom_sample(p, "_bucket", (double)atomic_load(&c->le[i]), "operation", op, "code", cls,
                    "le", bound_text[i], NULL);
    prom_sample(p, "_bucket", (double)count, "operation", op, "code", cls, "le", "+Inf", NULL);
    prom_sample(p, "_sum", (double)atomic_load(&c->sum_ns) / 1e9, "operation", op, "code", cls,
                NULL);
    prom_sample(p, "_count", (double)count, "operation", op, "code", cls, NULL);
}

void apimetrics_write(struct buf *out)
{
    struct prom p;
    prom_init(&p, out);
    prom_scalar(&p, "trainyard_job_submissions_total", PROM_COUNTER,
                "Jobs accepted by POST /v1/jobs.", (double)atomic_load(&submissions));
    prom_family(&p, "trainyard_http_request_duration_seconds", PROM_HISTOGRAM,
                "Time to answer API requests, by operation and status class (log follows "
                "excluded).");
    size_t n = routes_count < MAX_ROUTES ? routes_count : MAX_ROUTES;
    for (size_t r = 0; r <= n; r++) {
        size_t row = r < n ? r : MAX_ROUTES;
        const char *op = r < n ? routes[r].operation_id : "unmatched";
        for (int k = 0; k < 4; k++)
            write_cell(&p, op, classes[k], &cells[row][k]);
    }
    prom_family(&p, "trainyard_http_unauthenticated_total", PROM_COUNTER,
                "Requests refused because their sender could not be authenticated (a token, or "
                "a hook delivery's signature or secret), by operation and status; nothing else "
                "of them is kept.");
    for (size_t r = 0; r <= n; r++) {
        size_t row = r < n ? r : MAX_ROUTES;
        const char *op = r < n ? routes[r].operation_id : "unmatched";
        for (size_t k = 0; k <= NUNAUTH; k++) {
            unsigned long long v = atomic_load(&unauthenticated[row][k]);
            char code[8];
            snprintf(code, sizeof(code), "%d", k < NUNAUTH ? unauth_codes[k] : 0);
            if (v)
                prom_sample(&p, NULL, (double)v, "operation", op, "code",
                            k < NUNAUTH ? code : "other", NULL);
        }
    }
}
