/*
 * store/usage: recording usage (see usage.h); reads are in usage_read.c. A run is recorded by
 * usage_record_run() inside the writer's transaction that records the rank's end
 * (store_job_update with u->usage), so everything here runs on the writer thread and may run
 * twice (a batch run again after another write failed): it reads what it needs afresh and
 * writes only to the database.
 *
 * A run becomes one usage_runs row per UTC day it covered, and each of those adds its seconds
 * to the day's sums (usage_days, and usage_label_days once per label of the job) and to the
 * totals. Recording a run that is already there subtracts what the old record added first, so
 * sums always equal their rows.
 */
#include "store/usage.h"

#include <math.h>
#include <string.h>

#include "core/clock.h"
#include "core/jsonx.h"
#include "store/internal.h"

enum {
    W_RANK_START,
    W_JOB,
    W_GROUP_ADD,
    W_GROUP_GET,
    W_UJOB_ADD,
    W_UJOB_GET,
    W_UJOB_LABELS,
    W_RUN_GET,
    W_RUN_DELETE,
    W_PIECE_ADD,
    W_DAY_ADD,
    W_LABEL_DAY_ADD,
    W_CLASS_DAY_ADD,
    W_LABEL_CLASS_DAY_ADD,
    W_TOTAL_ADD,
    W_PRICES_SET,
    W_PRICES_DELETE,
};

/* The sums' upserts add excluded.* to the row (negative to take a run back out). */
#define ADD_FIGURES                                                                                \
    " gpu_seconds = gpu_seconds + excluded.gpu_seconds,"                                           \
    " rank_seconds = rank_seconds + excluded.rank_seconds,"                                        \
    " runs = runs + excluded.runs, jobs = jobs + excluded.jobs"

static const char *const sql[] = {
    [W_RANK_START] = "SELECT started_at FROM ranks WHERE job_pk = :pk AND rank = :rank",
    [W_JOB] = "SELECT id, name, owner, queue, executor FROM jobs WHERE pk = :pk",
    [W_GROUP_ADD] = "INSERT INTO usage_groups (owner, queue, executor, instance_type,"
                    " capacity_type) VALUES (:owner, :queue, :executor, :it, :ct)"
                    " ON CONFLICT DO NOTHING",
    [W_GROUP_GET] = "SELECT gk FROM usage_groups WHERE owner = :owner AND queue = :queue"
                    " AND executor = :executor AND instance_type = :it AND capacity_type = :ct",
    [W_UJOB_ADD] = "INSERT INTO usage_jobs (job_id, name, owner, queue, executor, first_at,"
                   " first_gk) VALUES (:id, :name, :owner, :queue, :executor, :at, :gk)"
                   " ON CONFLICT (job_id) DO NOTHING",
    [W_UJOB_GET] = "SELECT uj FROM usage_jobs WHERE job_id = :id",
    [W_UJOB_LABELS] = "INSERT OR IGNORE INTO usage_job_labels (uj, key, value)"
                      " SELECT :uj, key, value FROM job_labels WHERE job_pk = :pk",
    [W_RUN_GET] = "SELECT day, from_ns, to_ns, finished_at, gpus, gk, ck FROM usage_runs"
                  " WHERE uj = :uj AND attempt = :attempt AND rank = :rank"
                  " AND started_at = :started",
    [W_RUN_DELETE] = "DELETE FROM usage_runs WHERE uj = :uj AND attempt = :attempt"
                     " AND rank = :rank AND started_at = :started",
    [W_PIECE_ADD] = "INSERT INTO usage_runs (uj, attempt, rank, started_at, day, from_ns, to_ns,"
                    " finished_at, gpus, gk, ck, node) VALUES (:uj, :attempt, :rank, :started,"
                    " :day, :from, :to, :finished, :gpus, :gk, :ck, :node)",
    [W_DAY_ADD] = "INSERT INTO usage_days (day, gk, gpu_seconds, rank_seconds, runs, jobs)"
                  " VALUES (:day, :gk, :gpu, :rank_s, :runs, :jobs)"
                  " ON CONFLICT (day, gk) DO UPDATE SET" ADD_FIGURES,
    /* WHERE true: an upsert on INSERT ... SELECT needs one to parse */
    [W_LABEL_DAY_ADD] = "INSERT INTO usage_label_days (key, day, gk, value, gpu_seconds,"
                        " rank_seconds, runs, jobs) SELECT key, :day, :gk, value, :gpu, :rank_s,"
                        " :runs, :jobs FROM usage_job_labels WHERE uj = :uj AND true"
                        " ON CONFLICT (key, day, gk, value) DO UPDATE SET" ADD_FIGURES,
    [W_CLASS_DAY_ADD] = "INSERT INTO usage_class_days (day, ck, gpu_seconds, rank_seconds, runs,"
                        " jobs) VALUES (:day, :gk, :gpu, :rank_s, :runs, :jobs)"
                        " ON CONFLICT (day, ck) DO UPDATE SET" ADD_FIGURES,
    [W_LABEL_CLASS_DAY_ADD] = "INSERT INTO usage_label_class_days (key, day, ck, value,"
                              " gpu_seconds, rank_seconds, runs, jobs) SELECT key, :day, :gk,"
                              " value, :gpu, :rank_s, :runs, :jobs FROM usage_job_labels"
                              " WHERE uj = :uj AND true ON CONFLICT (key, day, ck, value)"
                              " DO UPDATE SET" ADD_FIGURES,
    [W_TOTAL_ADD] = "INSERT INTO usage_totals (gk, gpu_seconds, rank_seconds, runs, jobs)"
                    " VALUES (:gk, :gpu, :rank_s, :runs, :jobs)"
                    " ON CONFLICT (gk) DO UPDATE SET" ADD_FIGURES,
    [W_PRICES_SET] = "INSERT INTO usage_prices (id, doc, updated_by, updated_at)"
                     " VALUES (1, :doc, :by, :now) ON CONFLICT (id) DO UPDATE SET"
                     " doc = excluded.doc, updated_by = excluded.updated_by,"
                     " updated_at = excluded.updated_at",
    [W_PRICES_DELETE] = "DELETE FROM usage_prices",
};

