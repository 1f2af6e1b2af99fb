/*
 * store/tokens: API tokens and the audit trail. Token uses are recorded in memory
 * (store_token_touch) and flushed in one transaction, so authentication never writes per request.
 */
#include "store/tokens.h"

#include <pthread.h>

#include "core/clock.h"
#include "core/xalloc.h"
#include "store/internal.h"

enum {
    T_INSERT,
    T_BY_HASH,
    T_LIST,
    T_REVOKE,
    T_COUNT,
    T_TOUCH,
    T_NAME_TAKEN,
    T_AUDIT_ADD,
    T_AUDIT_LIST,
    T_REVOKE_JOB,
    T_REVOKE_BOOTSTRAP,
};

static const char *const sql[] = {
    [T_INSERT] = "INSERT INTO tokens (id, name, hash, scope, job_pk, created_by, created_at,"
                 " expires_at) VALUES (:id, :name, :hash, :scope, :job_pk, :created_by, :now,"
                 " :expires_at)",
    [T_BY_HASH] = "SELECT t.pk, t.id, t.name, t.scope, j.id, t.created_by, t.created_at,"
                  " t.expires_at, t.revoked_at, t.last_used_at"
                  " FROM tokens t LEFT JOIN jobs j ON j.pk = t.job_pk WHERE t.hash = :hash",
    [T_LIST] = "SELECT pk, id, name, scope, NULL, created_by, created_at, expires_at, revoked_at,"
               " last_used_at FROM tokens WHERE job_pk IS NULL ORDER BY pk DESC",
    [T_REVOKE] = "UPDATE tokens SET revoked_at = :now WHERE (id = :key OR name = :key)"
                 " AND revoked_at = 0 AND job_pk IS NULL",
    [T_COUNT] = "SELECT count(*) FROM tokens WHERE revoked_at = 0 AND job_pk IS NULL"
                " AND (expires_at = 0 OR expires_at > :now)",
    [T_TOUCH] = "UPDATE tokens SET last_used_at = max(last_used_at, :now) WHERE pk = :pk",
    [T_NAME_TAKEN] = "SELECT 1 FROM tokens WHERE name = :name AND revoked_at = 0"
                     " AND job_pk IS NULL",
    [T_AUDIT_ADD] = "INSERT INTO audit (time, actor, action, target, detail, request_id)"
                    " VALUES (:time, :actor, :action, :target, :detail, :request_id)",
    [T_REVOKE_JOB] = "UPDATE tokens SET revoked_at = :now WHERE job_pk = :pk AND revoked_at = 0",
    [T_REVOKE_BOOTSTRAP] =
        "UPDATE tokens SET revoked_at = :now WHERE name = :name AND revoked_at = 0"
        " AND job_pk IS NULL AND created_by = 'bootstrap'",
    [T_AUDIT_LIST] = "SELECT pk, time, actor, action, target, detail, request_id FROM audit"
                     " WHERE (:target IS NULL OR target = :target) AND pk < :before"
                     " ORDER BY pk DESC LIMIT :limit",
};

#define STMT(c, i, err) stmt((c), MOD_TOKENS, (i), sql[(i)], (err))

/* Pending last-used times: a small open-addressed table keyed by token pk. */
#define TOUCH_SLOTS 256
static pthread_mutex_t touch_lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
    int64_t pk, time;
} touches[TOUCH_SLOTS];

static int apply_insert(struct conn *c, void *arg, struct err *err)
{
    const struct token_new *t = arg;
    sqlite3_stmt *s;
    if (t->replaces_bootstrap) {
        if (!(s = STMT(c, T_REVOKE_BOOTSTRAP, err)))
            return -1;
        bind_text(s, ":name", t->name);
        bind_int(s, ":now", t->now);
        if (sql_exec_stmt(c, s, err, "revoking the replaced admin token") < 0)
            return -1;
    }
    if (!t->job_pk) {
        s = STMT(c, T_NAME_TAKEN, err);
        if (!s)
            return -1;
        bind_text(s, ":name", t->name);
        int rc = sqlite3_step(s);
        sqlite3_reset(s);
        if (rc == SQLITE_ROW)
            return err_set(err, ERR_CONFLICT, "a token named '%s' exists; revoke it first",
                           t->name);
    }
    s = STMT(c, T_INSERT, err);
    if (!s)
        return -1;
    bind_text(s, ":id", t->id);
    bind_text(s, ":name", t->name);
    bind_text(s, ":hash", t->hash);
    bind_text(s, ":scope", t->scope);
    if (t->job_pk)
        bind_int(s, ":job_pk", t->job_pk);
    else
        bind_null(s, ":job_pk");
    bind_text(s, ":created_by", t->created_by ? t->created_by : "");
    bind_int(s, ":now", t->now);
    bind_int(s, ":expires_at", t->expires_at);
    return sql_exec_stmt(c, s, err, "storing the token");
}

