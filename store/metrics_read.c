/*
 * store/metrics_read: reading metric series (store_metrics_query) and the log totals of
 * /metrics. Reads decode the blocks (metrics_block.c) overlapping the range; a short range is
 * returned point by point (sorted, the same point stored twice kept once), a long one is
 * folded into buckets of equal time as the blocks stream by.
 *
 * It does not write (metrics.c). Runs on the calling thread's read connection; results are new
 * jansson references.
 */
#include <math.h>

#include "core/jsonx.h"
#include "core/xalloc.h"
#include "store/internal.h"
#include "store/metrics.h"
#include "store/metrics_block.h"

enum {
    M_SERIES_LIST,
    M_RANGE,
    M_BLOCKS,
    M_LOG_TOTALS,
};

static const char *const sql[] = {
    [M_SERIES_LIST] = "SELECT pk, name, rank FROM metric_series WHERE job_pk = :pk"
                      " AND (:name IS NULL OR name = :name) AND (:rank < 0 OR rank = :rank)"
                      " ORDER BY name, rank",
    [M_RANGE] = "SELECT min(first_time), max(last_time), coalesce(sum(npoints), 0)"
                " FROM metric_blocks WHERE series = :s AND last_time >= :since"
                " AND first_time < :until",
    [M_BLOCKS] = "SELECT data FROM metric_blocks WHERE series = :s AND last_time >= :since"
                 " AND first_time < :until ORDER BY first_time",
    [M_LOG_TOTALS] = "SELECT coalesce(sum(lines), 0), coalesce(sum(dropped_lines), 0)"
                     " FROM log_state",
};

#define STMT(c, i, err) stmt((c), MOD_METRIC_READS, (i), sql[(i)], (err))

/* A series of the read side. */
struct seen {
    const char *name;
    int rank;
    int64_t id;
};

/* A value as JSON: a number, or "nan"/"inf"/"-inf". */
static json_t *value_json(double v)
{
    if (isnan(v))
        return json_string("nan");
    if (isinf(v))
        return json_string(v > 0 ? "inf" : "-inf");
    return json_real(v);
}

static json_t *step_json(int64_t step)
{
    return step >= 0 ? json_integer(step) : json_null();
}

struct range {
    int64_t since, until; /* [since, until) */
};

struct each {
    const struct range *r;
    void (*fn)(void *ctx, const struct mpoint *p);
    void *ctx;
};

static int block_row(void *ctx, sqlite3_stmt *s, struct err *err)
{
    (void)err;
    const struct each *e = ctx;
    const unsigned char *d = sqlite3_column_blob(s, 0);
    size_t len = (size_t)sqlite3_column_bytes(s, 0), off = 1;
    struct mpoint p = { 0 };
    if (len == 0 || d[0] != BLOCK_V1)
        return 0; /* a format this version does not know */
    while (off < len && metrics_block_decode(d, len, &off, &p))
        if (p.time >= e->r->since && p.time < e->r->until)
            e->fn(e->ctx, &p);
    return 0;
}

/* Calls fn for each stored point of the series in the range, block by block. */
static int each_point(struct conn *c, int64_t id, const struct range *r,
                      void (*fn)(void *ctx, const struct mpoint *p), void *ctx, struct err *err)
{
    sqlite3_stmt *s = STMT(c, M_BLOCKS, err);
    if (s) {
        bind_int(s, ":s", id);
        bind_int(s, ":since", r->since);
        bind_int(s, ":until", r->until);
    }
    struct each e = { r, fn, ctx };
    return sql_rows(c, s, "reading metric points", block_row, &e, err);
}

struct points {
    struct mpoint *p;
    size_t n, cap;
};

static void collect_point(void *ctx, const struct mpoint *p)
{
    struct points *ps = ctx;
    XGROW(ps->p, ps->n, ps->cap);
    ps->p[ps->n++] = *p;
}

/* Every point, sorted, a point stored twice (a replay, a retried heartbeat) kept once. */
static int raw_points(struct conn *c, int64_t id, const struct range *r, json_t *out,
                      int64_t *count, struct err *err)
{
    struct points ps = { 0 };
    if (each_point(c, id, r, collect_point, &ps, err) < 0) {
        free(ps.p);
        return -1;
    }
    if (ps.n > 1)
        qsort(ps.p, ps.n, sizeof(*ps.p), metrics_by_time);
    *count = 0;
    for (size_t i = 0; i < ps.n; i++) {
        if (i && ps.p[i].time == ps.p[i - 1].time && ps.p[i].seq == ps.p[i - 1].seq)
            continue;
        json_t *o = json_object();
        jsonx_set_time(o, "time", ps.p[i].time);
        json_object_set_new(o, "step", step_json(ps.p[i].step));
        json_object_set_new(o, "value", value_json(ps.p[i].value));
        json_array_append_new(out, o);
        (*count)++;
    }
    free(ps.p);
    return 0;
}

struct bucket {
    int64_t count, finite, last_time, step;
    double sum, min, max;
};

struct buckets {
    struct bucket *b;
    size_t n;
    int64_t t0, width;
};

static void fold_point(void *ctx, const struct mpoint *p)
{
    struct buckets *bs = ctx;
    size_t i = (size_t)((p->time - bs->t0) / bs->width);
    if (i >= bs->n)
        i = bs->n - 1;
    struct bucket *b = &bs->b[i];
    b->count++;
    if (p->time >= b->last_time) {
        b->last_time = p->time;
        b->step = p->step;
    }
    if (isnan(p->value))
        return;
    b->sum += p->value;
    b->min = b->finite && b->min < p->value ? b->min : p->value;
    b->max = b->finite && b->max > p->value ? b->max : p->value;
    b->finite++;
}

