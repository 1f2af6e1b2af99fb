/*
 * store/usage_read: reading usage (see usage.h): the scan behind GET /v1/usage, a job's runs,
 * the totals for /metrics, the price table. A scan reads three sources in one snapshot:
 *
 *   whole days of the range    usage_days (or usage_label_days and what is left of usage_days
 *                              for jobs without the label): one row per day and group
 *   the range's partial days   usage_runs of that day, each clipped to the range
 *   runs still going           ranks of jobs in flight with a start and no end, up to now
 *
 * so its cost grows with days x groups, not with runs, except on the two edge days. Threads:
 * the caller's read connection; nothing is kept between calls.
 */
#include <math.h>

#include "core/jsonx.h"
#include "core/xalloc.h"
#include "job/jobstate.h"
#include "store/internal.h"
#include "store/usage.h"

enum {
    R_GROUPS,
    R_DAYS, /* the three of each group, then the same of each class */
    R_LABEL_DAYS,
    R_VALUE_DAYS,
    R_CLASS_DAYS,
    R_LABEL_CLASS_DAYS,
    R_VALUE_CLASS_DAYS,
    R_EDGE_RUNS,
    R_EDGE_JOBS,
    R_LIVE,
    R_JOB_EXECUTOR,
    R_JOB_RUNS,
    R_TOTALS,
    R_PRICES,
    R_PRICES_STAMP,
};

#define IN_FLIGHT "('starting', 'running', 'restarting', 'cancelling')"
/* The part of a run's piece inside [:lo, :hi), in ns. */
#define CLIPPED "max(0, min(p.to_ns, :hi) - max(p.from_ns, :lo))"

