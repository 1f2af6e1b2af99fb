/*
 * store/metrics: metric series and their points (see metrics.h). An append stores, per series,
 * one block row holding that append's points sorted by (time, seq) and packed: a version byte,
 * then per point the zigzag varint deltas of time, seq and step from the previous point and
 * the value's 8 IEEE-754 bytes, little-endian (NaN and infinities kept); about 12 bytes a
 * point. A flush of the collector with thousands of samples costs a few row inserts, not one
 * per sample. Reads decode the blocks overlapping the range; a short range is returned point by
 * point (sorted, the same point stored twice kept once), a long one is folded into buckets as
 * the blocks stream by.
 */
#include "store/metrics.h"

#include <math.h>

#include "server/core/jsonx.h"
#include "server/core/xalloc.h"
#include "store/internal.h"

#define BLOCK_V1  1
#define POINT_MAX 38 /* three 10-byte varints and a double */

enum {
    M_SERIES_ADD,
    M_SERIES_GET,
    M_BLOCK_ADD,
    M_SERIES_LIST,
    M_RANGE,
    M_BLOCKS,
    M_LOG_TOTALS,
};

static const char *const sql[] = {
    [M_SERIES_ADD] = "INSERT INTO metric_series (job_pk, name, rank, source)"
                     " VALUES (:pk, :name, :rank, :source)"
                     " ON CONFLICT (job_pk, name, rank) DO NOTHING",
    [M_SERIES_GET] = "SELECT pk, source FROM metric_series WHERE job_pk = :pk AND name = :name"
                     " AND rank = :rank",
    [M_BLOCK_ADD] = "INSERT INTO metric_blocks (series, first_time, last_time, npoints, data)"
                    " VALUES (:series, :first, :last, :n, :data)",
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

#define STMT(c, i, err) stmt((c), MOD_METRICS, (i), sql[(i)], (err))

/* A point as stored (its series is its block's). */
struct mpoint {
    int64_t step, time, seq;
    double value;
};

/* The points of one series in one append, encoded on the caller's thread. */
struct group {
    char name[METRIC_NAME_MAX];
    int rank;
    bool log;
    unsigned char *data;
    size_t n;
    size_t len; /* bytes of data */
    int64_t first, last, last_seq;
    bool unsorted;
};

struct batch {
    int64_t pk;
    struct group *g;
    size_t n;
};

/* A series of the read side. */
struct seen {
    const char *name;
    int rank;
    int64_t id;
};

/* Log lines (seq > 0) and worker reports (seq 0) often carry the same metric: a series keeps
 * the points of the source that created it (metric_series.source), so no step shows twice. */

static void put64(unsigned char *b, uint64_t v)
{
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    memcpy(b, &v, 8);
#else
    for (int i = 0; i < 8; i++)
        b[i] = (unsigned char)(v >> (8 * i));
#endif
}

static uint64_t get64(const unsigned char *b)
{
    uint64_t v = 0;
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    memcpy(&v, b, 8);
#else
    for (int i = 0; i < 8; i++)
        v |= (uint64_t)b[i] << (8 * i);
#endif
    return v;
}

static size_t put_varint(unsigned char *b, uint64_t v)
{
    size_t n = 0;
    while (v >= 0x80) {
        b[n++] = (unsigned char)(v | 0x80);
        v >>= 7;
    }
    b[n++] = (unsigned char)v;
    return n;
}

static bool get_varint(const unsigned char *b, size_t len, size_t *off, uint64_t *v)
{
    *v = 0;
    for (int shift = 0; *off < len && shift < 64; shift += 7) {
        unsigned char c = b[(*off)++];
        *v |= (uint64_t)(c & 0x7f) << shift;
        if (!(c & 0x80))
            return true;
    }
    return false;
}

static uint64_t zig(int64_t v)
{
    return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
}

static int64_t unzig(uint64_t v)
{
    return (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
}

/* Appends p after prev (the previous point, zeros for the first). */
static size_t encode(unsigned char *b, const struct mpoint *p, const struct mpoint *prev)
{
    uint64_t bits;
    memcpy(&bits, &p->value, sizeof(bits));
    size_t n = put_varint(b, zig(p->time - prev->time));
    n += put_varint(b + n, zig(p->seq - prev->seq));
    n += put_varint(b + n, zig(p->step - prev->step));
    put64(b + n, bits);
    return n + 8;
}

/* Reads the point after prev at *off; false at the end or on damage. */
static bool decode(const unsigned char *b, size_t len, size_t *off, struct mpoint *p)
{
    uint64_t dt, ds, dstep;
    if (!get_varint(b, len, off, &dt) || !get_varint(b, len, off, &ds) ||
        !get_varint(b, len, off, &dstep) || *off + 8 > len)
        return false;
    uint64_t bits = get64(b + *off);
    *off += 8;
    p->time += unzig(dt);
    p->seq += unzig(ds);
    p->step += unzig(dstep);
    memcpy(&p->value, &bits, sizeof(bits));
    return true;
}

static void batch_free(struct batch *b)
{
    if (!b)
        return;
    for (size_t i = 0; i < b->n; i++)
        free(b->g[i].data);
    free(b->g);
    free(b);
}

static uint64_t name_hash(const char *s, size_t n, int rank, bool log)
{
    uint64_t h = 1469598103934665603ull ^ (uint64_t)(rank * 2 + log);
    for (size_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
    return h;
}

/* A small open-addressed index of a batch's groups (a batch has a few dozen series). */
struct gindex {
    size_t *slot; /* group index + 1, 0: empty */
    uint64_t *hash;
    size_t cap;
};

static size_t gindex_find(const struct gindex *x, const struct batch *b, uint64_t h,
                          const struct metric_point *p, size_t len, bool log)
{
    for (size_t i = h & (x->cap - 1);; i = (i + 1) & (x->cap - 1)) {
        if (!x->slot[i])
            return i;
        const struct group *g = &b->g[x->slot[i] - 1];
        if (x->hash[i] == h && g->rank == p->rank && g->log == log &&
            memcmp(g->name, p->name, len) == 0 && g->name[len] == '\0')
            return i;
    }
}

static void gindex_grow(struct gindex *x)
{
    struct gindex old = *x;
    x->cap = old.cap ? old.cap * 2 : 64;
    x->slot = xcalloc(x->cap, sizeof(*x->slot));
    x->hash = xcalloc(x->cap, sizeof(*x->hash));
    for (size_t i = 0; i < old.cap; i++) {
        if (!old.slot[i])
            continue;
        size_t k = old.hash[i] & (x->cap - 1);
        while (x->slot[k])
            k = (k + 1) & (x->cap - 1);
        x->slot[k] = old.slot[i];
        x->hash[k] = old.hash[i];
    }
    free(old.slot);
    free(old.hash);
}

/* The index of p's group in b, appended when new; counts[] its points. */
static size_t group_of(struct batch *b, struct gindex *x, const struct metric_point *p,
                       size_t **counts, size_t *capg)
{
    const char *name = p->name ? p->name : "";
    size_t len = strnlen(name, METRIC_NAME_MAX - 1);
    bool log = p->seq > 0;
    struct metric_point q = *p;
    q.name = name;
    uint64_t h = name_hash(name, len, p->rank, log);
    size_t i = gindex_find(x, b, h, &q, len, log);
    if (x->slot[i]) {
        (*counts)[x->slot[i] - 1]++;
        return x->slot[i] - 1;
    }
    if (2 * (b->n + 1) > x->cap) {
        gindex_grow(x);
        i = gindex_find(x, b, h, &q, len, log);
    }
    if (b->n == *capg) {
        *capg *= 2;
        b->g = xrealloc(b->g, *capg * sizeof(*b->g));
        *counts = xrealloc(*counts, *capg * sizeof(**counts));
    }
    struct group *g = &b->g[b->n];
    memset(g, 0, sizeof(*g));
    memcpy(g->name, name, len);
    g->rank = p->rank;
    g->log = log;
    (*counts)[b->n] = 1;
    x->slot[i] = ++b->n;
    x->hash[i] = h;
    return b->n - 1;
}

static int by_time(const void *a, const void *b)
{
    const struct mpoint *x = a, *y = b;
    if (x->time != y->time)
        return x->time < y->time ? -1 : 1;
    return (x->seq > y->seq) - (x->seq < y->seq);
}

/* Groups the points by series (name, rank and source), encodes each group's points in arrival
 * order, and sorts a group only when its points did not arrive in time order. */
static struct batch *batch_new(int64_t pk, const struct metric_point *p, size_t n)
{
    struct batch *b = XNEW(struct batch);
    b->pk = pk;
    size_t capg = 16;
    b->g = xmalloc(capg * sizeof(*b->g));
    size_t *count = xmalloc(capg * sizeof(*count));
    uint32_t *gi = xmalloc((n ? n : 1) * sizeof(*gi));
    struct gindex x = { 0 };
    gindex_grow(&x);
    for (size_t i = 0; i < n; i++)
        gi[i] = (uint32_t)group_of(b, &x, &p[i], &count, &capg);
    struct mpoint **pts = xmalloc((b->n ? b->n : 1) * sizeof(*pts));
    for (size_t k = 0; k < b->n; k++)
        pts[k] = xmalloc(count[k] * sizeof(**pts));
    for (size_t i = 0; i < n; i++) {
        struct group *g = &b->g[gi[i]];
        struct mpoint m = {
            .step = p[i].step, .time = p[i].time, .seq = p[i].seq, .value = p[i].value
        };
        if (g->n && (m.time < g->last || (m.time == g->last && m.seq < g->last_seq)))
            g->unsorted = true;
        pts[gi[i]][g->n++] = m;
        g->last = g->n > 1 && g->last > m.time ? g->last : m.time;
        g->last_seq = m.seq;
    }
    for (size_t k = 0; k < b->n; k++) {
        struct group *g = &b->g[k];
        if (g->unsorted)
            qsort(pts[k], g->n, sizeof(**pts), by_time);
        g->first = pts[k][0].time;
        g->last = pts[k][g->n - 1].time;
        g->data = xmalloc(1 + g->n * POINT_MAX);
        g->data[0] = BLOCK_V1;
        g->len = 1;
        struct mpoint prev = { 0 };
        for (size_t i = 0; i < g->n; i++) {
            g->len += encode(g->data + g->len, &pts[k][i], &prev);
            prev = pts[k][i];
        }
        free(pts[k]);
    }
    free(pts);
    free(x.slot);
    free(x.hash);
    free(count);
    free(gi);
    return b;
}

/* The series of g (created for g's source when new); *keep: g's source is the series' own. */
static int series_id(struct conn *c, int64_t pk, const struct group *g, int64_t *id, bool *keep,
                     struct err *err)
{
    const char *source = g->log ? "log" : "report";
    sqlite3_stmt *s = STMT(c, M_SERIES_ADD, err);
    if (!s)
        return -1;
    bind_int(s, ":pk", pk);
    bind_text(s, ":name", g->name);
    bind_int(s, ":rank", g->rank);
    bind_text(s, ":source", source);
    if (sql_exec_stmt(c, s, err, "storing a metric series") < 0)
        return -1;
    s = STMT(c, M_SERIES_GET, err);
    if (!s)
        return -1;
    bind_int(s, ":pk", pk);
    bind_text(s, ":name", g->name);
    bind_int(s, ":rank", g->rank);
    int rc = sqlite3_step(s);
    if (rc == SQLITE_ROW) {
        *id = col_int(s, 0);
        *keep = strcmp(col_text(s, 1), source) == 0;
    }
    sqlite3_reset(s);
    return rc == SQLITE_ROW ? 0 : sql_fail(c, err, "finding a metric series");
}

static int put_block(struct conn *c, int64_t series, const struct group *g, struct err *err)
{
    sqlite3_stmt *s = STMT(c, M_BLOCK_ADD, err);
    if (!s)
        return -1;
    bind_int(s, ":series", series);
    bind_int(s, ":first", g->first);
    bind_int(s, ":last", g->last);
    bind_int(s, ":n", (int64_t)g->n);
    bind_blob(s, ":data", g->data, g->len);
    return sql_exec_stmt(c, s, err, "storing metric points");
}

/* On the writer: only the series lookups and one insert per series. */
static int apply_append(struct conn *c, void *arg, struct err *err)
{
    const struct batch *b = arg;
    for (size_t i = 0; i < b->n; i++) {
        int64_t id = 0;
        bool keep = false;
        if (series_id(c, b->pk, &b->g[i], &id, &keep, err) < 0 ||
            (keep && put_block(c, id, &b->g[i], err) < 0))
            return -1;
    }
    return 0;
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

/* Calls fn for each stored point of the series in the range, block by block. */
static int each_point(struct conn *c, int64_t id, const struct range *r,
                      void (*fn)(void *ctx, const struct mpoint *p), void *ctx, struct err *err)
{
    sqlite3_stmt *s = STMT(c, M_BLOCKS, err);
    if (!s)
        return -1;
    bind_int(s, ":s", id);
    bind_int(s, ":since", r->since);
    bind_int(s, ":until", r->until);
    int rc;
    while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
        const unsigned char *d = sqlite3_column_blob(s, 0);
        size_t len = (size_t)sqlite3_column_bytes(s, 0), off = 1;
        struct mpoint p = { 0 };
        if (len == 0 || d[0] != BLOCK_V1)
            continue; /* a format this version does not know */
        while (off < len && decode(d, len, &off, &p))
            if (p.time >= r->since && p.time < r->until)
                fn(ctx, &p);
    }
    sqlite3_reset(s);
    return rc == SQLITE_DONE ? 0 : sql_fail(c, err, "reading metric points");
}

struct points {
    struct mpoint *p;
    size_t n, cap;
};

static void collect_point(void *ctx, const struct mpoint *p)
{
    struct points *ps = ctx;
    if (ps->n == ps->cap) {
        ps->cap = ps->cap ? ps->cap * 2 : 256;
        ps->p = xrealloc(ps->p, ps->cap * sizeof(*ps->p));
    }
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
        qsort(ps.p, ps.n, sizeof(*ps.p), by_time);
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
        json_t *one = series_json(c, &list[i], q, err);
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
