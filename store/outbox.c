/*
 * store/outbox: the webhook outbox (see store/webhooks.h): queued messages, their attempts, the
 * per-job cursor over job events, and the "oldest pending message per (webhook, job)" query that
 * keeps each job's messages in order. Writes run on the writer thread; reads on the caller's
 * connection.
 */
#include "core/jsonx.h"
#include "core/xalloc.h"
#include "store/internal.h"
#include "store/webhooks.h"

enum {
    O_ADD,
    O_CURSOR_PUT,
    O_CURSOR_GET,
    O_BEHIND,
    O_DUE,
    O_NEXT,
    O_ATTEMPT,
    O_RESULT,
    O_DISABLE,
    O_LIST,
    O_ATTEMPTS,
    O_PRUNE,
};

/* The oldest pending message of its (webhook, job): only that one may be sent. */
#define HEAD                                                                                       \
    " o.state = 'pending' AND w.enabled = 1 AND NOT EXISTS (SELECT 1 FROM webhook_outbox p"        \
    " WHERE p.state = 'pending' AND p.webhook_pk = o.webhook_pk AND p.job_id = o.job_id"           \
    " AND p.pk < o.pk)"

static const char *const sql[] = {
    [O_ADD] = "INSERT INTO webhook_outbox (webhook_pk, msg_id, event, job_id, body, next_at,"
              " created_at) VALUES (:webhook_pk, :msg_id, :event, :job_id, :body, :now, :now)",
    [O_CURSOR_PUT] = "INSERT INTO webhook_cursors (job_pk, seq) VALUES (:pk, :seq)"
                     " ON CONFLICT (job_pk) DO UPDATE SET seq = max(seq, :seq)",
    [O_CURSOR_GET] = "SELECT seq FROM webhook_cursors WHERE job_pk = :pk",
    [O_BEHIND] = "SELECT j.pk FROM jobs j LEFT JOIN webhook_cursors c ON c.job_pk = j.pk"
                 " WHERE (j.updated_at >= :since OR j.state NOT IN ('succeeded', 'failed',"
                 " 'cancelled', 'preempted')) AND (SELECT max(seq) FROM events e"
                 " WHERE e.job_pk = j.pk) > coalesce(c.seq, 0) ORDER BY j.pk",
    [O_DUE] = "SELECT o.pk, o.webhook_pk, w.url, w.secret, o.msg_id, o.event, o.job_id, o.body,"
              " o.attempts FROM webhook_outbox o JOIN webhooks w ON w.pk = o.webhook_pk"
              " WHERE o.next_at <= :now AND" HEAD " ORDER BY o.next_at, o.pk LIMIT :limit",
    [O_NEXT] = "SELECT min(o.next_at) FROM webhook_outbox o JOIN webhooks w"
               " ON w.pk = o.webhook_pk WHERE" HEAD,
    [O_ATTEMPT] = "INSERT OR REPLACE INTO webhook_attempts (outbox_pk, attempt, time, status,"
                  " error, duration_ms) VALUES (:pk, :attempt, :now, :status, :error,"
                  " :duration_ms)",
    [O_RESULT] = "UPDATE webhook_outbox SET state = :state, attempts = :attempt,"
                 " next_at = :next_at, last_status = :status, last_error = :error,"
                 " finished_at = CASE WHEN :state = 'pending' THEN 0 ELSE :now END WHERE pk = :pk",
    [O_DISABLE] = "UPDATE webhooks SET enabled = 0, disabled_reason = :reason, updated_at = :now"
                  " WHERE pk = :pk",
    [O_LIST] = "SELECT pk, msg_id, event, job_id, state, attempts, next_at, last_status,"
               " last_error, created_at, finished_at, body FROM webhook_outbox"
               " WHERE webhook_pk = :webhook_pk AND (:before = 0 OR pk < :before)"
               " ORDER BY pk DESC LIMIT :limit",
    [O_ATTEMPTS] = "SELECT attempt, time, status, error, duration_ms FROM webhook_attempts"
                   " WHERE outbox_pk = :pk ORDER BY attempt",
    [O_PRUNE] = "DELETE FROM webhook_outbox WHERE state != 'pending' AND finished_at < :before",
};

#define STMT(c, i, err) stmt((c), MOD_OUTBOX, (i), sql[(i)], (err))

struct add_op {
    const struct outbox_new *m;
    size_t n;
    int64_t job_pk, seq, now;
};

