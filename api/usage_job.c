/*
 * usage_job: a job's usage as JSON text, in GET /v1/jobs/{id} ("usage") and GET
 * /v1/usage/jobs/{id} (with each rank run; also once the job is deleted). Written straight
 * into the answer as job_json.c writes the job: the job's GET is the daemon's hottest read, and
 * a jansson tree and its dump cost more than the rest of the usage. Numbers are fixed-point
 * (seconds to the millisecond, hours and money to the millionth); keys are constants (nothing
 * to escape), strings are escaped.
 */
#include <math.h>

#include "api/handlers.h"
#include "api/usage.h"
#include "api/usage_agg.h"
#include "core/clock.h"
#include "core/jsonx.h"
#include "core/xalloc.h"
#include "store/usage.h"

static void key(struct buf *out, const char *k)
{
    buf_puts(out, ",\"");
    buf_puts(out, k);
    buf_puts(out, "\":");
}

/* v with at most `digits` decimals (trailing zeros dropped): sums of many runs do not show
 * their last-bit noise, and printf's %g was a fifth of a job's GET. */
static void num(struct buf *out, const char *k, double v, int digits)
{
    static const int64_t scale[] = { 1, 10, 100, 1000, 10000, 100000, 1000000 };
    key(out, k);
    double x = round(fabs(v) * (double)scale[digits]);
    if (!isfinite(x) || x > 9e15) { /* beyond exact integers: let printf say it */
        buf_printf(out, "%.12g", v);
        return;
    }
    int64_t n = (int64_t)x, whole = n / scale[digits], frac = n % scale[digits];
    if (v < 0 && n)
        buf_putc(out, '-');
    buf_put_int(out, whole);
    if (!frac)
        return;
    char d[8];
    int len = digits;
    for (int i = digits - 1; i >= 0; i--, frac /= 10)
        d[i] = (char)('0' + frac % 10);
    while (len > 0 && d[len - 1] == '0')
        len--;
    buf_putc(out, '.');
    buf_append(out, d, (size_t)len);
}

static void integer(struct buf *out, const char *k, int64_t v)
{
    key(out, k);
    buf_put_int(out, v);
}

static void str(struct buf *out, const char *k, const char *v)
{
    key(out, k);
    if (v && *v)
        jsonx_dump_string(out, v, strlen(v));
    else
        buf_puts(out, "null");
}

static void when(struct buf *out, const char *k, int64_t ns)
{
    char ts[CLOCK_RFC3339_MAX];
    str(out, k, ns ? clock_format(ns, ts) : NULL);
}

/* The members usage_sum_json() writes, but "jobs" (one job). */
static void figures(struct buf *out, const struct usage_sum *s, const struct prices *p)
{
    num(out, "gpu_seconds", s->gpu_seconds, 3);
    num(out, "gpu_hours", s->gpu_seconds / 3600, 6);
    num(out, "rank_seconds", s->rank_seconds, 3);
    integer(out, "runs", s->runs);
    if (p->currency[0])
        num(out, "cost", s->cost, 6);
    else
        str(out, "cost", NULL);
    num(out, "unpriced_gpu_seconds", s->unpriced_gpu_seconds, 3);
}

static void run_text(struct buf *out, const struct usage_job_run *r)
{
    buf_printf(out, "{\"attempt\":%d", r->attempt);
    integer(out, "rank", r->rank);
    when(out, "started_at", r->started_at);
    when(out, "finished_at", r->running ? 0 : r->finished_at);
    key(out, "running");
    buf_puts(out, r->running ? "true" : "false");
    num(out, "gpus", r->gpus, 6);
    num(out, "seconds", (double)r->counted_ns / 1e9, 6);
    str(out, "node", r->node);
    str(out, "instance_type", r->instance_type);
    str(out, "capacity_type", r->capacity_type);
    buf_putc(out, '}');
}

/* One attempt's figures while they are summed. */
struct attempt {
    int attempt;
    struct usage_sum sum;
    int running;
    int64_t started_at, finished_at;
};

