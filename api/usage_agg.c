/*
 * usage_agg: summing the store's usage rows into the groups a query asks for (see
 * usage_agg.h). Groups live in an open-addressing table keyed by their values joined with
 * 0x1f; a query over a year reads days x groups rows, so a row costs one hash and a few compares.
 */
#include "api/usage_agg.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/buf.h"
#include "core/clock.h"
#include "core/parse.h"
#include "core/xalloc.h"
#include "job/names.h"

static const char *const dim_names[] = {
    [USAGE_BY_OWNER] = "owner",
    [USAGE_BY_QUEUE] = "queue",
    [USAGE_BY_EXECUTOR] = "executor",
    [USAGE_BY_INSTANCE_TYPE] = "instance_type",
    [USAGE_BY_CAPACITY_TYPE] = "capacity_type",
    [USAGE_BY_DAY] = "day",
};

static int set_label_key(struct usage_query *q, const char *key, size_t len, struct err *err)
{
    char k[64];
    if (len == 0 || len >= sizeof(k))
        return err_set(err, ERR_INVALID, "a label key is 1 to 63 characters");
    memcpy(k, key, len);
    k[len] = '\0';
    const char *why = names_label_key(k);
    if (why)
        return err_set(err, ERR_INVALID, "label key '%s': %s", k, why);
    if (q->label_key[0] && strcmp(q->label_key, k) != 0)
        return err_set(err, ERR_INVALID,
                       "one label key per query: '%s' and '%s' (usage is kept per label)",
                       q->label_key, k);
    snprintf(q->label_key, sizeof(q->label_key), "%s", k);
    return 0;
}

static int add_dim(struct usage_query *q, const char *name, size_t len, struct err *err)
{
    enum usage_dim d = USAGE_BY_LABEL;
    if (len > 6 && strncmp(name, "label:", 6) == 0) {
        if (set_label_key(q, name + 6, len - 6, err) < 0)
            return -1;
    } else {
        size_t i = 0;
        while (i < USAGE_BY_LABEL &&
               (strlen(dim_names[i]) != len || strncmp(dim_names[i], name, len)))
            i++;
        if (i == USAGE_BY_LABEL)
            return err_set(err, ERR_INVALID,
                           "group_by '%.*s' is unknown; use owner, queue, executor, "
                           "instance_type, capacity_type, day or label:KEY",
                           (int)(len > 64 ? 64 : len), name);
        d = (enum usage_dim)i;
    }
    for (size_t i = 0; i < q->ndims; i++)
        if (q->dims[i] == d)
            return err_set(err, ERR_INVALID, "group_by names %s twice",
                           d == USAGE_BY_LABEL ? "a label" : dim_names[d]);
    if (q->ndims == USAGE_MAX_DIMS)
        return err_set(err, ERR_INVALID, "group_by takes at most %d terms", USAGE_MAX_DIMS);
    q->dims[q->ndims++] = d;
    return 0;
}

int usage_query_group_by(struct usage_query *q, const char *group_by, struct err *err)
{
    for (const char *p = group_by; p && *p;) {
        size_t len = strcspn(p, ",");
        if (len && add_dim(q, p, len, err) < 0)
            return -1;
        p += len + (p[len] == ',');
    }
    return 0;
}

int usage_query_label(struct usage_query *q, const char *label, struct err *err)
{
    const char *eq = strchr(label, '=');
    if (!eq)
        return err_set(err, ERR_INVALID, "label must be KEY=VALUE, e.g. team=nlp");
    if (names_label_value(eq + 1))
        return err_set(err, ERR_INVALID, "label value '%.64s': %s", eq + 1,
                       names_label_value(eq + 1));
    q->label_value = eq + 1;
    return set_label_key(q, label, (size_t)(eq - label), err);
}

bool usage_query_by_class(const struct usage_query *q)
{
    for (size_t k = 0; k < q->ndims; k++)
        if (q->dims[k] == USAGE_BY_OWNER || q->dims[k] == USAGE_BY_QUEUE)
            return false;
    return !q->owner && !q->queue;
}

int usage_time_parse(const char *text, int64_t now, int64_t *ns)
{
    int64_t d;
    char full[40];
    if (strcmp(text, "now") == 0) {
        *ns = now;
        return 0;
    }
    if (clock_parse(text, ns) == 0)
        return 0;
    if (strlen(text) == 10 && text[4] == '-' && text[7] == '-') {
        snprintf(full, sizeof(full), "%sT00:00:00Z", text);
        return clock_parse(full, ns);
    }
    if (parse_duration(text + (text[0] == '-'), &d) < 0 || d < 0 || d > now)
        return -1;
    *ns = now - d;
    return 0;
}

/* ---- the groups ---- */

struct group {
    char *key;                  /* the values joined with 0x1f (NULL as 0x1e) */
    char *vals[USAGE_MAX_DIMS]; /* NULL: no value (a job without the label, unknown type) */
    struct usage_sum sum;
};

/* The price of a group's rows, looked up once per group of the store (rows of runs still
 * going have groups of their own, made per row, and are looked up each time). */