#define STMT(c, i, err) stmt((c), MOD_USAGE, (i), sql[(i)], (err))

double usage_rank_gpus(const struct spec_view *v)
{
    int64_t gpus = jsonx_int(v->resources, "gpus", 0);
    if (gpus <= 0)
        return 0;
    if (v->executor && strcmp(v->executor, "kubernetes") == 0 && v->procs_per_node > 1)
        return (double)gpus / v->procs_per_node;
    return (double)gpus;
}

void usage_run_init(struct usage_run *run, const struct spec_view *v, int attempt, int rank,
                    int64_t started_at, int64_t finished_at, const char *node,
                    const char *instance_type, const char *capacity_type)
{
    const char *it =
        instance_type && *instance_type ? instance_type : jsonx_str(v->placement, "instance_type");
    const char *ct =
        capacity_type && *capacity_type ? capacity_type : jsonx_str(v->placement, "capacity_type");
    *run = (struct usage_run){ .attempt = attempt,
                               .rank = rank,
                               .started_at = started_at,
                               .finished_at = finished_at,
                               .gpus = usage_rank_gpus(v),
                               .node = node,
                               .instance_type = it,
                               .capacity_type = ct };
}

static int64_t day_of(int64_t ns)
{
    return ns / USAGE_NS_PER_DAY;
}

/* What the usage rows of a run are keyed and grouped by. Strings borrow the run and the job
 * statement's row (read before any other statement of the record runs). */
struct record {
    const struct usage_run *run;
    int64_t pk;
    int64_t started;    /* the run's identity: as reported or as stored */
    int64_t from;       /* what is counted: started, or USAGE_MAX_RUN_NS before the end */
    int64_t gk, ck, uj; /* group, class (the group without owner and queue), job */
    char id[64], name[128], owner[128], queue[64], executor[32];
};

static int rank_started(struct conn *c, struct record *rec, struct err *err)
{
    sqlite3_stmt *s = STMT(c, W_RANK_START, err);
    if (!s)
        return -1;
    bind_int(s, ":pk", rec->pk);
    bind_int(s, ":rank", rec->run->rank);
    int rc = sqlite3_step(s);
    rec->started = rc == SQLITE_ROW ? col_int(s, 0) : 0;
    sqlite3_reset(s);
    return rc == SQLITE_ROW || rc == SQLITE_DONE ? 0 : sql_fail(c, err, "reading a rank's start");
}