static int bucket_points(struct conn *c, int64_t id, const struct range *r, int64_t t0, int64_t t1,
                         int max_points, json_t *out, int64_t *count, struct err *err)
{
    struct buckets bs = { .n = (size_t)max_points, .t0 = t0, .width = (t1 - t0) / max_points + 1 };
    bs.b = xcalloc(bs.n, sizeof(*bs.b));
    int rc = each_point(c, id, r, fold_point, &bs, err);
    *count = 0;
    for (size_t i = 0; rc == 0 && i < bs.n; i++) {
        const struct bucket *b = &bs.b[i];
        if (!b->count)
            continue;
        json_t *o = json_object();
        jsonx_set_time(o, "time", b->last_time);
        json_object_set_new(o, "step", step_json(b->step));
        json_object_set_new(o, "value", value_json(b->finite ? b->sum / (double)b->finite : NAN));
        json_object_set_new(o, "min", value_json(b->finite ? b->min : NAN));
        json_object_set_new(o, "max", value_json(b->finite ? b->max : NAN));
        json_object_set_new(o, "count", json_integer(b->count));
        json_array_append_new(out, o);
        *count += b->count;
    }
    free(bs.b);
    return rc;
}

static void count_point(void *ctx, const struct mpoint *p)
{
    (void)p;
    (*(int64_t *)ctx)++;
}

/* One series: its range, then raw or bucketed points. */
static json_t *series_json(struct conn *c, const struct seen *se, const struct metric_query *q,
                           struct err *err)
{
    struct range r = { .since = q->since, .until = q->until > 0 ? q->until : INT64_MAX };
    sqlite3_stmt *s = STMT(c, M_RANGE, err);
    if (!s)
        return NULL;
    bind_int(s, ":s", se->id);
    bind_int(s, ":since", r.since);
    bind_int(s, ":until", r.until);
    int64_t t0 = 0, t1 = 0, stored = 0;
    bool clipped = false; /* blocks reach beyond the range: count the points in it */
    if (sqlite3_step(s) == SQLITE_ROW) {
        clipped = col_int(s, 0) < r.since || col_int(s, 1) >= r.until;
        t0 = col_int(s, 0) > r.since ? col_int(s, 0) : r.since;
        t1 = col_int(s, 1) < r.until ? col_int(s, 1) : r.until - 1;
        stored = col_int(s, 2);
    }
    sqlite3_reset(s);
    if (clipped && q->max_points > 0 && stored > q->max_points) {
        stored = 0;
        if (each_point(c, se->id, &r, count_point, &stored, err) < 0)
            return NULL;
    }
    bool down = q->max_points > 0 && stored > q->max_points;
    json_t *points = json_array();
    int64_t count = 0;
    int rc = down ? bucket_points(c, se->id, &r, t0, t1, q->max_points, points, &count, err)
                  : raw_points(c, se->id, &r, points, &count, err);
    if (rc < 0) {
        json_decref(points);
        return NULL;
    }
    return json_pack("{s:s,s:i,s:I,s:b,s:o}", "name", se->name, "rank", se->rank, "count",
                     (json_int_t)count, "downsampled", down, "points", points);
}

static void seen_fill(void *elem, sqlite3_stmt *s)
{
    *(struct seen *)elem = (struct seen){ .id = col_int(s, 0),
                                          .name = xstrdup(col_text(s, 1)),
                                          .rank = (int)col_int(s, 2) };
}

static void seen_drop(void *elem)
{
    free((char *)((struct seen *)elem)->name);
}

json_t *store_metrics_query(struct store *st, int64_t job_pk, const struct metric_query *q,
                            struct err *err)
{
    struct conn *c = store_reader(st, err);
    sqlite3_stmt *s = c ? STMT(c, M_SERIES_LIST, err) : NULL;
    if (s) {
        bind_int(s, ":pk", job_pk);
        bind_text(s, ":name", q->name);
        bind_int(s, ":rank", q->rank);
    }
    /* Collect the series first: their queries use other statements of this connection. */
    struct seen *list;
    size_t n;
    int rc = sql_array(c, s, "listing metric series", sizeof(*list), seen_fill, seen_drop, &list,
                       &n, err);
    json_t *series = rc == 0 ? json_array() : NULL;
    for (size_t i = 0; i < n && series; i++) {
        json_t *one = series_json(c, &list[i], q, err);
        if (one) {
            json_array_append_new(series, one);
        } else {
            json_decref(series);
            series = NULL;
        }
    }
    for (size_t i = 0; i < n; i++)
        seen_drop(&list[i]);
    free(list);
    return series ? json_pack("{s:o}", "series", series) : NULL;
}

int store_log_totals(struct store *st, int64_t *lines, int64_t *dropped, struct err *err)
{
    *lines = *dropped = 0;
    struct conn *c = store_reader(st, err);
    sqlite3_stmt *s = c ? STMT(c, M_LOG_TOTALS, err) : NULL;
    if (!s)
        return -1;
    int rc = sqlite3_step(s);
    if (rc == SQLITE_ROW) {
        *lines = col_int(s, 0);
        *dropped = col_int(s, 1);
    }
    sqlite3_reset(s);
    return rc == SQLITE_ROW ? 0 : sql_fail(c, err, "reading log totals");
}
