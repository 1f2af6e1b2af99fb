/*
 * store/metrics: metric series and points (see metrics.h). Appends are copied into a heap batch
 * that the writer applies and frees; series ids are looked up once per distinct (name, rank)
 * of a batch. Reads run on the caller's connection; downsampling is one GROUP BY per series.
 * NaN is stored as NULL (SQLite has no NaN); infinities are stored as they are.
 */
#include "store/metrics.h"

#include <math.h>

#include "server/core/jsonx.h"
#include "server/core/xalloc.h"
#include "store/internal.h"

enum {
    M_SERIES_ADD,
    M_SERIES_GET,
    M_POINT_ADD,
    M_SERIES_LIST,
    M_RANGE,
    M_POINTS,
    M_BUCKETS,
    M_LOG_TOTALS,
};

static const char *const sql[] = {
    [M_SERIES_ADD] = "INSERT INTO metric_series (job_pk, name, rank, source)"
                     " VALUES (:pk, :name, :rank, :source)"
                     " ON CONFLICT (job_pk, name, rank) DO NOTHING",
    [M_SERIES_GET] = "SELECT pk, source FROM metric_series WHERE job_pk = :pk AND name = :name"
                     " AND rank = :rank",
    [M_POINT_ADD] = "INSERT OR IGNORE INTO metric_points (series, time, seq, step, value)"
                    " VALUES (:series, :time, :seq, :step, :value)",
    [M_SERIES_LIST] = "SELECT pk, name, rank FROM metric_series WHERE job_pk = :pk"
                      " AND (:name IS NULL OR name = :name) AND (:rank < 0 OR rank = :rank)"
                      " ORDER BY name, rank",
    [M_RANGE] = "SELECT count(*), min(time), max(time) FROM metric_points WHERE series = :s"
                " AND time >= :since AND time < :until",
    [M_POINTS] = "SELECT time, step, value FROM metric_points WHERE series = :s"
                 " AND time >= :since AND time < :until ORDER BY time, seq",
    [M_BUCKETS] = "SELECT (time - :t0) / :width AS b, max(time), max(step), avg(value),"
                  " min(value), max(value), count(*) FROM metric_points WHERE series = :s"
                  " AND time >= :since AND time < :until GROUP BY b ORDER BY b",
    [M_LOG_TOTALS] = "SELECT coalesce(sum(lines), 0), coalesce(sum(dropped_lines), 0)"
                     " FROM log_state",
};

#define STMT(c, i, err) stmt((c), MOD_METRICS, (i), sql[(i)], (err))

struct mpoint {
    char name[METRIC_NAME_MAX];
    int rank;
    int64_t step, time, seq;
    double value;
};

struct batch {
    int64_t pk;
    struct mpoint *p;
    size_t n;
};

/* Series ids seen in one batch. */
struct seen {
    const char *name;
    int rank;
    int64_t id;
    bool log;  /* the source of the points looked up (seq > 0) */
    bool keep; /* that source is the series' own */
};

/* Log lines (seq > 0) and worker reports (seq 0) often carry the same metric: a series keeps
 * the points of the source that created it, so no step shows up twice. */
static const char *source_of(const struct mpoint *p)
{
    return p->seq > 0 ? "log" : "report";
}

static struct batch *batch_new(int64_t pk, const struct metric_point *p, size_t n)
{
    struct batch *b = XNEW(struct batch);
    b->pk = pk;
    b->n = n;
    b->p = xcalloc(n ? n : 1, sizeof(*b->p));
    for (size_t i = 0; i < n; i++) {
        snprintf(b->p[i].name, sizeof(b->p[i].name), "%s", p[i].name ? p[i].name : "");
        b->p[i].rank = p[i].rank;
        b->p[i].step = p[i].step;
        b->p[i].time = p[i].time;
        b->p[i].seq = p[i].seq;
        b->p[i].value = p[i].value;
    }
    return b;
}

static void batch_free(struct batch *b)
{
    if (!b)
        return;
    free(b->p);
    free(b);
}

