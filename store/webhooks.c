/*
 * store/webhooks: SQL for the webhook definitions (the outbox is store/outbox.c). Writes and
 * their audit entries run on the writer thread; reads on the caller's connection; returned
 * structs are heap copies owned by the caller. URLs, events and secrets are checked by the API.
 */
#include "store/webhooks.h"

#include "core/xalloc.h"
#include "store/internal.h"
#include "store/tokens.h"

enum {
    W_INSERT,
    W_UPDATE,
    W_DELETE,
    W_GET,
    W_LIST,
    W_LIST_ENABLED,
};

#define WEBHOOK_COLS                                                                               \
    "pk, id, name, url, events, secret, format, enabled, disabled_reason, created_by,"             \
    " created_at, updated_at"

static const char *const sql[] = {
    [W_INSERT] = "INSERT INTO webhooks (id, name, url, events, secret, format, enabled,"
                 " created_by, created_at, updated_at) VALUES (:id, :name, :url, :events,"
                 " :secret, :format, :enabled, :actor, :now, :now)",
    /* secret NULL: an update keeps the stored one */
    [W_UPDATE] = "UPDATE webhooks SET name = :name, url = :url, events = :events,"
                 " format = :format, enabled = :enabled, updated_at = :now,"
                 " secret = coalesce(:secret, secret),"
                 " disabled_reason = CASE WHEN :enabled THEN '' ELSE disabled_reason END"
                 " WHERE id = :id",
    [W_DELETE] = "DELETE FROM webhooks WHERE id = :id",
    [W_GET] = "SELECT " WEBHOOK_COLS " FROM webhooks WHERE id = :key OR (name = :key AND"
              " name != '') ORDER BY pk LIMIT 1",
    [W_LIST] = "SELECT " WEBHOOK_COLS " FROM webhooks ORDER BY pk DESC",
    [W_LIST_ENABLED] = "SELECT " WEBHOOK_COLS " FROM webhooks WHERE enabled = 1 ORDER BY pk",
};

#define STMT(c, i, err) stmt((c), MOD_WEBHOOKS, (i), sql[(i)], (err))

/* The statement `index` (insert or update) bound from w, or NULL with err. */
static sqlite3_stmt *bound(struct conn *c, int index, const struct webhook_put *w, struct err *err)
{
    sqlite3_stmt *s = STMT(c, index, err);
    if (!s)
        return NULL;
    bind_text(s, ":id", w->id);
    bind_text(s, ":name", w->name ? w->name : "");
    bind_text(s, ":url", w->url);
    bind_text(s, ":events", w->events);
    bind_text(s, ":secret", w->secret);
    bind_text(s, ":format", w->format ? w->format : "standard");
    bind_int(s, ":enabled", w->enabled);
    bind_int(s, ":now", w->now);
    return s;
}

static int apply_insert(struct conn *c, void *arg, struct err *err)
{
    const struct webhook_put *w = arg;
    sqlite3_stmt *s = bound(c, W_INSERT, w, err);
    if (!s)
        return -1;
    bind_text(s, ":actor", w->actor ? w->actor : "");
    if (sql_exec_stmt(c, s, err, "storing the webhook") < 0)
        return -1;
    return audit_change(c, "webhook", "create", w->id, w->actor, w->request_id, err);
}

int store_webhook_insert(struct store *st, const struct webhook_put *w, struct err *err)
{
    return store_write_wait(st, apply_insert, (void *)w, err);
}

static int apply_update(struct conn *c, void *arg, struct err *err)
{
    const struct webhook_put *w = arg;
    sqlite3_stmt *s = bound(c, W_UPDATE, w, err);
    if (!s || sql_exec_one(c, s, err, "webhook", w->id) < 0)
        return -1;
    return audit_change(c, "webhook", "update", w->id, w->actor, w->request_id, err);
}

int store_webhook_update(struct store *st, const struct webhook_put *w, struct err *err)
{
    return store_write_wait(st, apply_update, (void *)w, err);
}

static int apply_delete(struct conn *c, void *arg, struct err *err)
{
    const struct webhook_put *w = arg;
    return delete_audited(c, STMT(c, W_DELETE, err), "webhook", w->id, w->actor, w->request_id,
                          err);
}

int store_webhook_delete(struct store *st, const char *id, const char *actor,
                         const char *request_id, struct err *err)
{
    struct webhook_put w = { .id = id, .actor = actor, .request_id = request_id };
    return store_write_wait(st, apply_delete, &w, err);
}

/* Fills a slot of a webhook_def list (an `struct webhook_def *`) from a row of WEBHOOK_COLS. */
static void fill(void *slot, sqlite3_stmt *s)
{
    struct webhook_def *w = XNEW(struct webhook_def);
    w->pk = col_int(s, 0);
    w->id = xstrdup(col_text(s, 1));
    w->name = xstrdup(col_text(s, 2));
    w->url = xstrdup(col_text(s, 3));
    w->events = xstrdup(col_text(s, 4));
    w->secret = xstrdup(col_text(s, 5));
    w->format = xstrdup(col_text(s, 6));
    w->enabled = col_int(s, 7) != 0;
    w->disabled_reason = xstrdup(col_text(s, 8));
    w->created_by = xstrdup(col_text(s, 9));
    w->created_at = col_int(s, 10);
    w->updated_at = col_int(s, 11);
    *(struct webhook_def **)slot = w;
}

void webhook_def_free(struct webhook_def *w)
{
    if (!w)
        return;
    free(w->id);
    free(w->name);
    free(w->url);
    free(w->events);
    free(w->secret);
    free(w->format);
    free(w->disabled_reason);
    free(w->created_by);
    free(w);
}

static void drop(void *slot)
{
    webhook_def_free(*(struct webhook_def **)slot);
}

void webhook_defs_free(struct webhook_def **w, size_t n)
{
    for (size_t i = 0; i < n; i++)
        webhook_def_free(w[i]);
    free(w);
}

struct webhook_def *store_webhook_get(struct store *st, const char *id_or_name, struct err *err)
{
    struct conn *c = store_reader(st, err);
    sqlite3_stmt *s = c ? STMT(c, W_GET, err) : NULL;
    struct webhook_def *w = NULL;
    if (s)
        bind_text(s, ":key", id_or_name);
    sql_one(c, s, "webhook", id_or_name, fill, &w, err);
    return w;
}

int store_webhook_list(struct store *st, bool enabled_only, struct webhook_def ***out, size_t *n,
                       struct err *err)
{
    struct conn *c = store_reader(st, err);
    sqlite3_stmt *s = c ? STMT(c, enabled_only ? W_LIST_ENABLED : W_LIST, err) : NULL;
    return sql_array(c, s, "listing webhooks", sizeof(**out), fill, drop, out, n, err);
}