static const char *const sql[] = {
    [R_GROUPS] = "SELECT gk, owner, queue, executor, instance_type, capacity_type"
                 " FROM usage_groups ORDER BY gk",
    [R_DAYS] = "SELECT day, gk, NULL, gpu_seconds, rank_seconds, runs, jobs FROM usage_days"
               " WHERE day >= :d0 AND day <= :d1 ORDER BY day, gk",
    [R_LABEL_DAYS] = "SELECT day, gk, value, gpu_seconds, rank_seconds, runs, jobs"
                     " FROM usage_label_days WHERE key = :key AND day >= :d0 AND day <= :d1"
                     " ORDER BY day, gk, value",
    [R_VALUE_DAYS] = "SELECT day, gk, value, gpu_seconds, rank_seconds, runs, jobs"
                     " FROM usage_label_days INDEXED BY usage_label_days_by_value"
                     " WHERE key = :key AND value = :value AND day >= :d0 AND day <= :d1",
    [R_CLASS_DAYS] = "SELECT day, ck, NULL, gpu_seconds, rank_seconds, runs, jobs"
                     " FROM usage_class_days WHERE day >= :d0 AND day <= :d1 ORDER BY day, ck",
    [R_LABEL_CLASS_DAYS] = "SELECT day, ck, value, gpu_seconds, rank_seconds, runs, jobs"
                           " FROM usage_label_class_days WHERE key = :key AND day >= :d0"
                           " AND day <= :d1 ORDER BY day, ck, value",
    [R_VALUE_CLASS_DAYS] = "SELECT day, ck, value, gpu_seconds, rank_seconds, runs, jobs"
                           " FROM usage_label_class_days"
                           " INDEXED BY usage_label_class_days_by_value WHERE key = :key"
                           " AND value = :value AND day >= :d0 AND day <= :d1",
    [R_EDGE_RUNS] = "SELECT :day, p.gk, l.value, sum(" CLIPPED " * p.gpus) / 1e9,"
                    " sum(" CLIPPED ") / 1e9,"
                    " sum(p.to_ns = p.finished_at AND p.finished_at > :lo"
                    "   AND p.finished_at <= :hi), 0"
                    " FROM usage_runs p LEFT JOIN usage_job_labels l"
                    "   ON l.uj = p.uj AND l.key = :key"
                    " WHERE p.day = :day GROUP BY p.gk, l.value",
    [R_EDGE_JOBS] = "SELECT :day, j.first_gk, l.value, 0, 0, 0, count(*) FROM usage_jobs j"
                    " LEFT JOIN usage_job_labels l ON l.uj = j.uj AND l.key = :key"
                    " WHERE j.first_at > :lo AND j.first_at <= :hi GROUP BY j.first_gk, l.value",
    [R_LIVE] = "SELECT j.pk, j.owner, j.queue, j.executor, j.spec, r.started_at,"
               " (SELECT value FROM job_labels WHERE job_pk = j.pk AND key = :key)"
               " FROM jobs j JOIN ranks r ON r.job_pk = j.pk WHERE j.state IN " IN_FLIGHT
               " AND r.started_at > 0 AND r.finished_at = 0 AND r.started_at < :hi"
               " ORDER BY j.pk",
    [R_JOB_EXECUTOR] = "SELECT executor FROM jobs WHERE id = :id UNION ALL"
                       " SELECT executor FROM usage_jobs WHERE job_id = :id LIMIT 1",
    /* recorded runs (grouped along usage_runs_by_job: by attempt, rank and start), then the
     * ranks running now (their spec gives their GPUs), in one statement and no sort */
    [R_JOB_RUNS] =
        "SELECT p.attempt, p.rank, p.started_at, max(p.finished_at), max(p.gpus),"
        " sum(p.to_ns - p.from_ns), max(p.node), g.instance_type, g.capacity_type, NULL,"
        " j.executor, 0 AS live FROM usage_jobs j JOIN usage_runs p ON p.uj = j.uj"
        " JOIN usage_groups g ON g.gk = p.gk WHERE j.job_id = :id"
        " GROUP BY p.attempt, p.rank, p.started_at UNION ALL"
        " SELECT j.attempt, r.rank, r.started_at, 0, 0, 0, r.node, '', '', j.spec, j.executor, 1"
        " FROM jobs j JOIN ranks r ON r.job_pk = j.pk WHERE j.id = :id AND j.state IN " IN_FLIGHT
        " AND r.started_at > 0 AND r.finished_at = 0",
    [R_TOTALS] = "SELECT g.queue, g.executor, g.instance_type, g.capacity_type,"
                 " sum(t.gpu_seconds), sum(t.rank_seconds), sum(t.runs), sum(t.jobs)"
                 " FROM usage_totals t JOIN usage_groups g ON g.gk = t.gk"
                 " GROUP BY g.queue, g.executor, g.instance_type, g.capacity_type",
    [R_PRICES] = "SELECT doc FROM usage_prices WHERE id = 1",
    [R_PRICES_STAMP] = "SELECT updated_at FROM usage_prices WHERE id = 1",
};

#define STMT(c, i, err) stmt((c), MOD_USAGE_READS, (i), sql[(i)], (err))

static int64_t day_of(int64_t ns)
{
    return ns / USAGE_NS_PER_DAY;
}

/* Every group, by gk (they are few: owners x queues x executors x instance types). */
struct groups {
    int64_t *gk;
    struct usage_group *g;
    size_t n, cap;
};

static int group_row(void *ctx, sqlite3_stmt *s, struct err *err)
{
    (void)err;
    struct groups *gs = ctx;
    if (gs->n == gs->cap) {
        gs->cap = gs->cap ? gs->cap * 2 : 64;
        gs->gk = xrealloc(gs->gk, gs->cap * sizeof(*gs->gk));
        gs->g = xrealloc(gs->g, gs->cap * sizeof(*gs->g));
    }
    gs->gk[gs->n] = col_int(s, 0);
    gs->g[gs->n] = (struct usage_group){ .owner = xstrdup(col_text(s, 1)),
                                         .queue = xstrdup(col_text(s, 2)),
                                         .executor = xstrdup(col_text(s, 3)),
                                         .instance_type = xstrdup(col_text(s, 4)),
                                         .capacity_type = xstrdup(col_text(s, 5)) };
    gs->n++;
    return 0;
}

static void groups_release(struct groups *gs)
{
    for (size_t i = 0; i < gs->n; i++) {
        free((char *)gs->g[i].owner);
        free((char *)gs->g[i].queue);
        free((char *)gs->g[i].executor);
        free((char *)gs->g[i].instance_type);
        free((char *)gs->g[i].capacity_type);
    }
    free(gs->gk);
    free(gs->g);
}