static int series_id(struct conn *c, int64_t pk, const struct mpoint *p, struct seen *out,
                     struct err *err)
{
    sqlite3_stmt *s = STMT(c, M_SERIES_ADD, err);
    if (!s)
        return -1;
    bind_int(s, ":pk", pk);
    bind_text(s, ":name", p->name);
    bind_int(s, ":rank", p->rank);
    bind_text(s, ":source", source_of(p));
    if (sql_exec_stmt(c, s, err, "storing a metric series") < 0)
        return -1;
    s = STMT(c, M_SERIES_GET, err);
    if (!s)
        return -1;
    bind_int(s, ":pk", pk);
    bind_text(s, ":name", p->name);
    bind_int(s, ":rank", p->rank);
    int rc = sqlite3_step(s);
    if (rc == SQLITE_ROW) {
        out->id = col_int(s, 0);
        out->keep = strcmp(col_text(s, 1), source_of(p)) == 0;
    }
    sqlite3_reset(s);
    return rc == SQLITE_ROW ? 0 : sql_fail(c, err, "finding a metric series");
}

static int put_point(struct conn *c, int64_t series, const struct mpoint *p, struct err *err)
{
    sqlite3_stmt *s = STMT(c, M_POINT_ADD, err);
    if (!s)
        return -1;
    bind_int(s, ":series", series);
    bind_int(s, ":time", p->time);
    bind_int(s, ":seq", p->seq);
    bind_int(s, ":step", p->step);
    if (isnan(p->value))
        bind_null(s, ":value");
    else
        sqlite3_bind_double(s, sqlite3_bind_parameter_index(s, ":value"), p->value);
    return sql_exec_stmt(c, s, err, "storing a metric point");
}

static int apply_append(struct conn *c, void *arg, struct err *err)
{
    const struct batch *b = arg;
    struct seen *seen = xcalloc(b->n ? b->n : 1, sizeof(*seen));
    size_t nseen = 0;
    int rc = 0;
    for (size_t i = 0; i < b->n && rc == 0; i++) {
        const struct mpoint *p = &b->p[i];
        size_t k = 0;
        bool log = p->seq > 0;
        while (k < nseen && (seen[k].rank != p->rank || seen[k].log != log ||
                             strcmp(seen[k].name, p->name) != 0))
            k++;
        if (k == nseen) {
            seen[k] = (struct seen){ .name = p->name, .rank = p->rank, .log = log };
            rc = series_id(c, b->pk, p, &seen[k], err);
            nseen++;
        }
        if (rc == 0 && seen[k].keep)
            rc = put_point(c, seen[k].id, p, err);
    }
    free(seen);
    return rc;
}

static void appended(void *ctx, int rc, struct err *err)
{
    (void)rc;
    (void)err;
    batch_free(ctx);
}

void store_metrics_append_async(struct store *st, int64_t job_pk, const struct metric_point *p,
                                size_t n)
{
    if (n == 0)
        return;
    struct batch *b = batch_new(job_pk, p, n);
    store_write_async(st, apply_append, b, appended, b);
}

int store_metrics_append(struct store *st, int64_t job_pk, const struct metric_point *p, size_t n,
                         struct err *err)
{
    if (n == 0)
        return 0;
    struct batch *b = batch_new(job_pk, p, n);
    int rc = store_write_wait(st, apply_append, b, err);
    batch_free(b);
    return rc;
}

/* A value as JSON: numbers, or "nan"/"inf"/"-inf" (NULL column = NaN). */
static json_t *value_json(sqlite3_stmt *s, int i)
{
    if (sqlite3_column_type(s, i) == SQLITE_NULL)
        return json_string("nan");
    double v = sqlite3_column_double(s, i);
    if (isinf(v))
        return json_string(v > 0 ? "inf" : "-inf");
    return json_real(v);
}

static void bind_range(sqlite3_stmt *s, int64_t id, const struct metric_query *q)
{
    bind_int(s, ":s", id);
    bind_int(s, ":since", q->since);
    bind_int(s, ":until", q->until > 0 ? q->until : INT64_MAX);
}

