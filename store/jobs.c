/*
 * store/jobs: SQL for jobs, ranks, events, labels and idempotency keys. Writes run on the writer
 * thread (store_write_wait/async); reads on the caller's connection. Returned structs are heap
 * copies owned by the caller.
 */
#include "store/jobs.h"

#include "core/buf.h"
#include "core/clock.h"
#include "core/xalloc.h"
#include "store/internal.h"
#include "store/logcache.h"
#include "store/tokens.h"

#define JOB_COLS                                                                                   \
    "pk, id, name, executor, state, reason, message, priority, queue, nranks, spec, owner, "       \
    "attempt, desired, first_failure, exec_state, created_at, started_at, finished_at, "           \
    "updated_at, "                                                                                 \
    "owner_id"

/* JOB_COLS with the spec's size in place of the spec (struct job_filter's spec_size_only). */
#define JOB_COLS_SIZE                                                                              \
    "pk, id, name, executor, state, reason, message, priority, queue, nranks, "                    \
    "json_object('nodes', json_extract(spec, '$.nodes'), 'procs_per_node', "                       \
    "json_extract(spec, '$.procs_per_node'), 'resources', json_extract(spec, '$.resources')), "    \
    "owner, attempt, desired, first_failure, exec_state, created_at, started_at, finished_at, "    \
    "updated_at"

enum {
    J_INSERT,
    J_LABEL,
    J_RANK,
    J_IDEM_GET,
    J_IDEM_PUT,
    J_LOG_STATE,
    J_GET_ID,
    J_GET_PK,
    J_RANKS,
    J_LABELS,
    J_DELETE,
    J_IN_FLIGHT,
    J_COUNT,
    J_SUSPENSIONS,
};

static const char *const sql[] = {
    [J_INSERT] = "INSERT INTO jobs (id, name, executor, state, reason, message, priority, queue,"
                 " nranks, gpus, deadline_seconds, spec, owner, owner_id, desired, created_at,"
                 " updated_at) VALUES (:id, :name, :executor, 'queued', :reason, :message,"
                 " :priority, :queue, :nranks, :gpus, :deadline, :spec, :owner, :owner_id,"
                 " :desired, :now, :now)",
    [J_LABEL] = "INSERT INTO job_labels (job_pk, key, value) VALUES (:pk, :key, :value)",
    [J_RANK] = "INSERT INTO ranks (job_pk, rank, state) VALUES (:pk, :rank, 'pending')",
    [J_IDEM_GET] =
        "SELECT i.body_hash, j.pk, j.id FROM idempotency i JOIN jobs j ON j.pk = i.job_pk"
        " WHERE i.owner = :owner AND i.key = :key",
    [J_IDEM_PUT] = "INSERT INTO idempotency (owner, key, body_hash, job_pk, created_at)"
                   " VALUES (:owner, :key, :hash, :pk, :now)",
    [J_LOG_STATE] = "INSERT INTO log_state (job_pk) VALUES (:pk)",
    [J_GET_ID] = "SELECT " JOB_COLS " FROM jobs WHERE id = :id",
    [J_GET_PK] = "SELECT " JOB_COLS " FROM jobs WHERE pk = :pk",
    [J_RANKS] = "SELECT rank, state, pid, node, pod, exit_code, signal, restarts, reason, message,"
                " started_at, finished_at FROM ranks WHERE job_pk = :pk ORDER BY rank",
    [J_LABELS] = "SELECT key, value FROM job_labels WHERE job_pk = :pk ORDER BY key",
    [J_DELETE] = "DELETE FROM jobs WHERE pk = :pk AND state IN"
                 " ('succeeded', 'failed', 'cancelled', 'preempted')",
    [J_IN_FLIGHT] = "SELECT " JOB_COLS " FROM jobs WHERE state IN"
                    " ('starting', 'running', 'restarting', 'cancelling') ORDER BY pk",
    [J_COUNT] = "SELECT state, count(*) FROM jobs GROUP BY state",
    [J_SUSPENSIONS] = "SELECT count(*) FROM events WHERE job_pk = :pk"
                      " AND type = 'queued' AND reason IN ('Suspended', 'Requeued')",
};

#define STMT(c, i, err) stmt((c), MOD_JOBS, (i), sql[(i)], (err))

/* Idempotency keys are the submitter's: its token id, so that a new token with a revoked one's
 * name does not replay (and learn) the old one's jobs; the name for submitters without a token
 * (triggers, auth off). */
