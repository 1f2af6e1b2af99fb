/*
 * store/triggers: SQL for the trigger definitions (deliveries, objects and SNS subscriptions
 * are in store/deliveries.c). Writes and their audit entries run on the writer thread; reads on
 * the caller's connection; returned structs are heap copies owned by the caller. Validation of
 * rules, auth and values happens in the API before a trigger gets here.
 */
#include "store/triggers.h"

#include "core/xalloc.h"
#include "store/internal.h"
#include "store/tokens.h"

enum {
    G_TEMPLATE,
    G_INSERT,
    G_UPDATE,
    G_DELETE,
    G_GET,
    G_LIST,
};

#define TRIGGER_COLS                                                                               \
    "g.pk, g.id, g.name, t.name, g.template_values, g.rule, g.sender, g.auth, g.secrets,"          \
    " g.enabled, g.created_by, g.created_at, g.updated_at"

static const char *const sql[] = {
    [G_TEMPLATE] = "SELECT pk FROM templates WHERE name = :name",
    [G_INSERT] = "INSERT INTO triggers (id, name, template_pk, template_values, rule, sender, auth,"
                 " secrets, enabled, created_by, created_at, updated_at) VALUES (:id, :name,"
                 " :template_pk, :values, :rule, :sender, :auth, coalesce(:secrets, '[]'),"
                 " :enabled, :actor, :now, :now)",
    /* secrets NULL: an update keeps the stored ones */
    [G_UPDATE] = "UPDATE triggers SET template_pk = :template_pk, template_values = :values,"
                 " rule = :rule, sender = :sender, auth = :auth, enabled = :enabled,"
                 " secrets = coalesce(:secrets, secrets), updated_at = :now WHERE id = :id",
    [G_DELETE] = "DELETE FROM triggers WHERE id = :id",
    [G_GET] = "SELECT " TRIGGER_COLS " FROM triggers g JOIN templates t ON t.pk = g.template_pk"
              " WHERE g.id = :key OR g.name = :key",
    [G_LIST] = "SELECT " TRIGGER_COLS " FROM triggers g JOIN templates t ON t.pk = g.template_pk"
               " ORDER BY g.name",
};

#define STMT(c, i, err) stmt((c), MOD_TRIGGERS, (i), sql[(i)], (err))

/* The template's pk, or -1 with a field error naming /template. */
static int64_t template_pk(struct conn *c, const char *name, struct err *err)
{
    sqlite3_stmt *s = STMT(c, G_TEMPLATE, err);
    if (!s)
        return -1;
    bind_text(s, ":name", name);
    int rc = sqlite3_step(s);
    int64_t pk = rc == SQLITE_ROW ? col_int(s, 0) : -1;
    sqlite3_reset(s);
    if (rc == SQLITE_DONE)
        err_field(err, "/template", "no template named '%s'", name);
    else if (rc != SQLITE_ROW)
        sql_fail(c, err, "reading a template");
    return pk;
}

/* The statement `index` (insert or update) bound from t, or NULL with err. */
static sqlite3_stmt *bound(struct conn *c, int index, const struct trigger_put *t, struct err *err)
{
    int64_t tpk = template_pk(c, t->template_name, err);
    sqlite3_stmt *s = tpk < 0 ? NULL : STMT(c, index, err);
    if (!s)
        return NULL;
    bind_text(s, ":id", t->id);
    bind_int(s, ":template_pk", tpk);
    bind_text(s, ":values", t->values ? t->values : "{}");
    bind_text(s, ":rule", t->rule ? t->rule : "{}");
    bind_text(s, ":sender", t->sender ? t->sender : "auto");
    bind_text(s, ":auth", t->auth ? t->auth : "{}");
    bind_text(s, ":secrets", t->secrets);
    bind_int(s, ":enabled", t->enabled);
    bind_int(s, ":now", t->now);
    return s;
}

