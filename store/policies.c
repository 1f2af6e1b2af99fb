/*
 * store/policies: SQL for cluster policies (see policies.h). Writes (with their audit entry) run
 * on the writer thread; reads on the caller's connection. It does not check the grants (api/
 * policy_grants.c does, before they get here); it does check that the tokens exist and that
 * each is governed once, inside the write, so that a token made or moved meanwhile cannot slip
 * between a check and the insert.
 */
#include "store/policies.h"

#include "core/xalloc.h"
#include "store/internal.h"

enum {
    P_EXISTS,
    P_UPSERT,
    P_UNTOKEN,
    P_TOKEN_STATE,
    P_TOKEN_ADD,
    P_DELETE,
    P_GET,
    P_LIST,
    P_FOR_TOKEN,
};

#define POLICY_COLS                                                                                \
    "p.name, p.grants, p.created_by, p.created_at, p.updated_at,"                                  \
    " (SELECT group_concat(token_id, ',') FROM (SELECT token_id FROM cluster_policy_tokens t"      \
    "  WHERE t.policy = p.name ORDER BY token_id))"

static const char *const sql[] = {
    [P_EXISTS] = "SELECT 1 FROM cluster_policies WHERE name = :name",
    [P_UPSERT] = "INSERT INTO cluster_policies (name, grants, created_by, created_at, updated_at)"
                 " VALUES (:name, :grants, :actor, :now, :now) ON CONFLICT (name) DO UPDATE"
                 " SET grants = excluded.grants, updated_at = excluded.updated_at",
    [P_UNTOKEN] = "DELETE FROM cluster_policy_tokens WHERE policy = :name",
    /* Whether the id is an API token's (worker tokens are bound to a job), and who governs it. */
    [P_TOKEN_STATE] = "SELECT (SELECT 1 FROM tokens WHERE id = :id AND job_pk IS NULL),"
                      " (SELECT policy FROM cluster_policy_tokens WHERE token_id = :id)",
    [P_TOKEN_ADD] = "INSERT INTO cluster_policy_tokens (token_id, policy) VALUES (:id, :name)",
    [P_DELETE] = "DELETE FROM cluster_policies WHERE name = :id",
    [P_GET] = "SELECT " POLICY_COLS " FROM cluster_policies p WHERE p.name = :name",
    [P_LIST] = "SELECT " POLICY_COLS " FROM cluster_policies p ORDER BY p.name",
    [P_FOR_TOKEN] = "SELECT name, grants FROM cluster_policies WHERE name = coalesce("
                    "(SELECT policy FROM cluster_policy_tokens WHERE token_id = :id), 'default')",
};

#define STMT(c, i, err) stmt((c), MOD_POLICIES, (i), sql[(i)], (err))

/* One token of a put: an API token's id, governed by no other policy; then recorded. */
static int add_token(struct conn *c, const struct policy_put *p, size_t i, struct err *err)
{
    sqlite3_stmt *s = STMT(c, P_TOKEN_STATE, err);
    if (!s)
        return -1;
    bind_text(s, ":id", p->tokens[i]);
    if (sqlite3_step(s) != SQLITE_ROW) {
        sqlite3_reset(s);
        return sql_fail(c, err, "reading a token");
    }
    bool known = sqlite3_column_type(s, 0) != SQLITE_NULL;
    char *other = col_text_or_null(s, 1) ? xstrdup(col_text(s, 1)) : NULL;
    sqlite3_reset(s);
    int rc = 0;
    if (!known) {
        char ptr[32];
        snprintf(ptr, sizeof(ptr), "/tokens/%zu", i);
        rc = err_field(err, ptr, "no API token has the id '%s'", p->tokens[i]);
    } else if (other) { /* this policy's own were removed before: another one governs it */
        rc = err_set(err, ERR_CONFLICT,
                     "token %s is governed by policy '%s'; take it out of that one first",
                     p->tokens[i], other);
    }
    free(other);
    if (rc < 0)
        return -1;
    if (!(s = STMT(c, P_TOKEN_ADD, err)))
        return -1;
    bind_text(s, ":id", p->tokens[i]);
    bind_text(s, ":name", p->name);
    return sql_exec_stmt(c, s, err, "recording a policy's token");
}