#define PRICE_CACHE 256
struct price_memo {
    const struct usage_group *g;
    bool priced;
    double gpu_hour;
};

struct usage_agg {
    const struct usage_query *q;
    const struct prices *p;
    struct group *g; /* open addressing; key NULL: free */
    size_t n, cap;
    struct usage_sum total;
    struct price_memo memo[PRICE_CACHE];
};

struct usage_agg *usage_agg_new(const struct usage_query *q, const struct prices *p)
{
    struct usage_agg *a = XNEW(struct usage_agg);
    a->q = q;
    a->p = p;
    a->cap = 64;
    a->g = xcalloc(a->cap, sizeof(*a->g));
    return a;
}

void usage_agg_free(struct usage_agg *a)
{
    if (!a)
        return;
    for (size_t i = 0; i < a->cap; i++) {
        free(a->g[i].key);
        for (size_t k = 0; k < USAGE_MAX_DIMS; k++)
            free(a->g[i].vals[k]);
    }
    free(a->g);
    free(a);
}

static uint64_t hash(const char *s)
{
    uint64_t h = 1469598103934665603ULL;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ULL;
    return h;
}

static struct group *slot(struct group *g, size_t cap, const char *key)
{
    size_t i = hash(key) & (cap - 1);
    while (g[i].key && strcmp(g[i].key, key) != 0)
        i = (i + 1) & (cap - 1);
    return &g[i];
}

static void grow(struct usage_agg *a)
{
    size_t cap = a->cap * 2;
    struct group *g = xcalloc(cap, sizeof(*g));
    for (size_t i = 0; i < a->cap; i++)
        if (a->g[i].key)
            *slot(g, cap, a->g[i].key) = a->g[i];
    free(a->g);
    a->g = g;
    a->cap = cap;
}

static struct group *group_get(struct usage_agg *a, const char *key, const char *const *vals)
{
    struct group *g = slot(a->g, a->cap, key);
    if (g->key)
        return g;
    if ((a->n + 1) * 4 > a->cap * 3) {
        grow(a);
        g = slot(a->g, a->cap, key);
    }
    g->key = xstrdup(key);
    for (size_t k = 0; k < a->q->ndims; k++)
        g->vals[k] = vals[k] ? xstrdup(vals[k]) : NULL;
    a->n++;
    return g;
}

static const char *queue_name(const char *q)
{
    return q && *q ? q : "default";
}

static bool wanted(const struct usage_query *q, const struct usage_row *r)
{
    const struct usage_group *g = r->group;
    return (!q->owner || strcmp(q->owner, g->owner) == 0) &&
           (!q->queue || strcmp(q->queue, queue_name(g->queue)) == 0) &&
           (!q->executor || strcmp(q->executor, g->executor) == 0) &&
           (!q->label_value || (r->label && strcmp(q->label_value, r->label) == 0));
}

/* "2026-03-01" for days since the epoch. */
static void day_text(int64_t day, char out[16])
{
    time_t t = (time_t)(day * 86400);
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(out, 16, "%Y-%m-%d", &tm);
}

static const char *nonempty(const char *s)
{
    return s && *s ? s : NULL;
}

static void sum_add(struct usage_sum *s, const struct usage_figures *f, bool priced,
                    double gpu_hour)
{
    s->gpu_seconds += f->gpu_seconds;
    s->rank_seconds += f->rank_seconds;
    s->runs += f->runs;
    s->jobs += f->jobs;
    if (priced)
        s->cost += f->gpu_seconds / 3600 * gpu_hour;
    else
        s->unpriced_gpu_seconds += f->gpu_seconds;
}

void usage_sum_add(struct usage_sum *s, const struct prices *p, const char *executor,
                   const char *instance_type, const char *capacity_type,
                   const struct usage_figures *f)
{
    double price = 0;
    bool priced = p && prices_lookup(p, executor, instance_type, capacity_type, &price);
    sum_add(s, f, priced, price);
}

static bool price_of(struct usage_agg *a, const struct usage_row *r, double *gpu_hour)
{
    const struct usage_group *g = r->group;
    if (!a->p)
        return false;
    struct price_memo *m = &a->memo[((uintptr_t)g / sizeof(*g)) % PRICE_CACHE];
    if (r->running || m->g != g) {
        m->g = r->running ? NULL : g;
        m->priced =
            prices_lookup(a->p, g->executor, g->instance_type, g->capacity_type, &m->gpu_hour);
    }
    *gpu_hour = m->gpu_hour;
    return m->priced;
}