static void attempt_text(struct buf *out, const struct attempt *a, const struct prices *p)
{
    buf_printf(out, "{\"attempt\":%d", a->attempt);
    figures(out, &a->sum, p);
    integer(out, "running_ranks", a->running);
    when(out, "started_at", a->started_at);
    when(out, "finished_at", a->running ? 0 : a->finished_at);
    buf_putc(out, '}');
}

/* The runs by attempt (they come ordered by attempt, rank, start; running ones last). */
static size_t by_attempt(const struct usage_job_run *runs, size_t n, const char *executor,
                         const struct prices *p, struct attempt *at, struct usage_sum *all)
{
    size_t na = 0;
    for (size_t i = 0; i < n; i++) {
        const struct usage_job_run *r = &runs[i];
        size_t k = 0;
        while (k < na && at[k].attempt != r->attempt)
            k++;
        if (k == na)
            at[na++] = (struct attempt){ .attempt = r->attempt, .started_at = r->started_at };
        struct usage_figures f = { .gpu_seconds = (double)r->counted_ns / 1e9 * r->gpus,
                                   .rank_seconds = (double)r->counted_ns / 1e9,
                                   .runs = !r->running };
        usage_sum_add(&at[k].sum, p, executor, r->instance_type, r->capacity_type, &f);
        usage_sum_add(all, p, executor, r->instance_type, r->capacity_type, &f);
        at[k].running += r->running;
        at[k].started_at = r->started_at < at[k].started_at ? r->started_at : at[k].started_at;
        at[k].finished_at = r->finished_at > at[k].finished_at ? r->finished_at : at[k].finished_at;
    }
    return na;
}

static void job_text(struct buf *out, const char *id, const char *executor,
                     const struct usage_job_run *runs, size_t n, const struct prices *p,
                     bool with_runs)
{
    struct attempt *at = xcalloc(n + 1, sizeof(*at));
    struct usage_sum all = { 0 };
    size_t na = by_attempt(runs, n, executor, p, at, &all);
    double gpus = 0;
    int running = 0;
    for (size_t i = 0; i < n; i++) {
        gpus = runs[i].gpus > gpus ? runs[i].gpus : gpus;
        running += runs[i].running;
    }
    buf_puts(out, "{\"job_id\":");
    jsonx_dump_string(out, id, strlen(id));
    str(out, "executor", executor);
    num(out, "gpus_per_rank", gpus, 6);
    figures(out, &all, p);
    str(out, "currency", p->currency);
    integer(out, "running_ranks", running);
    key(out, "attempts");
    for (size_t k = 0; k < na; k++) {
        buf_putc(out, k ? ',' : '[');
        attempt_text(out, &at[k], p);
    }
    buf_puts(out, na ? "]" : "[]");
    if (with_runs) {
        key(out, "rank_runs");
        for (size_t i = 0; i < n; i++) {
            buf_putc(out, i ? ',' : '[');
            run_text(out, &runs[i]);
        }
        buf_puts(out, n ? "]" : "[]");
    }
    buf_putc(out, '}');
    free(at);
}

int usage_job_write(struct api *api, struct buf *out, const char *job_id, const char *known,
                    int64_t now, bool runs, struct err *err)
{
    struct usage_job_run *list = NULL;
    size_t n = 0;
    char executor[32];
    snprintf(executor, sizeof(executor), "%s", known ? known : "");
    struct prices p;
    if (store_usage_job(api->store, job_id, now, &list, &n, executor, err) < 0)
        return -1;
    if (usage_prices_load(api, &p, err) < 0) {
        free(list);
        return -1;
    }
    job_text(out, job_id, executor, list, n, &p, runs);
    prices_release(&p);
    free(list);
    return 0;
}

void usage_jobs_get(struct request *req, struct response *res)
{
    struct err err;
    err_init(&err);
    struct buf *out = response_json_body(res, 200);
    if (usage_job_write(req->api, out, req->params[0], NULL, clock_now_ns(), true, &err) == 0)
        buf_putc(out, '\n');
    else
        problem_respond(req, res, &err);
    err_release(&err);
}