static int raw_points(struct conn *c, int64_t id, const struct metric_query *q, json_t *out,
                      struct err *err)
{
    sqlite3_stmt *s = STMT(c, M_POINTS, err);
    if (!s)
        return -1;
    bind_range(s, id, q);
    int rc;
    while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
        json_t *p = json_object();
        jsonx_set_time(p, "time", col_int(s, 0));
        json_object_set_new(p, "step",
                            col_int(s, 1) >= 0 ? json_integer(col_int(s, 1)) : json_null());
        json_object_set_new(p, "value", value_json(s, 2));
        json_array_append_new(out, p);
    }
    sqlite3_reset(s);
    return rc == SQLITE_DONE ? 0 : sql_fail(c, err, "reading metric points");
}

static int bucket_points(struct conn *c, int64_t id, const struct metric_query *q, int64_t t0,
                         int64_t t1, json_t *out, struct err *err)
{
    sqlite3_stmt *s = STMT(c, M_BUCKETS, err);
    if (!s)
        return -1;
    bind_range(s, id, q);
    int64_t width = (t1 - t0) / q->max_points + 1;
    bind_int(s, ":t0", t0);
    bind_int(s, ":width", width);
    int rc;
    while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
        json_t *p = json_object();
        jsonx_set_time(p, "time", col_int(s, 1));
        json_object_set_new(p, "step",
                            col_int(s, 2) >= 0 ? json_integer(col_int(s, 2)) : json_null());
        json_object_set_new(p, "value", value_json(s, 3));
        json_object_set_new(p, "min", value_json(s, 4));
        json_object_set_new(p, "max", value_json(s, 5));
        json_object_set_new(p, "count", json_integer(col_int(s, 6)));
        json_array_append_new(out, p);
    }
    sqlite3_reset(s);
    return rc == SQLITE_DONE ? 0 : sql_fail(c, err, "downsampling metric points");
}

/* One series: its range, then raw or bucketed points. */
static json_t *series_json(struct conn *c, int64_t id, const char *name, int rank,
                           const struct metric_query *q, struct err *err)
{
    sqlite3_stmt *s = STMT(c, M_RANGE, err);
    if (!s)
        return NULL;
    bind_range(s, id, q);
    int64_t count = 0, t0 = 0, t1 = 0;
    if (sqlite3_step(s) == SQLITE_ROW) {
        count = col_int(s, 0);
        t0 = col_int(s, 1);
        t1 = col_int(s, 2);
    }
    sqlite3_reset(s);
    bool down = q->max_points > 0 && count > q->max_points;
    json_t *points = json_array();
    int rc =
        down ? bucket_points(c, id, q, t0, t1, points, err) : raw_points(c, id, q, points, err);
    if (rc < 0) {
        json_decref(points);
        return NULL;
    }
    return json_pack("{s:s,s:i,s:I,s:b,s:o}", "name", name, "rank", rank, "count",
                     (json_int_t)count, "downsampled", down, "points", points);
}

json_t *store_metrics_query(struct store *st, int64_t job_pk, const struct metric_query *q,
                            struct err *err)
{
    struct conn *c = store_reader(st, err);
    sqlite3_stmt *s = c ? STMT(c, M_SERIES_LIST, err) : NULL;
    if (!s)
        return NULL;
    bind_int(s, ":pk", job_pk);
    bind_text(s, ":name", q->name);
    bind_int(s, ":rank", q->rank);
    /* Collect the series first: their queries use other statements of this connection. */
    struct seen *list = NULL;
    size_t n = 0, cap = 0;
    int rc;
    while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
        if (n == cap) {
            cap = cap ? cap * 2 : 16;
            list = xrealloc(list, cap * sizeof(*list));
        }
        list[n++] = (struct seen){ .id = col_int(s, 0),
                                   .name = xstrdup(col_text(s, 1)),
                                   .rank = (int)col_int(s, 2) };
    }
    sqlite3_reset(s);
    json_t *series = rc == SQLITE_DONE ? json_array() : NULL;
    if (!series)
        sql_fail(c, err, "listing metric series");
    for (size_t i = 0; i < n && series; i++) {
        json_t *one = series_json(c, list[i].id, list[i].name, list[i].rank, q, err);
        if (one) {
            json_array_append_new(series, one);
        } else {
            json_decref(series);
            series = NULL;
        }
    }
    for (size_t i = 0; i < n; i++)
        free((char *)list[i].name);
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