int store_token_insert(struct store *st, const struct token_new *t, struct err *err)
{
    int rc = store_write_wait(st, apply_insert, (void *)t, err);
    if (t->replaces_bootstrap)
        store_tokens_changed(st);
    return rc;
}

/* Fills a slot of a token list (a `struct token *`) from a row. */
static void token_fill(void *slot, sqlite3_stmt *s)
{
    struct token *t = XNEW(struct token);
    t->pk = col_int(s, 0);
    t->id = xstrdup(col_text(s, 1));
    t->name = xstrdup(col_text(s, 2));
    t->scope = xstrdup(col_text(s, 3));
    t->job_id = col_text_or_null(s, 4) ? xstrdup(col_text(s, 4)) : NULL;
    t->created_by = xstrdup(col_text(s, 5));
    t->created_at = col_int(s, 6);
    t->expires_at = col_int(s, 7);
    t->revoked_at = col_int(s, 8);
    t->last_used_at = col_int(s, 9);
    *(struct token **)slot = t;
}

void token_free(struct token *t)
{
    if (!t)
        return;
    free(t->id);
    free(t->name);
    free(t->scope);
    free(t->job_id);
    free(t->created_by);
    free(t);
}

static void token_drop(void *slot)
{
    token_free(*(struct token **)slot);
}

void tokens_free(struct token **t, size_t n)
{
    for (size_t i = 0; i < n; i++)
        token_free(t[i]);
    free(t);
}

struct token *store_token_by_hash(struct store *st, const char *hash, struct err *err)
{
    struct conn *c = store_reader(st, err);
    sqlite3_stmt *s = c ? STMT(c, T_BY_HASH, err) : NULL;
    if (!s)
        return NULL;
    bind_text(s, ":hash", hash);
    int rc = sqlite3_step(s);
    struct token *t = NULL;
    if (rc == SQLITE_ROW)
        token_fill(&t, s);
    else if (rc == SQLITE_DONE)
        err_set(err, ERR_NOT_FOUND, "unknown token");
    else
        sql_fail(c, err, "reading a token");
    sqlite3_reset(s);
    return t;
}

int store_token_list(struct store *st, struct token ***out, size_t *n, struct err *err)
{
    struct conn *c = store_reader(st, err);
    sqlite3_stmt *s = c ? STMT(c, T_LIST, err) : NULL;
    return sql_array(c, s, "listing tokens", sizeof(**out), token_fill, token_drop, out, n, err);
}

struct revoke_op {
    const char *key;
    int64_t now;
};

static int apply_revoke(struct conn *c, void *arg, struct err *err)
{
    struct revoke_op *op = arg;
    sqlite3_stmt *s = STMT(c, T_REVOKE, err);
    if (!s)
        return -1;
    bind_text(s, ":key", op->key);
    bind_int(s, ":now", op->now);
    if (sql_exec_stmt(c, s, err, "revoking the token") < 0)
        return -1;
    if (sqlite3_changes(c->db) == 0)
        return err_set(err, ERR_NOT_FOUND, "no active token '%s'", op->key);
    return 0;
}

int store_token_revoke(struct store *st, const char *id_or_name, int64_t now, struct err *err)
{
    struct revoke_op op = { id_or_name, now };
    int rc = store_write_wait(st, apply_revoke, &op, err);
    store_tokens_changed(st);
    return rc;
}

struct revoke_job_op {
    int64_t pk, now;
};

static int apply_revoke_job(struct conn *c, void *arg, struct err *err)
{
    struct revoke_job_op *op = arg;
    sqlite3_stmt *s = STMT(c, T_REVOKE_JOB, err);
    if (!s)
        return -1;
    bind_int(s, ":pk", op->pk);
    bind_int(s, ":now", op->now);
    return sql_exec_stmt(c, s, err, "revoking worker tokens");
}

int store_tokens_revoke_job(struct store *st, int64_t job_pk, int64_t now, struct err *err)
{
    struct revoke_job_op op = { job_pk, now };
    int rc = store_write_wait(st, apply_revoke_job, &op, err);
    store_tokens_changed(st);
    return rc;
}

int store_token_count_active(struct store *st, int64_t now, int64_t *count, struct err *err)
{
    struct conn *c = store_reader(st, err);
    sqlite3_stmt *s = c ? STMT(c, T_COUNT, err) : NULL;
    if (!s)
        return -1;
    bind_int(s, ":now", now);
    int rc = sqlite3_step(s);
    *count = rc == SQLITE_ROW ? col_int(s, 0) : 0;
    sqlite3_reset(s);
    return rc == SQLITE_ROW ? 0 : sql_fail(c, err, "counting tokens");
}

