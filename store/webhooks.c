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
    W_UPDATE_SECRET,
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
    [W_UPDATE] = "UPDATE webhooks SET name = :name, url = :url, events = :events,"
                 " format = :format, enabled = :enabled, updated_at = :now,"
                 " disabled_reason = CASE WHEN :enabled THEN '' ELSE disabled_reason END"
                 " WHERE id = :id",
    [W_UPDATE_SECRET] = "UPDATE webhooks SET secret = :secret WHERE id = :id",
    [W_DELETE] = "DELETE FROM webhooks WHERE id = :id",
    [W_GET] = "SELECT " WEBHOOK_COLS " FROM webhooks WHERE id = :key OR (name = :key AND"
              " name != '') ORDER BY pk LIMIT 1",
    [W_LIST] = "SELECT " WEBHOOK_COLS " FROM webhooks ORDER BY pk DESC",
    [W_LIST_ENABLED] = "SELECT " WEBHOOK_COLS " FROM webhooks WHERE enabled = 1 ORDER BY pk",
};

#define STMT(c, i, err) stmt((c), MOD_WEBHOOKS, (i), sql[(i)], (err))

static int audit(struct conn *c, const char *action, const struct webhook_put *w, struct err *err)
{
    char target[96];
    snprintf(target, sizeof(target), "webhook/%s", w->id);
    struct audit_entry e = { .actor = w->actor ? w->actor : "",
                             .action = action,
                             .target = target,
                             .request_id = w->request_id };
    return audit_insert(c, &e, err);
}

static void bind_common(sqlite3_stmt *s, const struct webhook_put *w)
{
    bind_text(s, ":id", w->id);
    bind_text(s, ":name", w->name ? w->name : "");
    bind_text(s, ":url", w->url);
    bind_text(s, ":events", w->events);
    bind_text(s, ":format", w->format ? w->format : "standard");
    bind_int(s, ":enabled", w->enabled);
    bind_int(s, ":now", w->now);
}

static int apply_insert(struct conn *c, void *arg, struct err *err)
{
    const struct webhook_put *w = arg;
    sqlite3_stmt *s = STMT(c, W_INSERT, err);
    if (!s)
        return -1;
    bind_common(s, w);
    bind_text(s, ":secret", w->secret);
    bind_text(s, ":actor", w->actor ? w->actor : "");
    if (sql_exec_stmt(c, s, err, "storing the webhook") < 0)
        return -1;
    return audit(c, "webhook.create", w, err);
}

int store_webhook_insert(struct store *st, const struct webhook_put *w, struct err *err)
{
    return store_write_wait(st, apply_insert, (void *)w, err);
}

static int apply_update(struct conn *c, void *arg, struct err *err)
{
    const struct webhook_put *w = arg;
    sqlite3_stmt *s = STMT(c, W_UPDATE, err);
    if (!s)
        return -1;
    bind_common(s, w);
    if (sql_exec_one(c, s, err, "webhook", w->id) < 0)
        return -1;
    if (w->secret) {
        if (!(s = STMT(c, W_UPDATE_SECRET, err)))
            return -1;
        bind_text(s, ":id", w->id);
        bind_text(s, ":secret", w->secret);
        if (sql_exec_stmt(c, s, err, "updating the webhook's secret") < 0)
            return -1;
    }
    return audit(c, "webhook.update", w, err);
}

int store_webhook_update(struct store *st, const struct webhook_put *w, struct err *err)
{
    return store_write_wait(st, apply_update, (void *)w, err);
}

static int apply_delete(struct conn *c, void *arg, struct err *err)
{
    const struct webhook_put *w = arg;
    sqlite3_stmt *s = STMT(c, W_DELETE, err);
    if (!s)
        return -1;
    bind_text(s, ":id", w->id);
    if (sql_exec_one(c, s, err, "webhook", w->id) < 0)
        return -1;
    return audit(c, "webhook.delete", w, err);
}

int store_webhook_delete(struct store *st, const char *id, const char *actor,
                         const char *request_id, struct err *err)
{
    struct webhook_put w = { .id = id, .actor = actor, .request_id = request_id };
    return store_write_wait(st, apply_delete, &w, err);
}

static struct webhook_def *from_row(sqlite3_stmt *s)
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
    return w;
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
    if (!s)
        return NULL;
    bind_text(s, ":key", id_or_name);
    struct webhook_def *w =
        sql_step_one(c, s, err, "webhook", id_or_name) == 0 ? from_row(s) : NULL;
    sqlite3_reset(s);
    return w;
}

int store_webhook_list(struct store *st, bool enabled_only, struct webhook_def ***out, size_t *n,
                       struct err *err)
{
    *out = NULL;
    *n = 0;
    struct conn *c = store_reader(st, err);
    sqlite3_stmt *s = c ? STMT(c, enabled_only ? W_LIST_ENABLED : W_LIST, err) : NULL;
    if (!s)
        return -1;
    size_t cap = 0;
    int rc;
    while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
        XGROW(*out, *n, cap);
        (*out)[(*n)++] = from_row(s);
    }
    sqlite3_reset(s);
    if (rc != SQLITE_DONE) {
        webhook_defs_free(*out, *n);
        *out = NULL;
        *n = 0;
        return sql_fail(c, err, "listing webhooks");
    }
    return 0;
}
