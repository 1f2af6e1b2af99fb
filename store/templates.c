/*
 * store/templates: SQL for job templates. Writes (with their audit entry) run on the writer
 * thread; reads on the caller's connection. Returned structs are heap copies owned by the
 * caller. It does not validate templates (api/templates.c does, before they get here).
 */
#include "store/templates.h"

#include "core/xalloc.h"
#include "store/internal.h"
#include "store/tokens.h"

enum {
    P_INSERT,
    P_UPDATE,
    P_DELETE,
    P_USED,
    P_GET,
    P_LIST,
};

#define TEMPLATE_COLS                                                                              \
    "t.pk, t.name, t.description, t.spec, t.created_by, t.created_at, t.updated_at,"               \
    " (SELECT count(*) FROM triggers g WHERE g.template_pk = t.pk)"

static const char *const sql[] = {
    [P_INSERT] = "INSERT INTO templates (name, description, spec, created_by, created_at,"
                 " updated_at) VALUES (:name, :description, :spec, :actor, :now, :now)",
    [P_UPDATE] = "UPDATE templates SET description = :description, spec = :spec,"
                 " updated_at = :now WHERE name = :name",
    [P_DELETE] = "DELETE FROM templates WHERE name = :name",
    [P_USED] = "SELECT group_concat(g.name, ', ') FROM triggers g JOIN templates t"
               " ON t.pk = g.template_pk WHERE t.name = :name",
    [P_GET] = "SELECT " TEMPLATE_COLS " FROM templates t WHERE t.name = :name",
    [P_LIST] = "SELECT " TEMPLATE_COLS " FROM templates t ORDER BY t.name",
};

#define STMT(c, i, err) stmt((c), MOD_TEMPLATES, (i), sql[(i)], (err))

static int apply_insert(struct conn *c, void *arg, struct err *err)
{
    const struct template_put *t = arg;
    sqlite3_stmt *s = STMT(c, P_INSERT, err);
    if (!s)
        return -1;
    bind_text(s, ":name", t->name);
    bind_text(s, ":description", t->description ? t->description : "");
    bind_text(s, ":spec", t->spec);
    bind_text(s, ":actor", t->actor ? t->actor : "");
    bind_int(s, ":now", t->now);
    if (sqlite3_step(s) != SQLITE_DONE) {
        int rc = sqlite3_extended_errcode(c->db) == SQLITE_CONSTRAINT_UNIQUE
                     ? err_set(err, ERR_CONFLICT, "a template named '%s' exists", t->name)
                     : sql_fail(c, err, "storing the template");
        sqlite3_reset(s);
        return rc;
    }
    sqlite3_reset(s);
    return audit_change(c, "template", "create", t->name, t->actor, t->request_id, err);
}

int store_template_insert(struct store *st, const struct template_put *t, struct err *err)
{
    return store_write_wait(st, apply_insert, (void *)t, err);
}

static int apply_update(struct conn *c, void *arg, struct err *err)
{
    const struct template_put *t = arg;
    sqlite3_stmt *s = STMT(c, P_UPDATE, err);
    if (!s)
        return -1;
    bind_text(s, ":name", t->name);
    bind_text(s, ":description", t->description ? t->description : "");
    bind_text(s, ":spec", t->spec);
    bind_int(s, ":now", t->now);
    if (sql_exec_one(c, s, err, "template", t->name) < 0)
        return -1;
    return audit_change(c, "template", "update", t->name, t->actor, t->request_id, err);
}

int store_template_update(struct store *st, const struct template_put *t, struct err *err)
{
    return store_write_wait(st, apply_update, (void *)t, err);
}

struct delete_op {
    const char *name, *actor, *request_id;
};

static int apply_delete(struct conn *c, void *arg, struct err *err)
{
    const struct delete_op *op = arg;
    sqlite3_stmt *s = STMT(c, P_USED, err);
    if (!s)
        return -1;
    bind_text(s, ":name", op->name);
    if (sqlite3_step(s) == SQLITE_ROW && col_text_or_null(s, 0)) {
        err_set(err, ERR_CONFLICT, "template '%s' is run by trigger(s) %s; delete them first",
                op->name, col_text(s, 0));
        sqlite3_reset(s);
        return -1;
    }
    sqlite3_reset(s);
    if (!(s = STMT(c, P_DELETE, err)))
        return -1;
    bind_text(s, ":name", op->name);
    if (sql_exec_one(c, s, err, "template", op->name) < 0)
        return -1;
    return audit_change(c, "template", "delete", op->name, op->actor, op->request_id, err);
}

int store_template_delete(struct store *st, const char *name, const char *actor,
                          const char *request_id, struct err *err)
{
    struct delete_op op = { name, actor, request_id };
    return store_write_wait(st, apply_delete, &op, err);
}

/* Fills a slot of a template list (a `struct template_def *`) from a row of TEMPLATE_COLS. */
static void fill(void *slot, sqlite3_stmt *s)
{
    struct template_def *t = XNEW(struct template_def);
    t->pk = col_int(s, 0);
    t->name = xstrdup(col_text(s, 1));
    t->description = xstrdup(col_text(s, 2));
    t->spec = xstrdup(col_text(s, 3));
    t->created_by = xstrdup(col_text(s, 4));
    t->created_at = col_int(s, 5);
    t->updated_at = col_int(s, 6);
    t->ntriggers = (int)col_int(s, 7);
    *(struct template_def **)slot = t;
}

void template_def_free(struct template_def *t)
{
    if (!t)
        return;
    free(t->name);
    free(t->description);
    free(t->spec);
    free(t->created_by);
    free(t);
}

static void drop(void *slot)
{
    template_def_free(*(struct template_def **)slot);
}

void template_defs_free(struct template_def **t, size_t n)
{
    for (size_t i = 0; i < n; i++)
        template_def_free(t[i]);
    free(t);
}

struct template_def *store_template_get(struct store *st, const char *name, struct err *err)
{
    struct conn *c = store_reader(st, err);
    sqlite3_stmt *s = c ? STMT(c, P_GET, err) : NULL;
    struct template_def *t = NULL;
    if (s)
        bind_text(s, ":name", name);
    sql_one(c, s, "template", name, fill, &t, err);
    return t;
}

int store_template_list(struct store *st, struct template_def ***out, size_t *n, struct err *err)
{
    struct conn *c = store_reader(st, err);
    sqlite3_stmt *s = c ? STMT(c, P_LIST, err) : NULL;
    return sql_array(c, s, "listing templates", sizeof(**out), fill, drop, out, n, err);
}