static int apply_add(struct conn *c, void *arg, struct err *err)
{
    const struct add_op *op = arg;
    for (size_t i = 0; i < op->n; i++) {
        sqlite3_stmt *s = STMT(c, O_ADD, err);
        if (!s)
            return -1;
        bind_int(s, ":webhook_pk", op->m[i].webhook_pk);
        bind_text(s, ":msg_id", op->m[i].msg_id);
        bind_text(s, ":event", op->m[i].event);
        bind_text(s, ":job_id", op->m[i].job_id ? op->m[i].job_id : "");
        bind_text(s, ":body", op->m[i].body);
        bind_int(s, ":now", op->now);
        if (sql_exec_stmt(c, s, err, "queueing a webhook message") < 0)
            return -1;
    }
    if (op->job_pk <= 0)
        return 0;
    sqlite3_stmt *s = STMT(c, O_CURSOR_PUT, err);
    if (!s)
        return -1;
    bind_int(s, ":pk", op->job_pk);
    bind_int(s, ":seq", op->seq);
    return sql_exec_stmt(c, s, err, "moving the webhook cursor");
}

int store_outbox_add(struct store *st, const struct outbox_new *m, size_t n, int64_t job_pk,
                     int64_t seq, int64_t now, struct err *err)
{
    struct add_op op = { m, n, job_pk, seq, now };
    return store_write_wait(st, apply_add, &op, err);
}

int store_webhook_cursor(struct store *st, int64_t job_pk, int64_t *seq, struct err *err)
{
    struct conn *c = store_reader(st, err);
    sqlite3_stmt *s = c ? STMT(c, O_CURSOR_GET, err) : NULL;
    if (!s)
        return -1;
    bind_int(s, ":pk", job_pk);
    int rc = sqlite3_step(s);
    *seq = rc == SQLITE_ROW ? col_int(s, 0) : 0;
    sqlite3_reset(s);
    return rc == SQLITE_ROW || rc == SQLITE_DONE ? 0 : sql_fail(c, err, "reading a cursor");
}

int store_webhook_behind(struct store *st, int64_t since, int64_t **pks, size_t *n, struct err *err)
{
    struct conn *c = store_reader(st, err);
    sqlite3_stmt *s = c ? STMT(c, O_BEHIND, err) : NULL;
    if (s)
        bind_int(s, ":since", since);
    return sql_array(c, s, "reading jobs behind their cursor", sizeof(**pks), sql_fill_int, NULL,
                     pks, n, err);
}

static void msg_fill(void *slot, sqlite3_stmt *s)
{
    struct outbox_msg *m = XNEW(struct outbox_msg);
    m->pk = col_int(s, 0);
    m->webhook_pk = col_int(s, 1);
    m->url = xstrdup(col_text(s, 2));
    m->secret = xstrdup(col_text(s, 3));
    m->msg_id = xstrdup(col_text(s, 4));
    m->event = xstrdup(col_text(s, 5));
    m->job_id = xstrdup(col_text(s, 6));
    m->body = xstrdup(col_text(s, 7));
    m->attempts = (int)col_int(s, 8);
    *(struct outbox_msg **)slot = m;
}

static void msg_drop(void *slot)
{
    outbox_msg_free(*(struct outbox_msg **)slot);
}

int store_outbox_due(struct store *st, int64_t now, int limit, struct outbox_msg ***out, size_t *n,
                     struct err *err)
{
    struct conn *c = store_reader(st, err);
    sqlite3_stmt *s = c ? STMT(c, O_DUE, err) : NULL;
    if (s) {
        bind_int(s, ":now", now);
        bind_int(s, ":limit", limit);
    }
    return sql_array(c, s, "reading due webhook messages", sizeof(**out), msg_fill, msg_drop, out,
                     n, err);
}

void outbox_msg_free(struct outbox_msg *m)
{
    if (!m)
        return;
    free(m->url);
    free(m->secret);
    free(m->msg_id);
    free(m->event);
    free(m->job_id);
    free(m->body);
    free(m);
}

void outbox_msgs_free(struct outbox_msg **m, size_t n)
{
    for (size_t i = 0; i < n; i++)
        outbox_msg_free(m[i]);
    free(m);
}

int store_outbox_next_at(struct store *st, int64_t *next_at, struct err *err)
{
    struct conn *c = store_reader(st, err);
    sqlite3_stmt *s = c ? STMT(c, O_NEXT, err) : NULL;
    if (!s)
        return -1;
    int rc = sqlite3_step(s);
    *next_at = rc == SQLITE_ROW ? col_int(s, 0) : 0;
    sqlite3_reset(s);
    return rc == SQLITE_ROW ? 0 : sql_fail(c, err, "reading the next webhook message");
}