static const char *idem_owner(const struct job_new *jn)
{
    return jn->owner_id && jn->owner_id[0] ? jn->owner_id : jn->owner ? jn->owner : "";
}

static char *dup_col(sqlite3_stmt *s, int i)
{
    return xstrdup(col_text(s, i));
}

/* Fills a slot of a job list (a `struct job *`) from a row of JOB_COLS. */
static void job_fill(void *slot, sqlite3_stmt *s)
{
    struct job *j = XNEW(struct job);
    j->pk = col_int(s, 0);
    j->id = dup_col(s, 1);
    j->name = dup_col(s, 2);
    j->executor = dup_col(s, 3);
    if (jobstate_parse(col_text(s, 4), &j->state) < 0)
        j->state = JOB_FAILED;
    j->reason = dup_col(s, 5);
    j->message = dup_col(s, 6);
    j->priority = (int)col_int(s, 7);
    j->queue = dup_col(s, 8);
    j->nranks = (int)col_int(s, 9);
    j->spec = dup_col(s, 10);
    j->owner = dup_col(s, 11);
    j->attempt = (int)col_int(s, 12);
    j->desired = dup_col(s, 13);
    j->first_failure = col_text_or_null(s, 14) ? dup_col(s, 14) : NULL;
    j->exec_state = dup_col(s, 15);
    j->created_at = col_int(s, 16);
    j->started_at = col_int(s, 17);
    j->finished_at = col_int(s, 18);
    j->updated_at = col_int(s, 19);
    j->owner_id = dup_col(s, 20);
    *(struct job **)slot = j;
}

void job_free(struct job *j)
{
    if (!j)
        return;
    free(j->id);
    free(j->name);
    free(j->executor);
    free(j->reason);
    free(j->message);
    free(j->queue);
    free(j->spec);
    free(j->owner);
    free(j->owner_id);
    free(j->desired);
    free(j->first_failure);
    free(j->exec_state);
    free(j);
}

static void job_drop(void *slot)
{
    job_free(*(struct job **)slot);
}

void jobs_free(struct job **jobs, size_t n)
{
    for (size_t i = 0; i < n; i++)
        job_free(jobs[i]);
    free(jobs);
}

/* Looks up an idempotency key: 0 absent, 1 same body (id copied), -1 conflict or error. */
static int idempotency_check(struct conn *c, const struct job_new *jn, struct job_inserted *out,
                             struct err *err)
{
    sqlite3_stmt *s = STMT(c, J_IDEM_GET, err);
    if (!s)
        return -1;
    bind_text(s, ":owner", idem_owner(jn));
    bind_text(s, ":key", jn->idempotency_key);
    int rc = sqlite3_step(s);
    if (rc == SQLITE_DONE)
        return 0;
    if (rc != SQLITE_ROW)
        return sql_fail(c, err, "reading an idempotency key");
    if (strcmp(col_text(s, 0), jn->body_hash) != 0) {
        sqlite3_reset(s);
        return err_set(err, ERR_CONFLICT,
                       "Idempotency-Key '%s' was already used with a different request body",
                       jn->idempotency_key);
    }
    out->pk = col_int(s, 1);
    snprintf(out->replayed_id, sizeof(out->replayed_id), "%s", col_text(s, 2));
    out->replayed = true;
    sqlite3_reset(s);
    return 1;
}

static int insert_children(struct conn *c, const struct job_new *jn, int64_t pk, struct err *err)
{
    for (size_t i = 0; i < jn->nlabels; i++) {
        sqlite3_stmt *s = STMT(c, J_LABEL, err);
        if (!s)
            return -1;
        bind_int(s, ":pk", pk);
        bind_text(s, ":key", jn->labels[i].key);
        bind_text(s, ":value", jn->labels[i].value);
        if (sql_exec_stmt(c, s, err, "storing a label") < 0)
            return -1;
    }
    for (int r = 0; r < jn->nranks; r++) {
        sqlite3_stmt *s = STMT(c, J_RANK, err);
        if (!s)
            return -1;
        bind_int(s, ":pk", pk);
        bind_int(s, ":rank", r);
        if (sql_exec_stmt(c, s, err, "storing a rank") < 0)
            return -1;
    }
    sqlite3_stmt *s = STMT(c, J_LOG_STATE, err);
    if (!s)
        return -1;
    bind_int(s, ":pk", pk);
    if (sql_exec_stmt(c, s, err, "storing log state") < 0)
        return -1;
    struct job_event accepted = { .type = "accepted",
                                  .reason = "Submitted",
                                  .message = jn->hold ? "held until resumed" : "",
                                  .rank = -1 };
    return event_insert(c, pk, &accepted, jn->now, err);
}