static int apply_insert(struct conn *c, void *arg, struct err *err)
{
    const struct trigger_put *t = arg;
    sqlite3_stmt *s = bound(c, G_INSERT, t, err);
    if (!s)
        return -1;
    bind_text(s, ":name", t->name);
    bind_text(s, ":actor", t->actor ? t->actor : "");
    if (sqlite3_step(s) != SQLITE_DONE) {
        int rc = sqlite3_extended_errcode(c->db) == SQLITE_CONSTRAINT_UNIQUE
                     ? err_set(err, ERR_CONFLICT, "a trigger named '%s' exists", t->name)
                     : sql_fail(c, err, "storing the trigger");
        sqlite3_reset(s);
        return rc;
    }
    sqlite3_reset(s);
    return audit_change(c, "trigger", "create", t->id, t->actor, t->request_id, err);
}

int store_trigger_insert(struct store *st, const struct trigger_put *t, struct err *err)
{
    return store_write_wait(st, apply_insert, (void *)t, err);
}

static int apply_update(struct conn *c, void *arg, struct err *err)
{
    const struct trigger_put *t = arg;
    sqlite3_stmt *s = bound(c, G_UPDATE, t, err);
    if (!s || sql_exec_one(c, s, err, "trigger", t->id) < 0)
        return -1;
    return audit_change(c, "trigger", "update", t->id, t->actor, t->request_id, err);
}

int store_trigger_update(struct store *st, const struct trigger_put *t, struct err *err)
{
    return store_write_wait(st, apply_update, (void *)t, err);
}

static int apply_delete(struct conn *c, void *arg, struct err *err)
{
    const struct trigger_put *t = arg;
    return delete_audited(c, STMT(c, G_DELETE, err), "trigger", t->id, t->actor, t->request_id,
                          err);
}

int store_trigger_delete(struct store *st, const char *id, const char *actor,
                         const char *request_id, struct err *err)
{
    struct trigger_put t = { .id = id, .actor = actor, .request_id = request_id };
    return store_write_wait(st, apply_delete, &t, err);
}

/* Fills a slot of a trigger_def list (an `struct trigger_def *`) from a row of TRIGGER_COLS. */
static void fill(void *slot, sqlite3_stmt *s)
{
    struct trigger_def *t = XNEW(struct trigger_def);
    t->pk = col_int(s, 0);
    t->id = xstrdup(col_text(s, 1));
    t->name = xstrdup(col_text(s, 2));
    t->template_name = xstrdup(col_text(s, 3));
    t->values = xstrdup(col_text(s, 4));
    t->rule = xstrdup(col_text(s, 5));
    t->sender = xstrdup(col_text(s, 6));
    t->auth = xstrdup(col_text(s, 7));
    t->secrets = xstrdup(col_text(s, 8));
    t->enabled = col_int(s, 9) != 0;
    t->created_by = xstrdup(col_text(s, 10));
    t->created_at = col_int(s, 11);
    t->updated_at = col_int(s, 12);
    *(struct trigger_def **)slot = t;
}

void trigger_def_free(struct trigger_def *t)
{
    if (!t)
        return;
    free(t->id);
    free(t->name);
    free(t->template_name);
    free(t->values);
    free(t->rule);
    free(t->sender);
    free(t->auth);
    free(t->secrets);
    free(t->created_by);
    free(t);
}

static void drop(void *slot)
{
    trigger_def_free(*(struct trigger_def **)slot);
}

void trigger_defs_free(struct trigger_def **t, size_t n)
{
    for (size_t i = 0; i < n; i++)
        trigger_def_free(t[i]);
    free(t);
}

struct trigger_def *store_trigger_get(struct store *st, const char *id_or_name, struct err *err)
{
    struct conn *c = store_reader(st, err);
    sqlite3_stmt *s = c ? STMT(c, G_GET, err) : NULL;
    struct trigger_def *t = NULL;
    if (s)
        bind_text(s, ":key", id_or_name);
    sql_one(c, s, "trigger", id_or_name, fill, &t, err);
    return t;
}

int store_trigger_list(struct store *st, struct trigger_def ***out, size_t *n, struct err *err)
{
    struct conn *c = store_reader(st, err);
    sqlite3_stmt *s = c ? STMT(c, G_LIST, err) : NULL;
    return sql_array(c, s, "listing triggers", sizeof(**out), fill, drop, out, n, err);
}