static int apply_result(struct conn *c, void *arg, struct err *err)
{
    const struct outbox_result *r = arg;
    sqlite3_stmt *s = STMT(c, O_ATTEMPT, err);
    if (!s)
        return -1;
    bind_int(s, ":pk", r->pk);
    bind_int(s, ":attempt", r->attempt);
    bind_int(s, ":now", r->now);
    bind_int(s, ":status", r->status);
    bind_text(s, ":error", r->error ? r->error : "");
    bind_int(s, ":duration_ms", r->duration_ms);
    if (sql_exec_stmt(c, s, err, "recording a webhook attempt") < 0 ||
        !(s = STMT(c, O_RESULT, err)))
        return -1;
    bind_text(s, ":state", r->state);
    bind_int(s, ":attempt", r->attempt);
    bind_int(s, ":next_at", r->next_at);
    bind_int(s, ":status", r->status);
    bind_text(s, ":error", r->error ? r->error : "");
    bind_int(s, ":now", r->now);
    bind_int(s, ":pk", r->pk);
    if (sql_exec_stmt(c, s, err, "recording a webhook attempt") < 0)
        return -1;
    if (!r->disable)
        return 0;
    if (!(s = STMT(c, O_DISABLE, err)))
        return -1;
    bind_text(s, ":reason", r->reason ? r->reason : "");
    bind_int(s, ":now", r->now);
    bind_int(s, ":pk", r->webhook_pk);
    return sql_exec_stmt(c, s, err, "disabling the webhook");
}

int store_outbox_result(struct store *st, const struct outbox_result *r, struct err *err)
{
    return store_write_wait(st, apply_result, (void *)r, err);
}

static json_t *attempt_json(void *ctx, sqlite3_stmt *s, struct err *err)
{
    (void)ctx, (void)err;
    json_t *a = json_pack("{s:I}", "attempt", (json_int_t)col_int(s, 0));
    jsonx_set_time(a, "time", col_int(s, 1));
    json_object_set_new(a, "status", json_integer(col_int(s, 2)));
    jsonx_set_str(a, "error", *col_text(s, 3) ? col_text(s, 3) : NULL);
    json_object_set_new(a, "duration_ms", json_integer(col_int(s, 4)));
    return a;
}

static json_t *attempts_json(struct conn *c, int64_t pk, struct err *err)
{
    sqlite3_stmt *s = STMT(c, O_ATTEMPTS, err);
    if (s)
        bind_int(s, ":pk", pk);
    return sql_json_rows(c, s, "reading webhook attempts", attempt_json, NULL, err);
}

/* A message with its attempts (read by another statement of c while the list's steps). */
static json_t *message_json(void *c, sqlite3_stmt *s, struct err *err)
{
    json_t *o = json_pack("{s:I,s:s,s:s}", "seq", (json_int_t)col_int(s, 0), "id", col_text(s, 1),
                          "event", col_text(s, 2));
    jsonx_set_str(o, "job_id", *col_text(s, 3) ? col_text(s, 3) : NULL);
    jsonx_set_str(o, "state", col_text(s, 4));
    json_object_set_new(o, "attempts", json_integer(col_int(s, 5)));
    jsonx_set_time(o, "next_attempt_at", strcmp(col_text(s, 4), "pending") ? 0 : col_int(s, 6));
    json_object_set_new(o, "last_status", json_integer(col_int(s, 7)));
    jsonx_set_str(o, "last_error", *col_text(s, 8) ? col_text(s, 8) : NULL);
    jsonx_set_time(o, "created_at", col_int(s, 9));
    jsonx_set_time(o, "finished_at", col_int(s, 10));
    json_t *payload = json_loads(col_text(s, 11), 0, NULL);
    json_object_set_new(o, "payload", payload ? payload : json_null());
    json_t *attempts = attempts_json(c, col_int(s, 0), err);
    if (!attempts) {
        json_decref(o);
        return NULL;
    }
    json_object_set_new(o, "attempt_log", attempts);
    return o;
}

json_t *store_outbox_list(struct store *st, int64_t webhook_pk, int64_t before, int limit,
                          struct err *err)
{
    struct conn *c = store_reader(st, err);
    sqlite3_stmt *s = c ? STMT(c, O_LIST, err) : NULL;
    if (s) {
        bind_int(s, ":webhook_pk", webhook_pk);
        bind_int(s, ":before", before);
        bind_int(s, ":limit", limit);
    }
    return sql_json_rows(c, s, "listing webhook messages", message_json, c, err);
}

static int apply_prune(struct conn *c, void *arg, struct err *err)
{
    sqlite3_stmt *s = STMT(c, O_PRUNE, err);
    if (!s)
        return -1;
    bind_int(s, ":before", *(const int64_t *)arg);
    return sql_exec_stmt(c, s, err, "pruning the webhook outbox");
}

int store_outbox_prune(struct store *st, int64_t before, struct err *err)
{
    return store_write_wait(st, apply_prune, &before, err);
}