void store_token_touch(struct store *st, int64_t pk, int64_t now)
{
    (void)st;
    pthread_mutex_lock(&touch_lock);
    size_t i = (size_t)pk % TOUCH_SLOTS;
    /* A collision overwrites the older entry's slot only after it is flushed: probe. */
    for (size_t k = 0; k < TOUCH_SLOTS; k++, i = (i + 1) % TOUCH_SLOTS) {
        if (touches[i].pk == pk || touches[i].pk == 0) {
            touches[i].pk = pk;
            touches[i].time = now;
            break;
        }
    }
    pthread_mutex_unlock(&touch_lock);
}

struct touch_batch {
    size_t n;
    int64_t pk[TOUCH_SLOTS], time[TOUCH_SLOTS];
};

static int apply_touches(struct conn *c, void *arg, struct err *err)
{
    struct touch_batch *b = arg;
    for (size_t i = 0; i < b->n; i++) {
        sqlite3_stmt *s = STMT(c, T_TOUCH, err);
        if (!s)
            return -1;
        bind_int(s, ":pk", b->pk[i]);
        bind_int(s, ":now", b->time[i]);
        if (sql_exec_stmt(c, s, err, "recording token use") < 0)
            return -1;
    }
    return 0;
}

int store_tokens_flush(struct store *st, struct err *err)
{
    struct touch_batch *b = XNEW(struct touch_batch);
    pthread_mutex_lock(&touch_lock);
    for (size_t i = 0; i < TOUCH_SLOTS; i++) {
        if (touches[i].pk) {
            b->pk[b->n] = touches[i].pk;
            b->time[b->n++] = touches[i].time;
            touches[i].pk = 0;
        }
    }
    pthread_mutex_unlock(&touch_lock);
    int rc = b->n ? store_write_wait(st, apply_touches, b, err) : 0;
    free(b);
    return rc;
}

static int apply_audit(struct conn *c, void *arg, struct err *err)
{
    const struct audit_entry *e = arg;
    sqlite3_stmt *s = STMT(c, T_AUDIT_ADD, err);
    if (!s)
        return -1;
    bind_int(s, ":time", e->time ? e->time : clock_now_ns());
    bind_text(s, ":actor", e->actor ? e->actor : "");
    bind_text(s, ":action", e->action);
    bind_text(s, ":target", e->target);
    bind_text(s, ":detail", e->detail ? e->detail : "{}");
    bind_text(s, ":request_id", e->request_id ? e->request_id : "");
    return sql_exec_stmt(c, s, err, "recording the audit entry");
}

int audit_insert(struct conn *c, const struct audit_entry *e, struct err *err)
{
    return apply_audit(c, (void *)e, err);
}

int audit_change(struct conn *c, const char *noun, const char *verb, const char *key,
                 const char *actor, const char *request_id, struct err *err)
{
    char action[64], target[160];
    snprintf(action, sizeof(action), "%s.%s", noun, verb);
    snprintf(target, sizeof(target), "%s/%s", noun, key);
    struct audit_entry e = {
        .actor = actor, .action = action, .target = target, .request_id = request_id
    };
    return apply_audit(c, &e, err);
}

int delete_audited(struct conn *c, sqlite3_stmt *s, const char *noun, const char *id,
                   const char *actor, const char *request_id, struct err *err)
{
    if (!s)
        return -1;
    bind_text(s, ":id", id);
    if (sql_exec_one(c, s, err, noun, id) < 0)
        return -1;
    return audit_change(c, noun, "delete", id, actor, request_id, err);
}

int store_audit_add(struct store *st, const struct audit_entry *e, struct err *err)
{
    return store_write_wait(st, apply_audit, (void *)e, err);
}

static json_t *audit_json(void *ctx, sqlite3_stmt *s, struct err *err)
{
    (void)ctx, (void)err;
    char ts[CLOCK_RFC3339_MAX];
    json_t *detail = json_loads(col_text(s, 5), 0, NULL);
    return json_pack("{s:I,s:s,s:s,s:s,s:s,s:o,s:s}", "seq", (json_int_t)col_int(s, 0), "time",
                     clock_format(col_int(s, 1), ts), "actor", col_text(s, 2), "action",
                     col_text(s, 3), "target", col_text(s, 4), "detail",
                     detail ? detail : json_object(), "request_id", col_text(s, 6));
}

json_t *store_audit_list(struct store *st, const char *target, int64_t before, int limit,
                         struct err *err)
{
    struct conn *c = store_reader(st, err);
    sqlite3_stmt *s = c ? STMT(c, T_AUDIT_LIST, err) : NULL;
    if (!s)
        return NULL;
    bind_text(s, ":target", target);
    bind_int(s, ":before", before > 0 ? before : INT64_MAX);
    bind_int(s, ":limit", limit);
    return sql_json_rows(c, s, "reading the audit trail", audit_json, NULL, err);
}