static const struct usage_group *group_find(const struct groups *gs, int64_t gk)
{
    /* keys are handed out 1, 2, 3...: the gk-th is almost always where it is */
    if (gk >= 1 && (size_t)gk <= gs->n && gs->gk[gk - 1] == gk)
        return &gs->g[gk - 1];
    size_t lo = 0, hi = gs->n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (gs->gk[mid] < gk)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < gs->n && gs->gk[lo] == gk ? &gs->g[lo] : NULL;
}

struct scan {
    const struct usage_scan *q;
    struct groups groups;
    usage_row_fn fn;
    void *ctx;
    int64_t day, lo, hi; /* the edge day being read */
};

/* Hands r over unless it is empty: what is left for jobs without a label is a difference of
 * sums, and a few nanoseconds of it are rounding, not usage. */
static int emit(struct scan *sc, const struct usage_row *r, struct err *err)
{
    const struct usage_figures *f = &r->f;
    bool empty =
        fabs(f->gpu_seconds) < 1e-6 && fabs(f->rank_seconds) < 1e-6 && f->runs == 0 && f->jobs == 0;
    if (!r->group || empty)
        return 0;
    return sc->fn(sc->ctx, r, err) < 0 ? -1 : 0;
}

/* A row of the daily or edge statements: day, gk, label, gpu s, rank s, runs, jobs. */
static int sum_row(void *ctx, sqlite3_stmt *s, struct err *err)
{
    struct scan *sc = ctx;
    struct usage_row r = { .day = col_int(s, 0),
                           .group = group_find(&sc->groups, col_int(s, 1)),
                           .label = col_text_or_null(s, 2),
                           .f = { .gpu_seconds = sqlite3_column_double(s, 3),
                                  .rank_seconds = sqlite3_column_double(s, 4),
                                  .runs = col_int(s, 5),
                                  .jobs = col_int(s, 6) } };
    return emit(sc, &r, err);
}

static void bind_key(sqlite3_stmt *s, const struct usage_scan *q)
{
    if (q->label_key)
        bind_text(s, ":key", q->label_key);
    else
        bind_null(s, ":key");
}

static void bind_days(sqlite3_stmt *s, const struct usage_scan *q, int64_t d0, int64_t d1)
{
    bind_int(s, ":d0", d0);
    bind_int(s, ":d1", d1);
    if (sqlite3_bind_parameter_index(s, ":key"))
        bind_key(s, q);
    if (sqlite3_bind_parameter_index(s, ":value"))
        bind_text(s, ":value", q->label_value);
}

static int step(struct conn *c, sqlite3_stmt *s, bool *row, struct err *err)
{
    int rc = sqlite3_step(s);
    *row = rc == SQLITE_ROW;
    return rc == SQLITE_ROW || rc == SQLITE_DONE ? 0 : sql_fail(c, err, "reading daily usage");
}

/* Is the label row l before, at or after the day row (day, gk)? */
static int order(sqlite3_stmt *l, int64_t day, int64_t gk)
{
    int64_t ld = col_int(l, 0), lg = col_int(l, 1);
    return ld != day ? (ld < day ? -1 : 1) : lg != gk ? (lg < gk ? -1 : 1) : 0;
}

/* Whole days by a label: its daily sums per value, and for jobs without it what is left of
 * each day's sum of the group, both in (day, gk) order and merged in one pass. */
static int label_days(struct conn *c, struct scan *sc, sqlite3_stmt *sd, sqlite3_stmt *sl,
                      struct err *err)
{
    bool day_row, label_row;
    if (step(c, sl, &label_row, err) < 0)
        return -1;
    while (step(c, sd, &day_row, err) == 0 && day_row) {
        int64_t day = col_int(sd, 0), gk = col_int(sd, 1);
        struct usage_figures left = { .gpu_seconds = sqlite3_column_double(sd, 3),
                                      .rank_seconds = sqlite3_column_double(sd, 4),
                                      .runs = col_int(sd, 5),
                                      .jobs = col_int(sd, 6) };
        for (int o; label_row && (o = order(sl, day, gk)) <= 0;) {
            if (sum_row(sc, sl, err) < 0)
                return -1;
            if (o == 0) {
                left.gpu_seconds -= sqlite3_column_double(sl, 3);
                left.rank_seconds -= sqlite3_column_double(sl, 4);
                left.runs -= col_int(sl, 5);
                left.jobs -= col_int(sl, 6);
            }
            if (step(c, sl, &label_row, err) < 0)
                return -1;
        }
        struct usage_row r = {
            .day = day, .group = group_find(&sc->groups, gk), .label = NULL, .f = left
        };
        if (emit(sc, &r, err) < 0)
            return -1;
    }
    return err_is_set(err) ? -1 : 0;
}