static int job_info(struct conn *c, struct record *rec, struct err *err)
{
    sqlite3_stmt *s = STMT(c, W_JOB, err);
    if (!s)
        return -1;
    bind_int(s, ":pk", rec->pk);
    if (sql_step_one(c, s, err, "job", "(usage)") < 0)
        return -1;
    snprintf(rec->id, sizeof(rec->id), "%s", col_text(s, 0));
    snprintf(rec->name, sizeof(rec->name), "%s", col_text(s, 1));
    snprintf(rec->owner, sizeof(rec->owner), "%s", col_text(s, 2));
    snprintf(rec->queue, sizeof(rec->queue), "%s", col_text(s, 3));
    snprintf(rec->executor, sizeof(rec->executor), "%s", col_text(s, 4));
    sqlite3_reset(s);
    return 0;
}

/* The run's group, or (class) its class: the same without owner and queue. */
static void bind_group(sqlite3_stmt *s, const struct record *rec, bool class)
{
    const struct usage_run *r = rec->run;
    bind_text(s, ":owner", class ? "" : rec->owner);
    bind_text(s, ":queue", class ? "" : rec->queue);
    bind_text(s, ":executor", rec->executor);
    bind_text(s, ":it", r->instance_type ? r->instance_type : "");
    bind_text(s, ":ct", r->capacity_type ? r->capacity_type : "");
}

/* The row id of an insert-or-existing: add (which may do nothing), then get. */
static int key_of(struct conn *c, sqlite3_stmt *get, int64_t *out, struct err *err)
{
    if (!get)
        return -1;
    int rc = sqlite3_step(get);
    *out = rc == SQLITE_ROW ? col_int(get, 0) : 0;
    sqlite3_reset(get);
    return rc == SQLITE_ROW ? 0 : sql_fail(c, err, "reading a usage key");
}

static int group_key(struct conn *c, struct record *rec, bool class, struct err *err)
{
    sqlite3_stmt *s = STMT(c, W_GROUP_ADD, err);
    if (!s)
        return -1;
    bind_group(s, rec, class);
    if (sql_exec_stmt(c, s, err, "recording a usage group") < 0)
        return -1;
    s = STMT(c, W_GROUP_GET, err);
    if (s)
        bind_group(s, rec, class);
    return key_of(c, s, class ? &rec->ck : &rec->gk, err);
}

/* Adds figures to the day's sums of the group and its class, and of each of the job's labels. */
static int add_day(struct conn *c, const struct record *rec, int64_t gk, int64_t ck, int64_t day,
                   const struct usage_figures *f, struct err *err)
{
    for (int i = W_DAY_ADD; i <= W_LABEL_CLASS_DAY_ADD; i++) {
        sqlite3_stmt *s = STMT(c, i, err);
        if (!s)
            return -1;
        bind_int(s, ":day", day);
        bind_int(s, ":gk", i >= W_CLASS_DAY_ADD ? ck : gk);
        sqlite3_bind_double(s, sqlite3_bind_parameter_index(s, ":gpu"), f->gpu_seconds);
        sqlite3_bind_double(s, sqlite3_bind_parameter_index(s, ":rank_s"), f->rank_seconds);
        bind_int(s, ":runs", f->runs);
        bind_int(s, ":jobs", f->jobs);
        if (i == W_LABEL_DAY_ADD || i == W_LABEL_CLASS_DAY_ADD)
            bind_int(s, ":uj", rec->uj);
        if (sql_exec_stmt(c, s, err, "adding to the daily usage") < 0)
            return -1;
    }
    return 0;
}

static int add_total(struct conn *c, int64_t gk, const struct usage_figures *f, struct err *err)
{
    sqlite3_stmt *s = STMT(c, W_TOTAL_ADD, err);
    if (!s)
        return -1;
    bind_int(s, ":gk", gk);
    sqlite3_bind_double(s, sqlite3_bind_parameter_index(s, ":gpu"), f->gpu_seconds);
    sqlite3_bind_double(s, sqlite3_bind_parameter_index(s, ":rank_s"), f->rank_seconds);
    bind_int(s, ":runs", f->runs);
    bind_int(s, ":jobs", f->jobs);
    return sql_exec_stmt(c, s, err, "adding to the usage totals");
}