struct insert_op {
    const struct job_new *jn;
    struct job_inserted *out;
};

static int apply_insert(struct conn *c, void *arg, struct err *err)
{
    struct insert_op *op = arg;
    const struct job_new *jn = op->jn;
    memset(op->out, 0, sizeof(*op->out));
    if (jn->idempotency_key) {
        int seen = idempotency_check(c, jn, op->out, err);
        if (seen != 0)
            return seen < 0 ? -1 : 0;
    }
    sqlite3_stmt *s = STMT(c, J_INSERT, err);
    if (!s)
        return -1;
    bind_text(s, ":id", jn->id);
    bind_text(s, ":name", jn->name);
    bind_text(s, ":executor", jn->executor);
    bind_text(s, ":reason", jn->hold ? "Suspended" : "Submitted");
    bind_text(s, ":message", jn->hold ? "held until POST /v1/jobs/{id}/resume" : "");
    bind_int(s, ":priority", jn->priority);
    bind_text(s, ":queue", jn->queue ? jn->queue : "");
    bind_int(s, ":nranks", jn->nranks);
    bind_int(s, ":gpus", jn->gpus_per_rank);
    bind_int(s, ":deadline", jn->deadline_seconds);
    bind_text(s, ":spec", jn->spec);
    bind_text(s, ":owner", jn->owner ? jn->owner : "");
    bind_text(s, ":owner_id", jn->owner_id ? jn->owner_id : "");
    bind_text(s, ":desired", jn->hold ? "hold" : "run");
    bind_int(s, ":now", jn->now);
    if (sql_exec_stmt(c, s, err, "storing the job") < 0)
        return -1;
    int64_t pk = sqlite3_last_insert_rowid(c->db);
    op->out->pk = pk;
    if (insert_children(c, jn, pk, err) < 0)
        return -1;
    char target[64];
    snprintf(target, sizeof(target), "job/%s", jn->id);
    struct audit_entry audit = { .actor = jn->owner,
                                 .action = "job.create",
                                 .target = target,
                                 .request_id = jn->request_id,
                                 .time = jn->now };
    if (audit_insert(c, &audit, err) < 0)
        return -1;
    if (!jn->idempotency_key)
        return 0;
    s = STMT(c, J_IDEM_PUT, err);
    if (!s)
        return -1;
    bind_text(s, ":owner", idem_owner(jn));
    bind_text(s, ":key", jn->idempotency_key);
    bind_text(s, ":hash", jn->body_hash);
    bind_int(s, ":pk", pk);
    bind_int(s, ":now", jn->now);
    return sql_exec_stmt(c, s, err, "storing the idempotency key");
}

int store_job_insert(struct store *st, const struct job_new *jn, struct job_inserted *out,
                     struct err *err)
{
    struct insert_op op = { jn, out };
    return store_write_wait(st, apply_insert, &op, err);
}

struct insert_async {
    struct insert_op op;
    store_done_fn done;
    void *ctx;
};

static void insert_done(void *ctx, int rc, struct err *err)
{
    struct insert_async *a = ctx;
    a->done(a->ctx, rc, err);
    free(a);
}

void store_job_insert_async(struct store *st, const struct job_new *jn, struct job_inserted *out,
                            store_done_fn done, void *ctx)
{
    struct insert_async *a = XNEW(struct insert_async);
    a->op.jn = jn;
    a->op.out = out;
    a->done = done;
    a->ctx = ctx;
    store_write_async(st, apply_insert, &a->op, insert_done, a);
}

static struct job *get_one(struct store *st, int which, const char *id, int64_t pk, struct err *err)
{
    struct conn *c = store_reader(st, err);
    sqlite3_stmt *s = c ? STMT(c, which, err) : NULL;
    if (!s)
        return NULL;
    if (id)
        bind_text(s, ":id", id);
    else
        bind_int(s, ":pk", pk);
    int rc = sqlite3_step(s);
    struct job *j = NULL;
    if (rc == SQLITE_ROW)
        job_fill(&j, s);
    else if (rc == SQLITE_DONE)
        err_set(err, ERR_NOT_FOUND, "no job %s", id ? id : "with that key");
    else
        sql_fail(c, err, "reading a job");
    sqlite3_reset(s);
    return j;
}