static int whole_days(struct conn *c, struct scan *sc, int64_t d0, int64_t d1, struct err *err)
{
    const struct usage_scan *q = sc->q;
    /* without owner or queue, the sums per class: fewer rows, the same figures */
    int base = q->by_class ? R_CLASS_DAYS - R_DAYS : 0;
    /* no label, or only rows with the label's value: one statement */
    if (!q->label_key || q->label_value) {
        sqlite3_stmt *s = STMT(c, base + (q->label_key ? R_VALUE_DAYS : R_DAYS), err);
        if (s)
            bind_days(s, q, d0, d1);
        return sql_rows(c, s, "reading daily usage", sum_row, sc, err);
    }
    sqlite3_stmt *sd = STMT(c, base + R_DAYS, err), *sl = STMT(c, base + R_LABEL_DAYS, err);
    if (!sd || !sl)
        return -1;
    bind_days(sd, q, d0, d1);
    bind_days(sl, q, d0, d1);
    int rc = label_days(c, sc, sd, sl, err);
    sqlite3_reset(sd);
    sqlite3_reset(sl);
    return rc;
}

/* One partial day: its runs clipped to [lo, hi), and the jobs first counted in it. */
static int edge_day(struct conn *c, struct scan *sc, int64_t day, struct err *err)
{
    int64_t lo = day * USAGE_NS_PER_DAY, hi = lo + USAGE_NS_PER_DAY;
    lo = sc->q->from > lo ? sc->q->from : lo;
    hi = sc->q->to < hi ? sc->q->to : hi;
    for (int i = R_EDGE_RUNS; i <= R_EDGE_JOBS; i++) {
        sqlite3_stmt *s = STMT(c, i, err);
        if (s) {
            bind_int(s, ":day", day);
            bind_int(s, ":lo", lo);
            bind_int(s, ":hi", hi);
            bind_key(s, sc->q);
        }
        if (sql_rows(c, s, "reading usage runs", sum_row, sc, err) < 0)
            return -1;
    }
    return 0;
}

/* A rank running now, its spec parsed once per job (rows come by job). */
struct live {
    struct scan *sc;
    int64_t pk;
    json_t *spec;
    struct spec_view v;
    double gpus;
};

static int live_row(void *ctx, sqlite3_stmt *s, struct err *err)
{
    struct live *l = ctx;
    const struct usage_scan *q = l->sc->q;
    if (col_int(s, 0) != l->pk || !l->spec) {
        json_decref(l->spec);
        l->pk = col_int(s, 0);
        l->spec = json_loads(col_text(s, 4), 0, NULL);
        spec_view(l->spec, &l->v);
        l->gpus = usage_rank_gpus(&l->v);
    }
    const char *it = jsonx_str(l->v.placement, "instance_type"),
               *ct = jsonx_str(l->v.placement, "capacity_type");
    struct usage_group g = { .owner = col_text(s, 1),
                             .queue = col_text(s, 2),
                             .executor = col_text(s, 3),
                             .instance_type = it ? it : "",
                             .capacity_type = ct ? ct : "" };
    int64_t from = col_int(s, 5), to = q->now < q->to ? q->now : q->to;
    from = from > q->from ? from : q->from;
    for (int64_t day = day_of(from); from < to; day++) {
        int64_t end = (day + 1) * USAGE_NS_PER_DAY < to ? (day + 1) * USAGE_NS_PER_DAY : to;
        double secs = (double)(end - from) / 1e9;
        struct usage_row r = { .day = day,
                               .group = &g,
                               .label = col_text_or_null(s, 6),
                               .running = true,
                               .f = { .gpu_seconds = secs * l->gpus, .rank_seconds = secs } };
        if (l->sc->fn(l->sc->ctx, &r, err) < 0)
            return -1;
        from = end;
    }
    return 0;
}