/* The job's usage record, made with its labels at its first run (which counts the job). */
static int usage_job(struct conn *c, struct record *rec, struct err *err)
{
    sqlite3_stmt *s = STMT(c, W_UJOB_ADD, err);
    if (!s)
        return -1;
    bind_text(s, ":id", rec->id);
    bind_text(s, ":name", rec->name);
    bind_text(s, ":owner", rec->owner);
    bind_text(s, ":queue", rec->queue);
    bind_text(s, ":executor", rec->executor);
    bind_int(s, ":at", rec->run->finished_at);
    bind_int(s, ":gk", rec->gk);
    if (sql_exec_stmt(c, s, err, "recording a job's usage") < 0)
        return -1;
    bool first = sqlite3_changes(c->db) > 0;
    s = STMT(c, W_UJOB_GET, err);
    if (s)
        bind_text(s, ":id", rec->id);
    if (key_of(c, s, &rec->uj, err) < 0 || !first)
        return err_is_set(err) ? -1 : 0;
    s = STMT(c, W_UJOB_LABELS, err);
    if (!s)
        return -1;
    bind_int(s, ":uj", rec->uj);
    bind_int(s, ":pk", rec->pk);
    if (sql_exec_stmt(c, s, err, "recording a job's labels") < 0)
        return -1;
    struct usage_figures job = { .jobs = 1 };
    return add_day(c, rec, rec->gk, rec->ck, day_of(rec->run->finished_at - 1), &job, err) < 0 ||
                   add_total(c, rec->gk, &job, err) < 0
               ? -1
               : 0;
}

static void bind_run_key(sqlite3_stmt *s, const struct record *rec)
{
    bind_int(s, ":uj", rec->uj);
    bind_int(s, ":attempt", rec->run->attempt);
    bind_int(s, ":rank", rec->run->rank);
    bind_int(s, ":started", rec->started);
}

/* A piece of a run: its part of one day. */
struct piece {
    int64_t day, from, to, finished, gk, ck;
    double gpus;
};

/* The pieces of this run as recorded before (at most one per day of USAGE_MAX_RUN_NS + 1). */
#define MAX_PIECES (USAGE_MAX_RUN_NS / USAGE_NS_PER_DAY + 2)
static int old_pieces(struct conn *c, const struct record *rec, struct piece *out, size_t *n,
                      struct err *err)
{
    sqlite3_stmt *s = STMT(c, W_RUN_GET, err);
    if (!s)
        return -1;
    bind_run_key(s, rec);
    int rc;
    *n = 0;
    while ((rc = sqlite3_step(s)) == SQLITE_ROW && *n < MAX_PIECES)
        out[(*n)++] = (struct piece){ .day = col_int(s, 0),
                                      .from = col_int(s, 1),
                                      .to = col_int(s, 2),
                                      .finished = col_int(s, 3),
                                      .gpus = sqlite3_column_double(s, 4),
                                      .gk = col_int(s, 5),
                                      .ck = col_int(s, 6) };
    sqlite3_reset(s);
    return rc == SQLITE_ROW || rc == SQLITE_DONE ? 0 : sql_fail(c, err, "reading a usage run");
}

/* Adds (sign 1) or takes back (sign -1) one piece's figures; the last piece counts the run. */
static int count_piece(struct conn *c, const struct record *rec, const struct piece *p, int sign,
                       struct usage_figures *total, struct err *err)
{
    double secs = (double)(p->to - p->from) / 1e9;
    struct usage_figures f = { .gpu_seconds = sign * secs * p->gpus,
                               .rank_seconds = sign * secs,
                               .runs = p->to == p->finished ? sign : 0 };
    total->gpu_seconds += f.gpu_seconds;
    total->rank_seconds += f.rank_seconds;
    total->runs += f.runs;
    return add_day(c, rec, p->gk, p->ck, p->day, &f, err);
}

/* Takes an earlier record of the same run back out. *same: it said exactly this already. */
static int forget_run(struct conn *c, const struct record *rec, bool *same, struct err *err)
{
    struct piece old[MAX_PIECES]; /* 19 KiB */
    size_t n;
    *same = false;
    if (old_pieces(c, rec, old, &n, err) < 0 || n == 0)
        return err_is_set(err) ? -1 : 0;
    const struct usage_run *r = rec->run;
    *same = old[0].finished == r->finished_at && old[0].gk == rec->gk && old[0].gpus == r->gpus;
    if (*same)
        return 0;
    struct usage_figures total = { 0 };
    for (size_t i = 0; i < n; i++)
        if (count_piece(c, rec, &old[i], -1, &total, err) < 0)
            return -1;
    sqlite3_stmt *s = STMT(c, W_RUN_DELETE, err);
    if (!s)
        return -1;
    bind_run_key(s, rec);
    return sql_exec_stmt(c, s, err, "replacing a usage run") < 0 ||
                   add_total(c, old[0].gk, &total, err) < 0
               ? -1
               : 0;
}

