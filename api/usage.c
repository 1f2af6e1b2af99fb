/*
 * usage: the routes of GPU and rank usage and its cost (OpenAPI tag "usage"):
 *
 *   GET /v1/usage?from=&to=&group_by=&owner=&queue=&executor=&label=&limit=
 *   GET /v1/usage/jobs/{id}   a job's usage per attempt and run (after it is deleted too)
 *   GET /v1/usage/prices      the price table
 *   PUT /v1/usage/prices      replaces it (admin)
 *
 * and the trainyard_usage_* counters for /metrics; a job's usage is api/usage_job.c. What is
 * counted and how it is kept: store/usage.h; summing and pricing: api/usage_agg.h and
 * api/usage_price.h. Figures are written with 12 significant digits: sums of many runs carry
 * binary noise in the last of the 17 jansson writes.
 */
#include "api/usage.h"

#include <pthread.h>

#include "api/handlers.h"
#include "api/usage_agg.h"
#include "api/usage_price.h"
#include "core/clock.h"
#include "core/jsonx.h"
#include "core/parse.h"
#include "core/prom.h"
#include "core/xalloc.h"
#include "store/usage.h"

#define DEFAULT_RANGE  (30 * USAGE_NS_PER_DAY)
#define DEFAULT_LIMIT  1000
#define MAX_LIMIT      10000
#define MAX_FILTER_LEN 253

static char *dump(const json_t *doc)
{
    return json_dumps(doc, JSON_COMPACT | JSON_REAL_PRECISION(12));
}

/* Writes doc (stolen) as the JSON answer. */
static void respond(struct response *res, int status, json_t *doc)
{
    char *text = dump(doc);
    struct buf *out = response_json_body(res, status);
    buf_puts(out, text);
    buf_putc(out, '\n');
    free(text);
    json_decref(doc);
}

/* The price table parsed, kept while the stored one has the same stamp: a job's GET reads one
 * small row instead of parsing the table again. */
static pthread_mutex_t cache_lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
    const struct store *st;
    int64_t stamp;
    struct prices p;
} cache;

int usage_prices_load(struct api *api, struct prices *p, struct err *err)
{
    memset(p, 0, sizeof(*p));
    int64_t stamp = store_usage_prices_stamp(api->store, err);
    if (err_is_set(err))
        return -1;
    pthread_mutex_lock(&cache_lock);
    bool hit = cache.st == api->store && cache.stamp == stamp;
    if (hit)
        prices_copy(p, &cache.p);
    pthread_mutex_unlock(&cache_lock);
    if (hit)
        return 0;
    json_t *doc = stamp ? store_usage_prices_get(api->store, err) : NULL;
    prices_init(p, doc);
    json_decref(doc);
    if (err_is_set(err))
        return -1;
    pthread_mutex_lock(&cache_lock);
    prices_release(&cache.p);
    prices_copy(&cache.p, p);
    cache.st = api->store;
    cache.stamp = stamp;
    pthread_mutex_unlock(&cache_lock);
    return 0;
}

struct unknown {
    char bad[64];
};

static void check_param(void *ctx, const char *k, const char *v)
{
    static const char *const allowed[] = { "from",     "to",    "group_by", "owner", "queue",
                                           "executor", "label", "limit",    NULL };
    (void)v;
    struct unknown *u = ctx;
    for (const char *const *a = allowed; *a; a++)
        if (strcmp(*a, k) == 0)
            return;
    if (!u->bad[0])
        snprintf(u->bad, sizeof(u->bad), "%s", k);
}

static int time_param(struct request *req, const char *name, int64_t now, int64_t def, int64_t *out,
                      struct err *err)
{
    const char *t = request_query(req, name);
    *out = def;
    if (t && usage_time_parse(t, now, out) < 0)
        return err_set(err, ERR_INVALID,
                       "parameter '%s' must be an RFC 3339 time, a date (2026-03-01), now, or "
                       "a duration before now (7d, 36h)",
                       name);
    return 0;
}

/* A filter's value, bounded. */
static int filter_param(struct request *req, const char *name, const char **out, struct err *err)
{
    *out = request_query(req, name);
    if (*out && (!**out || strlen(*out) > MAX_FILTER_LEN))
        return err_set(err, ERR_INVALID, "parameter '%s' must be 1 to %d bytes", name,
                       MAX_FILTER_LEN);
    return 0;
}

