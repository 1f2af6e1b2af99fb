/*
 * store/metrics: writing metric series and their points (see metrics.h). An append groups its
 * points by series on the caller's thread and packs each group into one block
 * (metrics_block.c); the writer thread then stores one block row per series, so a flush of
 * the collector with thousands of samples costs a few row inserts, not one per sample.
 *
 * It does not read (metrics_read.c). The points are copied before an append returns; the
 * batch is owned by the write and freed when it is done.
 */
#include "store/metrics.h"

#include "core/xalloc.h"
#include "store/internal.h"
#include "store/metrics_block.h"

enum {
    M_SERIES_ADD,
    M_SERIES_GET,
    M_BLOCK_ADD,
};

static const char *const sql[] = {
    [M_SERIES_ADD] = "INSERT INTO metric_series (job_pk, name, rank, source)"
                     " VALUES (:pk, :name, :rank, :source)"
                     " ON CONFLICT (job_pk, name, rank) DO NOTHING",
    [M_SERIES_GET] = "SELECT pk, source FROM metric_series WHERE job_pk = :pk AND name = :name"
                     " AND rank = :rank",
    [M_BLOCK_ADD] = "INSERT INTO metric_blocks (series, first_time, last_time, npoints, data)"
                    " VALUES (:series, :first, :last, :n, :data)",
};

#define STMT(c, i, err) stmt((c), MOD_METRICS, (i), sql[(i)], (err))

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

/* Log lines (seq > 0) and worker reports (seq 0) often carry the same metric: a series keeps
 * the points of the source that created it (metric_series.source), so no step shows twice. */

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

/* Packs g's points (sorted first when they did not arrive in time order) into g->data. */
static void pack_group(struct group *g, struct mpoint *pts)
{
    if (g->unsorted)
        qsort(pts, g->n, sizeof(*pts), metrics_by_time);
    g->first = pts[0].time;
    g->last = pts[g->n - 1].time;
    g->data = xmalloc(1 + g->n * POINT_MAX);
    g->data[0] = BLOCK_V1;
    g->len = 1;
    struct mpoint prev = { 0 };
    for (size_t i = 0; i < g->n; i++) {
        g->len += metrics_block_encode(g->data + g->len, &pts[i], &prev);
        prev = pts[i];
    }
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
        pack_group(&b->g[k], pts[k]);
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