static int apply_put(struct conn *c, void *arg, struct err *err)
{
    struct policy_put *p = arg;
    sqlite3_stmt *s = STMT(c, P_EXISTS, err);
    if (!s)
        return -1;
    bind_text(s, ":name", p->name);
    int step = sqlite3_step(s);
    sqlite3_reset(s);
    if (step != SQLITE_ROW && step != SQLITE_DONE)
        return sql_fail(c, err, "reading a policy");
    p->created = step == SQLITE_DONE; /* afresh: this may run twice (store/internal.h) */
    if (!(s = STMT(c, P_UPSERT, err)))
        return -1;
    bind_text(s, ":name", p->name);
    bind_text(s, ":grants", p->grants);
    bind_text(s, ":actor", p->actor ? p->actor : "");
    bind_int(s, ":now", p->now);
    if (sql_exec_stmt(c, s, err, "storing the policy") < 0)
        return -1;
    if (!(s = STMT(c, P_UNTOKEN, err)))
        return -1;
    bind_text(s, ":name", p->name);
    if (sql_exec_stmt(c, s, err, "replacing a policy's tokens") < 0)
        return -1;
    for (size_t i = 0; i < p->ntokens; i++)
        if (add_token(c, p, i, err) < 0)
            return -1;
    return audit_change(c, "policy", p->created ? "create" : "update", p->name, p->actor,
                        p->request_id, err);
}

int store_policy_put(struct store *st, struct policy_put *p, struct err *err)
{
    return store_write_wait(st, apply_put, p, err);
}

struct delete_op {
    const char *name, *actor, *request_id;
};

static int apply_delete(struct conn *c, void *arg, struct err *err)
{
    const struct delete_op *op = arg;
    /* Its tokens' rows go with it (ON DELETE CASCADE): they fall back to "default". */
    return delete_audited(c, STMT(c, P_DELETE, err), "policy", op->name, op->actor, op->request_id,
                          err);
}

int store_policy_delete(struct store *st, const char *name, const char *actor,
                        const char *request_id, struct err *err)
{
    struct delete_op op = { name, actor, request_id };
    return store_write_wait(st, apply_delete, &op, err);
}

/* "a,b,c" into a heap array of heap strings. */
static void split_tokens(const char *list, struct policy_def *p)
{
    if (!list || !*list)
        return;
    size_t n = 1;
    for (const char *q = list; *q; q++)
        n += *q == ',';
    p->tokens = xcalloc(n, sizeof(*p->tokens));
    for (const char *q = list; q;) {
        const char *comma = strchr(q, ',');
        size_t len = comma ? (size_t)(comma - q) : strlen(q);
        p->tokens[p->ntokens++] = xstrndup(q, len);
        q = comma ? comma + 1 : NULL;
    }
}

/* Fills a slot of a policy list (a `struct policy_def *`) from a row of POLICY_COLS. */
static void fill(void *slot, sqlite3_stmt *s)
{
    struct policy_def *p = XNEW(struct policy_def);
    p->name = xstrdup(col_text(s, 0));
    p->grants = xstrdup(col_text(s, 1));
    p->created_by = xstrdup(col_text(s, 2));
    p->created_at = col_int(s, 3);
    p->updated_at = col_int(s, 4);
    split_tokens(col_text_or_null(s, 5), p);
    *(struct policy_def **)slot = p;
}

void policy_def_free(struct policy_def *p)
{
    if (!p)
        return;
    free(p->name);
    free(p->grants);
    for (size_t i = 0; i < p->ntokens; i++)
        free(p->tokens[i]);
    free(p->tokens);
    free(p->created_by);
    free(p);
}

static void drop(void *slot)
{
    policy_def_free(*(struct policy_def **)slot);
}

void policy_defs_free(struct policy_def **p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        policy_def_free(p[i]);
    free(p);
}

struct policy_def *store_policy_get(struct store *st, const char *name, struct err *err)
{
    struct conn *c = store_reader(st, err);
    sqlite3_stmt *s = c ? STMT(c, P_GET, err) : NULL;
    struct policy_def *p = NULL;
    if (s)
        bind_text(s, ":name", name);
    sql_one(c, s, "policy", name, fill, &p, err);
    return p;
}

int store_policy_list(struct store *st, struct policy_def ***out, size_t *n, struct err *err)
{
    struct conn *c = store_reader(st, err);
    sqlite3_stmt *s = c ? STMT(c, P_LIST, err) : NULL;
    return sql_array(c, s, "listing policies", sizeof(**out), fill, drop, out, n, err);
}

struct policy_def *store_policy_for_token(struct store *st, const char *token_id, struct err *err)
{
    struct conn *c = store_reader(st, err);
    sqlite3_stmt *s = c ? STMT(c, P_FOR_TOKEN, err) : NULL;
    if (!s)
        return NULL;
    bind_text(s, ":id", token_id ? token_id : "");
    int rc = sqlite3_step(s);
    struct policy_def *p = NULL;
    if (rc == SQLITE_ROW) {
        p = XNEW(struct policy_def);
        p->name = xstrdup(col_text(s, 0));
        p->grants = xstrdup(col_text(s, 1));
    } else if (rc != SQLITE_DONE) {
        sql_fail(c, err, "reading the token's policy");
    }
    sqlite3_reset(s);
    return p;
}