static int add_piece(struct conn *c, const struct record *rec, const struct piece *p,
                     struct err *err)
{
    sqlite3_stmt *s = STMT(c, W_PIECE_ADD, err);
    if (!s)
        return -1;
    bind_run_key(s, rec);
    bind_int(s, ":day", p->day);
    bind_int(s, ":from", p->from);
    bind_int(s, ":to", p->to);
    bind_int(s, ":finished", p->finished);
    sqlite3_bind_double(s, sqlite3_bind_parameter_index(s, ":gpus"), p->gpus);
    bind_int(s, ":gk", p->gk);
    bind_int(s, ":ck", p->ck);
    bind_text(s, ":node", rec->run->node ? rec->run->node : "");
    return sql_exec_stmt(c, s, err, "recording a usage run");
}

/* Splits [rec->from, end) by UTC day into rows and sums. */
static int add_run(struct conn *c, const struct record *rec, struct err *err)
{
    const struct usage_run *r = rec->run;
    struct usage_figures total = { 0 };
    for (int64_t day = day_of(rec->from); day <= day_of(r->finished_at - 1); day++) {
        int64_t lo = day * USAGE_NS_PER_DAY, hi = lo + USAGE_NS_PER_DAY;
        struct piece p = { .day = day,
                           .from = rec->from > lo ? rec->from : lo,
                           .to = r->finished_at < hi ? r->finished_at : hi,
                           .finished = r->finished_at,
                           .gk = rec->gk,
                           .ck = rec->ck,
                           .gpus = r->gpus };
        if (add_piece(c, rec, &p, err) < 0 || count_piece(c, rec, &p, 1, &total, err) < 0)
            return -1;
    }
    return add_total(c, rec->gk, &total, err);
}

int usage_record_run(struct conn *c, int64_t pk, const struct usage_run *r, struct err *err)
{
    struct record rec = { .run = r, .pk = pk, .started = r->started_at };
    if (!rec.started && rank_started(c, &rec, err) < 0)
        return -1;
    if (rec.started <= 0 || r->finished_at <= rec.started || !isfinite(r->gpus) || r->gpus < 0)
        return 0; /* it never ran (or has no times): nothing to count */
    rec.from = rec.started;
    if (r->finished_at - rec.from > USAGE_MAX_RUN_NS)
        rec.from = r->finished_at - USAGE_MAX_RUN_NS;
    bool same;
    if (job_info(c, &rec, err) < 0 || group_key(c, &rec, false, err) < 0 ||
        group_key(c, &rec, true, err) < 0 || usage_job(c, &rec, err) < 0 ||
        forget_run(c, &rec, &same, err) < 0)
        return err_wrap(err, "recording usage");
    if (!same && add_run(c, &rec, err) < 0)
        return err_wrap(err, "recording usage");
    return 0;
}

struct prices_set {
    const char *doc; /* NULL: remove */
    const char *actor, *request_id;
};

static int apply_prices(struct conn *c, void *arg, struct err *err)
{
    const struct prices_set *p = arg;
    sqlite3_stmt *s = STMT(c, p->doc ? W_PRICES_SET : W_PRICES_DELETE, err);
    if (!s)
        return -1;
    if (p->doc) {
        bind_text(s, ":doc", p->doc);
        bind_text(s, ":by", p->actor ? p->actor : "");
        bind_int(s, ":now", clock_now_ns());
    }
    if (sql_exec_stmt(c, s, err, "saving the price table") < 0)
        return -1;
    return audit_change(c, "prices", p->doc ? "update" : "delete", "usage", p->actor, p->request_id,
                        err);
}

int store_usage_prices_set(struct store *st, const json_t *doc, const char *actor,
                           const char *request_id, struct err *err)
{
    char *text = doc ? jsonx_dumps(doc) : NULL;
    struct prices_set p = { .doc = text, .actor = actor, .request_id = request_id };
    int rc = store_write_wait(st, apply_prices, &p, err);
    free(text);
    return rc;
}