int usage_agg_add(void *agg, const struct usage_row *r, struct err *err)
{
    (void)err;
    struct usage_agg *a = agg;
    const struct usage_query *q = a->q;
    if (!wanted(q, r))
        return 0;
    const struct usage_group *g = r->group;
    const char *vals[USAGE_MAX_DIMS];
    char day[16];
    char key[1024];
    size_t used = 0;
    for (size_t k = 0; k < q->ndims; k++) {
        switch (q->dims[k]) {
        case USAGE_BY_OWNER:
            vals[k] = g->owner;
            break;
        case USAGE_BY_QUEUE:
            vals[k] = queue_name(g->queue);
            break;
        case USAGE_BY_EXECUTOR:
            vals[k] = g->executor;
            break;
        case USAGE_BY_INSTANCE_TYPE:
            vals[k] = nonempty(g->instance_type);
            break;
        case USAGE_BY_CAPACITY_TYPE:
            vals[k] = nonempty(g->capacity_type);
            break;
        case USAGE_BY_DAY:
            day_text(r->day, day), vals[k] = day;
            break;
        case USAGE_BY_LABEL:
            vals[k] = r->label;
            break;
        }
        const char *v = vals[k] ? vals[k] : "\x1e";
        if (k && used < sizeof(key) - 1)
            key[used++] = '\x1f';
        size_t len = strlen(v), room = sizeof(key) - 1 - used;
        len = len < room ? len : room; /* values are bounded far below: cut, never overrun */
        memcpy(key + used, v, len);
        used += len;
    }
    key[used] = '\0';
    struct group *grp = group_get(a, key, vals);
    double price = 0;
    bool priced = price_of(a, r, &price);
    sum_add(&grp->sum, &r->f, priced, price);
    sum_add(&a->total, &r->f, priced, price);
    return 0;
}

/* Rounded so that sums of many rows do not show their last-bit noise. */
static json_t *amount(double v, double unit)
{
    return json_real(round(v / unit) * unit);
}

void usage_sum_json(json_t *o, const struct usage_sum *s, const struct prices *p)
{
    json_object_set_new(o, "gpu_seconds", amount(s->gpu_seconds, 1e-3));
    json_object_set_new(o, "gpu_hours", amount(s->gpu_seconds / 3600, 1e-6));
    json_object_set_new(o, "rank_seconds", amount(s->rank_seconds, 1e-3));
    json_object_set_new(o, "runs", json_integer(s->runs));
    json_object_set_new(o, "jobs", json_integer(s->jobs));
    json_object_set_new(o, "cost", p && p->currency[0] ? amount(s->cost, 1e-6) : json_null());
    json_object_set_new(o, "unpriced_gpu_seconds", amount(s->unpriced_gpu_seconds, 1e-3));
}

static int dim_index(const struct usage_query *q, enum usage_dim d)
{
    for (size_t k = 0; k < q->ndims; k++)
        if (q->dims[k] == d)
            return (int)k;
    return -1;
}

static int by_order(const void *x, const void *y, void *q)
{
    const struct group *a = *(struct group *const *)x, *b = *(struct group *const *)y;
    int d = dim_index(q, USAGE_BY_DAY);
    if (d >= 0) {
        int c = strcmp(a->vals[d], b->vals[d]);
        if (c)
            return c;
    }
    if (a->sum.gpu_seconds != b->sum.gpu_seconds)
        return a->sum.gpu_seconds < b->sum.gpu_seconds ? 1 : -1;
    if (a->sum.rank_seconds != b->sum.rank_seconds)
        return a->sum.rank_seconds < b->sum.rank_seconds ? 1 : -1;
    return strcmp(a->key, b->key);
}

static json_t *group_json(const struct usage_agg *a, const struct group *g)
{
    json_t *o = json_object();
    for (size_t k = 0; k < a->q->ndims; k++) {
        json_t *v = g->vals[k] ? json_string(g->vals[k]) : json_null();
        if (a->q->dims[k] == USAGE_BY_LABEL)
            json_object_set_new(o, "labels", json_pack("{s:o}", a->q->label_key, v));
        else
            json_object_set_new(o, dim_names[a->q->dims[k]], v);
    }
    usage_sum_json(o, &g->sum, a->p);
    return o;
}

json_t *usage_agg_json(struct usage_agg *a)
{
    const struct usage_query *q = a->q;
    struct group **order = xcalloc(a->n + 1, sizeof(*order));
    size_t n = 0;
    for (size_t i = 0; i < a->cap; i++)
        if (a->g[i].key)
            order[n++] = &a->g[i];
    qsort_r(order, n, sizeof(*order), by_order, (void *)q);
    json_t *groups = json_array(), *by = json_array();
    for (size_t i = 0; i < n && i < q->limit; i++)
        json_array_append_new(groups, group_json(a, order[i]));
    free(order);
    for (size_t k = 0; k < q->ndims; k++) {
        char name[80];
        snprintf(name, sizeof(name), "label:%s", q->label_key);
        json_array_append_new(
            by, json_string(q->dims[k] == USAGE_BY_LABEL ? name : dim_names[q->dims[k]]));
    }
    char from[CLOCK_RFC3339_MAX], to[CLOCK_RFC3339_MAX];
    json_t *total = json_object();
    usage_sum_json(total, &a->total, a->p);
    const char *currency = a->p && a->p->currency[0] ? a->p->currency : NULL;
    return json_pack("{s:s,s:s,s:o,s:o,s:o,s:o,s:b}", "from", clock_format(q->from, from), "to",
                     clock_format(q->to, to), "group_by", by, "currency",
                     currency ? json_string(currency) : json_null(), "groups", groups, "total",
                     total, "truncated", n > q->limit);
}