static int live_runs(struct conn *c, struct scan *sc, struct err *err)
{
    sqlite3_stmt *s = STMT(c, R_LIVE, err);
    if (s) {
        bind_key(s, sc->q);
        bind_int(s, ":hi", sc->q->now < sc->q->to ? sc->q->now : sc->q->to);
    }
    struct live l = { .sc = sc };
    int rc = sql_rows(c, s, "reading running ranks", live_row, &l, err);
    json_decref(l.spec);
    return rc;
}

/* A day of the range is whole when the range covers all of it. */
static bool whole(const struct usage_scan *q, int64_t day)
{
    return q->from <= day * USAGE_NS_PER_DAY && q->to >= (day + 1) * USAGE_NS_PER_DAY;
}

static int scan_all(struct conn *c, struct scan *sc, struct err *err)
{
    const struct usage_scan *q = sc->q;
    if (sql_rows(c, STMT(c, R_GROUPS, err), "reading usage groups", group_row, &sc->groups, err) <
        0)
        return -1;
    int64_t first = day_of(q->from), last = day_of(q->to - 1);
    bool edge_first = !whole(q, first), edge_last = !whole(q, last) && last != first;
    int64_t d0 = first + edge_first, d1 = last - edge_last;
    if (d0 <= d1 && whole_days(c, sc, d0, d1, err) < 0)
        return -1;
    if (edge_first && edge_day(c, sc, first, err) < 0)
        return -1;
    if (edge_last && edge_day(c, sc, last, err) < 0)
        return -1;
    return q->now > q->from ? live_runs(c, sc, err) : 0;
}

int store_usage_scan(struct store *st, const struct usage_scan *q, usage_row_fn fn, void *ctx,
                     struct err *err)
{
    if (q->to <= q->from)
        return 0;
    struct conn *c = store_reader(st, err);
    if (!c || store_snapshot_begin(st, err) < 0)
        return -1;
    struct scan sc = { .q = q, .fn = fn, .ctx = ctx };
    int rc = scan_all(c, &sc, err);
    store_snapshot_end(st);
    groups_release(&sc.groups);
    return rc;
}

/* A recorded run, or (live) a rank running now, counted up to now with its spec's GPUs. */
struct job_rows {
    struct usage_job_run *runs;
    size_t n;
    int64_t now;
    char *executor; /* 32 bytes */
};

static void live_run(struct usage_job_run *r, sqlite3_stmt *s, int64_t now)
{
    json_t *spec = json_loads(col_text(s, 9), 0, NULL);
    struct spec_view v;
    spec_view(spec, &v);
    r->finished_at = now > r->started_at ? now : r->started_at;
    r->counted_ns = r->finished_at - r->started_at;
    r->gpus = usage_rank_gpus(&v);
    r->running = true;
    const char *it = jsonx_str(v.placement, "instance_type"),
               *ct = jsonx_str(v.placement, "capacity_type");
    snprintf(r->instance_type, sizeof(r->instance_type), "%s", it ? it : "");
    snprintf(r->capacity_type, sizeof(r->capacity_type), "%s", ct ? ct : "");
    json_decref(spec);
}

static int job_row(void *ctx, sqlite3_stmt *s, struct err *err)
{
    (void)err;
    struct job_rows *jr = ctx;
    jr->runs = xrealloc(jr->runs, (jr->n + 1) * sizeof(*jr->runs));
    struct usage_job_run *r = &jr->runs[jr->n++];
    memset(r, 0, sizeof(*r));
    r->attempt = (int)col_int(s, 0);
    r->rank = (int)col_int(s, 1);
    r->started_at = col_int(s, 2);
    snprintf(r->node, sizeof(r->node), "%s", col_text(s, 6));
    snprintf(jr->executor, 32, "%s", col_text(s, 10));
    if (col_int(s, 11)) {
        live_run(r, s, jr->now);
        return 0;
    }
    r->finished_at = col_int(s, 3);
    r->gpus = sqlite3_column_double(s, 4);
    r->counted_ns = col_int(s, 5);
    snprintf(r->instance_type, sizeof(r->instance_type), "%s", col_text(s, 7));
    snprintf(r->capacity_type, sizeof(r->capacity_type), "%s", col_text(s, 8));
    return 0;
}

