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
    N_EVIDENCE_PUT,
    N_EVIDENCE_PRUNE,
    N_EVIDENCE_OWNERS,
    N_OWNER_ADMIN,
    N_MARK_NEW,
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
    [N_EVIDENCE_PUT] = "INSERT INTO node_evidence (node, job_id, owner_id, reason, message, source,"
                       " at) VALUES (:node, :job_id, :owner_id, :reason, :message, :source, :now)"
                       " ON CONFLICT (node, job_id) DO UPDATE SET reason = excluded.reason,"
                       " message = excluded.message, source = excluded.source, at = excluded.at",
    [N_EVIDENCE_PRUNE] = "DELETE FROM node_evidence WHERE at < :since",
    [N_EVIDENCE_OWNERS] = "SELECT count(DISTINCT owner_id), group_concat(job_id, ', ')"
                          " FROM node_evidence WHERE node = :node AND at >= :since",
    [N_OWNER_ADMIN] = "SELECT 1 FROM tokens WHERE id = :id AND scope = 'admin' AND job_pk IS NULL",
    [N_MARK_NEW] = "INSERT INTO node_marks (" N_COLS ") VALUES (:name, 'suspect', :reason,"
                   " :message, :source, :job_id, '', :now, :now) ON CONFLICT (name) DO NOTHING",
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

/* The job's owner is an admin: its token has admin scope, or it ran while auth was off. */
static int owner_is_admin(struct conn *c, const struct node_evidence *e, struct err *err)
{
    if (!e->owner_id || !e->owner_id[0])
        return e->owner && strcmp(e->owner, "anonymous") == 0;
    sqlite3_stmt *s = STMT(c, N_OWNER_ADMIN, err);
    if (!s)
        return -1;
    bind_text(s, ":id", e->owner_id);
    int rc = sqlite3_step(s);
    sqlite3_reset(s);
    if (rc != SQLITE_ROW && rc != SQLITE_DONE)
        return sql_fail(c, err, "reading a job's owner");
    return rc == SQLITE_ROW;
}

/* How many owners blame the node (jobs listed into jobs, at most cap bytes). */
static int64_t owners_blaming(struct conn *c, const char *node, int64_t since, char *jobs,
                              size_t cap, struct err *err)
{
    sqlite3_stmt *s = STMT(c, N_EVIDENCE_OWNERS, err);
    if (!s)
        return -1;
    bind_text(s, ":node", node);
    bind_int(s, ":since", since);
    int64_t n = -1;
    if (sqlite3_step(s) == SQLITE_ROW) {
        n = col_int(s, 0);
        snprintf(jobs, cap, "%s", col_text(s, 1));
    }
    sqlite3_reset(s);
    return n < 0 ? sql_fail(c, err, "counting evidence against a node") : n;
}

struct evidence_op {
    const struct node_evidence *e;
    bool marked;
};

static int apply_evidence(struct conn *c, void *arg, struct err *err)
{
    struct evidence_op *op = arg;
    const struct node_evidence *e = op->e;
    int64_t now = e->now ? e->now : clock_now_ns();
    const char *owner = e->owner_id && e->owner_id[0] ? e->owner_id : e->owner ? e->owner : "";
    sqlite3_stmt *s = STMT(c, N_EVIDENCE_PRUNE, err);
    if (!s)
        return -1;
    bind_int(s, ":since", now - NODE_EVIDENCE_WINDOW_NS);
    if (sql_exec_stmt(c, s, err, "dropping old evidence") < 0 ||
        !(s = STMT(c, N_EVIDENCE_PUT, err)))
        return -1;
    bind_text(s, ":node", e->node);
    bind_text(s, ":job_id", e->job_id ? e->job_id : "");
    bind_text(s, ":owner_id", owner);
    bind_text(s, ":reason", e->reason ? e->reason : "");
    bind_text(s, ":message", e->message ? e->message : "");
    bind_text(s, ":source", e->source ? e->source : "");
    bind_int(s, ":now", now);
    if (sql_exec_stmt(c, s, err, "recording evidence against a node") < 0)
        return -1;
    char jobs[512] = "", message[1024];
    int admin = owner_is_admin(c, e, err);
    int64_t owners =
        admin ? 0
              : owners_blaming(c, e->node, now - NODE_EVIDENCE_WINDOW_NS, jobs, sizeof(jobs), err);
    if (admin < 0 || owners < 0)
        return -1;
    if (!admin && owners < NODE_EVIDENCE_OWNERS)
        return 0; /* the job's own verdict: its diagnosis says so, placement does not change */
    if (admin)
        snprintf(message, sizeof(message), "%s", e->message ? e->message : "");
    else
        snprintf(message, sizeof(message), "jobs of %lld owners blamed the node: %s (last: %s)",
                 (long long)owners, jobs, e->message ? e->message : "");
    if (!(s = STMT(c, N_MARK_NEW, err)))
        return -1;
    bind_text(s, ":name", e->node);
    bind_text(s, ":reason", e->reason ? e->reason : "");
    bind_text(s, ":message", message);
    bind_text(s, ":source", admin ? (e->source ? e->source : "") : "evidence");
    bind_text(s, ":job_id", e->job_id ? e->job_id : "");
    bind_int(s, ":now", now);
    if (sql_exec_stmt(c, s, err, "marking a node") < 0)
        return -1;
    op->marked = sqlite3_changes(c->db) > 0;
    return 0;
}

int store_node_evidence(struct store *st, const struct node_evidence *e, bool *marked,
                        struct err *err)
{
    struct evidence_op op = { .e = e };
    int rc = store_write_wait(st, apply_evidence, &op, err);
    if (marked)
        *marked = rc == 0 && op.marked;
    return rc;
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