struct job *store_job_get(struct store *st, const char *id, struct err *err)
{
    return get_one(st, J_GET_ID, id, 0, err);
}

struct job *store_job_get_pk(struct store *st, int64_t pk, struct err *err)
{
    return get_one(st, J_GET_PK, NULL, pk, err);
}

static void rank_fill(void *elem, sqlite3_stmt *s)
{
    struct rank *r = elem;
    r->rank = (int)col_int(s, 0);
    if (rankstate_parse(col_text(s, 1), &r->state) < 0)
        r->state = RANK_LOST;
    r->pid = (int)col_int(s, 2);
    r->node = dup_col(s, 3);
    r->pod = dup_col(s, 4);
    r->exit_code = sqlite3_column_type(s, 5) == SQLITE_NULL ? -1 : (int)col_int(s, 5);
    r->signal = (int)col_int(s, 6);
    r->restarts = (int)col_int(s, 7);
    r->reason = dup_col(s, 8);
    r->message = dup_col(s, 9);
    r->started_at = col_int(s, 10);
    r->finished_at = col_int(s, 11);
}

static void rank_drop(void *elem)
{
    struct rank *r = elem;
    free(r->node);
    free(r->pod);
    free(r->reason);
    free(r->message);
}

int store_ranks_get(struct store *st, int64_t pk, struct rank **out, size_t *n, struct err *err)
{
    struct conn *c = store_reader(st, err);
    sqlite3_stmt *s = c ? STMT(c, J_RANKS, err) : NULL;
    if (s)
        bind_int(s, ":pk", pk);
    return sql_array(c, s, "reading ranks", sizeof(**out), rank_fill, rank_drop, out, n, err);
}

void ranks_free(struct rank *ranks, size_t n)
{
    for (size_t i = 0; i < n; i++)
        rank_drop(&ranks[i]);
    free(ranks);
}

static int label_row(void *obj, sqlite3_stmt *s, struct err *err)
{
    (void)err;
    json_object_set_new(obj, col_text(s, 0), json_string(col_text(s, 1)));
    return 0;
}

json_t *store_job_labels(struct store *st, int64_t pk, struct err *err)
{
    struct conn *c = store_reader(st, err);
    sqlite3_stmt *s = c ? STMT(c, J_LABELS, err) : NULL;
    if (s)
        bind_int(s, ":pk", pk);
    json_t *obj = json_object();
    if (sql_rows(c, s, "reading labels", label_row, obj, err) < 0) {
        json_decref(obj);
        return NULL;
    }
    return obj;
}

/* Appends "AND <clause>" for one label requirement; params go to *binds in order. */
static void label_clause(struct buf *q, const struct label_req *l, const char ***binds, size_t *nb)
{
    bool negate = l->op == LABEL_NE || l->op == LABEL_NOTIN || l->op == LABEL_ABSENT;
    /* A probe per candidate job, newest first: a page of a common label stops early. */
    buf_printf(q, " AND %sEXISTS (SELECT 1 FROM job_labels WHERE job_pk = jobs.pk AND key = ?",
               negate ? "NOT " : "");
    *binds = xrealloc(*binds, (*nb + 1 + l->nvalues) * sizeof(**binds));
    (*binds)[(*nb)++] = l->key;
    if (l->op != LABEL_EXISTS && l->op != LABEL_ABSENT) {
        buf_puts(q, " AND value IN (");
        for (size_t i = 0; i < l->nvalues; i++) {
            buf_puts(q, i ? ", ?" : "?");
            (*binds)[(*nb)++] = l->values[i];
        }
        buf_putc(q, ')');
    }
    buf_putc(q, ')');
}

/* Builds the list query; text parameters are collected in binds, in order. */
static void list_query(struct buf *q, const struct job_filter *f, const char ***binds, size_t *nb)
{
    buf_puts(q, f->spec_size_only ? "SELECT " JOB_COLS_SIZE " FROM jobs WHERE 1"
                                  : "SELECT " JOB_COLS " FROM jobs WHERE 1");
    if (f->nstates) {
        buf_puts(q, " AND state IN (");
        for (size_t i = 0; i < f->nstates; i++)
            buf_printf(q, "%s'%s'", i ? ", " : "", jobstate_name(f->states[i]));
        buf_putc(q, ')');
    }
    if (f->name) {
        buf_puts(q, " AND name = ?");
        *binds = xrealloc(*binds, (*nb + 1) * sizeof(**binds));
        (*binds)[(*nb)++] = f->name;
    }
    if (f->executor) {
        buf_puts(q, " AND executor = ?");
        *binds = xrealloc(*binds, (*nb + 1) * sizeof(**binds));
        (*binds)[(*nb)++] = f->executor;
    }
    if (f->before_pk > 0)
        buf_printf(q, " AND pk < %lld", (long long)f->before_pk);
    for (size_t i = 0; i < f->nlabels; i++)
        label_clause(q, &f->labels[i], binds, nb);
    buf_printf(q, " ORDER BY pk DESC LIMIT %d", f->limit + 1);
}