/* The query of GET /v1/usage from the request; ERR_INVALID naming the parameter. */
static int query_of(struct request *req, int64_t now, struct usage_query *q, struct err *err)
{
    struct unknown u = { "" };
    if (req->query_each)
        req->query_each(req, check_param, &u);
    if (u.bad[0])
        return err_set(err, ERR_INVALID, "unknown parameter '%s'", u.bad);
    memset(q, 0, sizeof(*q));
    int64_t limit = DEFAULT_LIMIT;
    const char *lim = request_query(req, "limit"), *label = request_query(req, "label");
    if (lim && parse_int64(lim, 1, MAX_LIMIT, &limit) < 0)
        return err_set(err, ERR_INVALID, "parameter 'limit' must be 1 to %d", MAX_LIMIT);
    q->limit = (size_t)limit;
    if (time_param(req, "to", now, now, &q->to, err) < 0 ||
        time_param(req, "from", now, q->to - DEFAULT_RANGE, &q->from, err) < 0)
        return -1;
    if (q->to <= q->from)
        return err_set(err, ERR_INVALID, "parameter 'from' must be before 'to'");
    if (q->to - q->from > USAGE_MAX_RANGE)
        return err_set(err, ERR_INVALID, "parameters 'from' to 'to' span more than %lld days",
                       (long long)(USAGE_MAX_RANGE / USAGE_NS_PER_DAY));
    if (usage_query_group_by(q, request_query(req, "group_by"), err) < 0 ||
        (label && usage_query_label(q, label, err) < 0))
        return -1;
    return filter_param(req, "owner", &q->owner, err) < 0 ||
                   filter_param(req, "queue", &q->queue, err) < 0 ||
                   filter_param(req, "executor", &q->executor, err) < 0
               ? -1
               : 0;
}

void usage_get(struct request *req, struct response *res)
{
    struct err err;
    err_init(&err);
    int64_t now = clock_now_ns();
    struct usage_query q;
    struct prices prices;
    memset(&prices, 0, sizeof(prices));
    struct usage_agg *agg = NULL;
    if (query_of(req, now, &q, &err) < 0 || usage_prices_load(req->api, &prices, &err) < 0)
        goto out;
    agg = usage_agg_new(&q, &prices);
    struct usage_scan scan = { .from = q.from,
                               .to = q.to,
                               .now = now,
                               .label_key = q.label_key[0] ? q.label_key : NULL,
                               .label_value = q.label_value,
                               .by_class = usage_query_by_class(&q) };
    if (store_usage_scan(req->api->store, &scan, usage_agg_add, agg, &err) < 0)
        goto out;
    respond(res, 200, usage_agg_json(agg));
out:
    if (err_is_set(&err))
        problem_respond(req, res, &err);
    usage_agg_free(agg);
    prices_release(&prices);
    err_release(&err);
}

void usage_prices_get(struct request *req, struct response *res)
{
    struct err err;
    err_init(&err);
    json_t *doc = store_usage_prices_get(req->api->store, &err);
    if (err_is_set(&err))
        problem_respond(req, res, &err);
    else
        respond(res, 200, doc ? doc : json_pack("{s:n,s:[]}", "currency", "prices"));
    err_release(&err);
}

void usage_prices_update(struct request *req, struct response *res)
{
    json_t *doc = request_body_doc(req, res);
    if (!doc)
        return;
    struct err err;
    err_init(&err);
    json_t *table = prices_check(doc, &err);
    if (table &&
        store_usage_prices_set(req->api->store, table, req->who.name, req->request_id, &err) == 0)
        respond(res, 200, json_incref(table));
    else
        problem_respond(req, res, &err);
    json_decref(table);
    json_decref(doc);
    err_release(&err);
}

/* ---- /metrics ---- */

struct totals {
    struct usage_group *g;
    struct usage_figures *f;
    size_t n;
};

static void total_row(void *ctx, const struct usage_group *g, const struct usage_figures *f)
{
    struct totals *t = ctx;
    t->g = xrealloc(t->g, (t->n + 1) * sizeof(*t->g));
    t->f = xrealloc(t->f, (t->n + 1) * sizeof(*t->f));
    t->g[t->n] = (struct usage_group){ .queue = xstrdup(g->queue[0] ? g->queue : "default"),
                                       .executor = xstrdup(g->executor),
                                       .instance_type = xstrdup(g->instance_type),
                                       .capacity_type = xstrdup(g->capacity_type) };
    t->f[t->n++] = *f;
}

static void family(struct prom *p, const struct totals *t, const char *name, const char *help,
                   int which)
{
    prom_family(p, name, PROM_COUNTER, help);
    for (size_t i = 0; i < t->n; i++) {
        const struct usage_figures *f = &t->f[i];
        double v = which == 0 ? f->gpu_seconds : which == 1 ? f->rank_seconds : (double)f->runs;
        prom_sample(p, NULL, v, "executor", t->g[i].executor, "queue", t->g[i].queue,
                    "instance_type", t->g[i].instance_type, "capacity_type", t->g[i].capacity_type,
                    NULL);
    }
}

void usage_metrics(struct api *api, struct buf *out)
{
    struct totals t = { 0 };
    if (store_usage_totals(api->store, total_row, &t, NULL) == 0) {
        struct prom p;
        prom_init(&p, out);
        family(&p, &t, "trainyard_usage_gpu_seconds_total", "GPU-seconds of ended rank runs.", 0);
        family(&p, &t, "trainyard_usage_rank_seconds_total", "Seconds of ended rank runs.", 1);
        family(&p, &t, "trainyard_usage_runs_total", "Rank runs ended and counted.", 2);
    }
    for (size_t i = 0; i < t.n; i++) {
        free((char *)t.g[i].queue);
        free((char *)t.g[i].executor);
        free((char *)t.g[i].instance_type);
        free((char *)t.g[i].capacity_type);
    }
    free(t.g);
    free(t.f);
}