/* Its runs; without any, whether the job is there at all (and its executor). */
static int job_runs(struct conn *c, const char *id, int64_t now, struct usage_job_run **runs,
                    size_t *n, char executor[32], struct err *err)
{
    sqlite3_stmt *s = STMT(c, R_JOB_RUNS, err);
    if (s)
        bind_text(s, ":id", id);
    bool known = executor[0] != '\0';
    struct job_rows jr = { .now = now, .executor = executor };
    int rc = sql_rows(c, s, "reading a job's usage", job_row, &jr, err);
    *runs = jr.runs;
    *n = jr.n;
    if (rc < 0 || jr.n || known)
        return rc;
    s = STMT(c, R_JOB_EXECUTOR, err);
    if (!s)
        return -1;
    bind_text(s, ":id", id);
    if (sql_step_one(c, s, err, "job", id) < 0)
        return -1;
    snprintf(executor, 32, "%s", col_text(s, 0));
    sqlite3_reset(s);
    return 0;
}

int store_usage_job(struct store *st, const char *id, int64_t now, struct usage_job_run **runs,
                    size_t *n, char executor[32], struct err *err)
{
    *runs = NULL;
    *n = 0;
    struct conn *c = store_reader(st, err);
    if (!c || store_snapshot_begin(st, err) < 0)
        return -1;
    int rc = job_runs(c, id, now, runs, n, executor, err);
    store_snapshot_end(st);
    if (rc < 0) {
        free(*runs);
        *runs = NULL;
        *n = 0;
    }
    return rc;
}

struct totals {
    usage_total_fn fn;
    void *ctx;
};

static int total_row(void *ctx, sqlite3_stmt *s, struct err *err)
{
    (void)err;
    struct totals *t = ctx;
    struct usage_group g = { .owner = "",
                             .queue = col_text(s, 0),
                             .executor = col_text(s, 1),
                             .instance_type = col_text(s, 2),
                             .capacity_type = col_text(s, 3) };
    struct usage_figures f = { .gpu_seconds = sqlite3_column_double(s, 4),
                               .rank_seconds = sqlite3_column_double(s, 5),
                               .runs = col_int(s, 6),
                               .jobs = col_int(s, 7) };
    t->fn(t->ctx, &g, &f);
    return 0;
}

int store_usage_totals(struct store *st, usage_total_fn fn, void *ctx, struct err *err)
{
    struct conn *c = store_reader(st, err);
    struct totals t = { .fn = fn, .ctx = ctx };
    return sql_rows(c, c ? STMT(c, R_TOTALS, err) : NULL, "reading usage totals", total_row, &t,
                    err);
}

json_t *store_usage_prices_get(struct store *st, struct err *err)
{
    struct conn *c = store_reader(st, err);
    sqlite3_stmt *s = c ? STMT(c, R_PRICES, err) : NULL;
    if (!s)
        return NULL;
    int rc = sqlite3_step(s);
    json_t *doc = rc == SQLITE_ROW ? json_loads(col_text(s, 0), 0, NULL) : NULL;
    sqlite3_reset(s);
    if (rc != SQLITE_ROW && rc != SQLITE_DONE)
        sql_fail(c, err, "reading the price table");
    return doc;
}

int64_t store_usage_prices_stamp(struct store *st, struct err *err)
{
    struct conn *c = store_reader(st, err);
    sqlite3_stmt *s = c ? STMT(c, R_PRICES_STAMP, err) : NULL;
    if (!s)
        return 0;
    int rc = sqlite3_step(s);
    int64_t stamp = rc == SQLITE_ROW ? col_int(s, 0) : 0;
    sqlite3_reset(s);
    if (rc != SQLITE_ROW && rc != SQLITE_DONE)
        sql_fail(c, err, "reading the price table");
    return stamp;
}
