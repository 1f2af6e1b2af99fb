/*
 * store/nodes: node marks (see nodes.h). Writes wait for COMMIT on the writer thread; reads run
 * on the caller's connection and return heap copies.
 */
#include "store/nodes.h"

#include "core/clock.h"
#include "core/xalloc.h"
#include "store/internal.h"

enum {
    N_UPSERT,
    N_DELETE,
    N_GET,
    N_LIST,
};

#define N_COLS "name, state, reason, message, source, job_id, created_by, created_at, updated_at"

static const char *const sql[] = {
    [N_UPSERT] = "INSERT INTO node_marks (" N_COLS ") VALUES (:name, :state, :reason, :message,"
                 " :source, :job_id, :created_by, :now, :now) ON CONFLICT (name) DO UPDATE SET"
                 " state = CASE WHEN state = 'bad' AND excluded.source <> 'admin' THEN state"
                 "   ELSE excluded.state END,"
                 " reason = excluded.reason, message = excluded.message,"
                 " source = excluded.source, job_id = excluded.job_id,"
                 " created_by = excluded.created_by, updated_at = excluded.updated_at",
    [N_DELETE] = "DELETE FROM node_marks WHERE name = :name",
    [N_GET] = "SELECT " N_COLS " FROM node_marks WHERE name = :name",
    [N_LIST] = "SELECT " N_COLS " FROM node_marks ORDER BY name",
};

#define STMT(c, i, err) stmt((c), MOD_NODES, (i), sql[(i)], (err))

static int apply_mark(struct conn *c, void *arg, struct err *err)
{
    const struct node_mark_new *m = arg;
    sqlite3_stmt *s = STMT(c, N_UPSERT, err);
    if (!s)
        return -1;
    bind_text(s, ":name", m->name);
    bind_text(s, ":state", m->state);
    bind_text(s, ":reason", m->reason ? m->reason : "");
    bind_text(s, ":message", m->message ? m->message : "");
    bind_text(s, ":source", m->source ? m->source : "");
    bind_text(s, ":job_id", m->job_id ? m->job_id : "");
    bind_text(s, ":created_by", m->created_by ? m->created_by : "");
    bind_int(s, ":now", m->now ? m->now : clock_now_ns());
    return sql_exec_stmt(c, s, err, "marking a node");
}

int store_node_mark(struct store *st, const struct node_mark_new *m, struct err *err)
{
    return store_write_wait(st, apply_mark, (void *)m, err);
}

static int apply_unmark(struct conn *c, void *arg, struct err *err)
{
    sqlite3_stmt *s = STMT(c, N_DELETE, err);
    if (!s)
        return -1;
    bind_text(s, ":name", arg);
    if (sql_exec_stmt(c, s, err, "removing a node mark") < 0)
        return -1;
    if (sqlite3_changes(c->db) == 0)
        return err_set(err, ERR_NOT_FOUND, "node %s has no mark", (const char *)arg);
    return 0;
}

int store_node_unmark(struct store *st, const char *name, struct err *err)
{
    return store_write_wait(st, apply_unmark, (void *)name, err);
}

/* Fills a slot of a mark list (a `struct node_mark *`) from a row. */
static void mark_fill(void *slot, sqlite3_stmt *s)
{
    struct node_mark *m = XNEW(struct node_mark);
    m->name = xstrdup(col_text(s, 0));
    m->state = xstrdup(col_text(s, 1));
    m->reason = xstrdup(col_text(s, 2));
    m->message = xstrdup(col_text(s, 3));
    m->source = xstrdup(col_text(s, 4));
    m->job_id = xstrdup(col_text(s, 5));
    m->created_by = xstrdup(col_text(s, 6));
    m->created_at = col_int(s, 7);
    m->updated_at = col_int(s, 8);
    *(struct node_mark **)slot = m;
}

static void mark_drop(void *slot)
{
    node_mark_free(*(struct node_mark **)slot);
}

struct node_mark *store_node_mark_get(struct store *st, const char *name, struct err *err)
{
    struct conn *c = store_reader(st, err);
    sqlite3_stmt *s = c ? STMT(c, N_GET, err) : NULL;
    if (!s)
        return NULL;
    bind_text(s, ":name", name);
    int rc = sqlite3_step(s);
    struct node_mark *m = NULL;
    if (rc == SQLITE_ROW)
        mark_fill(&m, s);
    sqlite3_reset(s);
    if (rc == SQLITE_DONE)
        err_set(err, ERR_NOT_FOUND, "node %s has no mark", name);
    else if (rc != SQLITE_ROW)
        sql_fail(c, err, "reading a node mark");
    return m;
}

int store_node_marks_list(struct store *st, struct node_mark ***out, size_t *n, struct err *err)
{
    struct conn *c = store_reader(st, err);
    sqlite3_stmt *s = c ? STMT(c, N_LIST, err) : NULL;
    return sql_array(c, s, "listing node marks", sizeof(**out), mark_fill, mark_drop, out, n, err);
}

void node_mark_free(struct node_mark *m)
{
    if (!m)
        return;
    free(m->name);
    free(m->state);
    free(m->reason);
    free(m->message);
    free(m->source);
    free(m->job_id);
    free(m->created_by);
    free(m);
}

void node_marks_free(struct node_mark **m, size_t n)
{
    for (size_t i = 0; i < n; i++)
        node_mark_free(m[i]);
    free(m);
}