static int collect_jobs(struct conn *c, sqlite3_stmt *s, struct job ***out, size_t *n,
                        struct err *err)
{
    return sql_array(c, s, "listing jobs", sizeof(**out), job_fill, job_drop, out, n, err);
}

int store_job_list(struct store *st, const struct job_filter *f, struct job ***out, size_t *n,
                   int64_t *next_pk, struct err *err)
{
    struct conn *c = store_reader(st, err);
    if (!c)
        return -1;
    struct buf q = BUF_INIT;
    const char **binds = NULL;
    size_t nb = 0;
    list_query(&q, f, &binds, &nb);
    sqlite3_stmt *s = NULL;
    int rc = -1;
    if (sqlite3_prepare_v2(c->db, q.data, (int)q.len, &s, NULL) != SQLITE_OK) {
        sql_fail(c, err, "preparing the job list");
        goto out;
    }
    for (size_t i = 0; i < nb; i++)
        sqlite3_bind_text(s, (int)i + 1, binds[i], -1, SQLITE_STATIC);
    rc = collect_jobs(c, s, out, n, err);
    *next_pk = 0;
    if (rc == 0 && *n > (size_t)f->limit) {
        job_free((*out)[--*n]);
        *next_pk = (*out)[*n - 1]->pk;
    }
out:
    sqlite3_finalize(s);
    free(binds);
    buf_release(&q);
    return rc;
}

int store_jobs_in_flight(struct store *st, struct job ***out, size_t *n, struct err *err)
{
    struct conn *c = store_reader(st, err);
    sqlite3_stmt *s = c ? STMT(c, J_IN_FLIGHT, err) : NULL;
    return collect_jobs(c, s, out, n, err);
}

static int count_row(void *counts, sqlite3_stmt *s, struct err *err)
{
    (void)err;
    enum job_state state;
    if (jobstate_parse(col_text(s, 0), &state) == 0)
        ((int64_t *)counts)[state] = col_int(s, 1);
    return 0;
}

int store_jobs_count_by_state(struct store *st, int64_t counts[JOB_STATE_COUNT], struct err *err)
{
    memset(counts, 0, sizeof(int64_t) * JOB_STATE_COUNT);
    struct conn *c = store_reader(st, err);
    sqlite3_stmt *s = c ? STMT(c, J_COUNT, err) : NULL;
    return sql_rows(c, s, "counting jobs", count_row, counts, err);
}

static int apply_delete(struct conn *c, void *arg, struct err *err)
{
    int64_t pk = *(int64_t *)arg;
    sqlite3_stmt *s = STMT(c, J_DELETE, err);
    if (!s)
        return -1;
    bind_int(s, ":pk", pk);
    if (sql_exec_stmt(c, s, err, "deleting the job") < 0)
        return -1;
    if (sqlite3_changes(c->db) == 0)
        return err_set(err, ERR_CONFLICT, "only a finished job can be deleted; cancel it first");
    return 0;
}

int store_job_delete(struct store *st, int64_t pk, struct err *err)
{
    int rc = store_write_wait(st, apply_delete, &pk, err);
    if (rc == 0)
        logcache_drop(store_logcache(st), pk);
    store_tokens_changed(st); /* its worker tokens went with it */
    return rc;
}

int store_job_suspensions(struct store *st, int64_t pk)
{
    struct err err;
    err_init(&err);
    struct conn *c = store_reader(st, &err);
    sqlite3_stmt *s = c ? STMT(c, J_SUSPENSIONS, &err) : NULL;
    int n = 0;
    if (s) {
        bind_int(s, ":pk", pk);
        if (sqlite3_step(s) == SQLITE_ROW)
            n = (int)col_int(s, 0);
        sqlite3_reset(s);
    }
    err_release(&err);
    return n;
}
