/*
 * store/queues: SQL for the named queues, and the scheduler's read of waiting jobs (see
 * queues.h). Writes (with their audit entry) run on the writer thread.
 */
#include "store/queues.h"

#include "core/clock.h"
#include "core/xalloc.h"
#include "store/internal.h"

enum { Q_PUT, Q_DELETE, Q_LIST, Q_WAITING, Q_USAGE };

static const char *const sql[] = {
    [Q_PUT] = "INSERT INTO queues (name, priority, gpu_quota, description, updated_by, created_at,"
              " updated_at) VALUES (:name, :priority, :quota, :description, :actor, :now, :now)"
              " ON CONFLICT (name) DO UPDATE SET priority = excluded.priority,"
              " gpu_quota = excluded.gpu_quota, description = excluded.description,"
              " updated_by = excluded.updated_by, updated_at = excluded.updated_at",
    [Q_DELETE] = "DELETE FROM queues WHERE name = :name",
    [Q_LIST] = "SELECT name, priority, gpu_quota, description, updated_by, created_at, updated_at"
               " FROM queues ORDER BY name",
    /* Read from the index alone (jobs_waiting covers every column): no row with its spec. */
    [Q_WAITING] = "SELECT pk, executor, queue, priority, nranks, gpus, deadline_seconds,"
                  " created_at, id FROM jobs INDEXED BY jobs_waiting"
                  " WHERE state = 'queued' AND desired = 'run'",
    [Q_USAGE] = "SELECT CASE queue WHEN '' THEN 'default' ELSE queue END, state = 'queued',"
                " count(*), sum(nranks * gpus)"
                " FROM jobs WHERE state IN ('queued', 'starting', 'running', 'restarting',"
                " 'cancelling') GROUP BY 1, 2",
};

#define STMT(c, i, err) stmt((c), MOD_QUEUES, (i), sql[(i)], (err))

struct put_op {
    const struct queue_def *q;
    const char *actor, *request_id;
    int64_t now;
};

static int apply_put(struct conn *c, void *arg, struct err *err)
{
    const struct put_op *op = arg;
    sqlite3_stmt *s = STMT(c, Q_PUT, err);
    if (!s)
        return -1;
    bind_text(s, ":name", op->q->name);
    bind_int(s, ":priority", op->q->priority);
    bind_int(s, ":quota", op->q->gpu_quota);
    bind_text(s, ":description", op->q->description ? op->q->description : "");
    bind_text(s, ":actor", op->actor ? op->actor : "");
    bind_int(s, ":now", op->now);
    if (sql_exec_stmt(c, s, err, "storing the queue") < 0)
        return -1;
    return audit_change(c, "queue", "put", op->q->name, op->actor, op->request_id, err);
}

int store_queue_put(struct store *st, const struct queue_def *q, const char *actor,
                    const char *request_id, struct err *err)
{
    struct put_op op = { q, actor, request_id, clock_now_ns() };
    return store_write_wait(st, apply_put, &op, err);
}

static int apply_delete(struct conn *c, void *arg, struct err *err)
{
    const struct put_op *op = arg;
    sqlite3_stmt *s = STMT(c, Q_DELETE, err);
    if (!s)
        return -1;
    bind_text(s, ":name", op->q->name);
    if (sql_exec_one(c, s, err, "queue", op->q->name) < 0)
        return -1;
    return audit_change(c, "queue", "delete", op->q->name, op->actor, op->request_id, err);
}

int store_queue_delete(struct store *st, const char *name, const char *actor,
                       const char *request_id, struct err *err)
{
    struct queue_def q = { .name = (char *)name };
    struct put_op op = { &q, actor, request_id, 0 };
    return store_write_wait(st, apply_delete, &op, err);
}

static void fill_queue(void *slot, sqlite3_stmt *s)
{
    struct queue_def *q = slot;
    q->name = xstrdup(col_text(s, 0));
    q->priority = (int)col_int(s, 1);
    q->gpu_quota = col_int(s, 2);
    q->description = xstrdup(col_text(s, 3));
    q->updated_by = xstrdup(col_text(s, 4));
    q->created_at = col_int(s, 5);
    q->updated_at = col_int(s, 6);
}

static void drop_queue(void *slot)
{
    struct queue_def *q = slot;
    free(q->name);
    free(q->description);
    free(q->updated_by);
}

int store_queues_list(struct store *st, struct queue_def **out, size_t *n, struct err *err)
{
    struct conn *c = store_reader(st, err);
    sqlite3_stmt *s = c ? STMT(c, Q_LIST, err) : NULL;
    return sql_array(c, s, "listing queues", sizeof(**out), fill_queue, drop_queue, out, n, err);
}

void queues_free(struct queue_def *q, size_t n)
{
    for (size_t i = 0; i < n; i++)
        drop_queue(&q[i]);
    free(q);
}

static void fill_waiting(void *slot, sqlite3_stmt *s)
{
    struct waiting_job *w = slot;
    w->pk = col_int(s, 0);
    snprintf(w->executor, sizeof(w->executor), "%s", col_text(s, 1));
    snprintf(w->queue, sizeof(w->queue), "%s", col_text(s, 2));
    w->priority = (int)col_int(s, 3);
    w->nranks = (int)col_int(s, 4);
    w->gpus_per_rank = (int)col_int(s, 5);
    w->deadline_seconds = col_int(s, 6);
    w->created_at = col_int(s, 7);
    snprintf(w->id, sizeof(w->id), "%s", col_text(s, 8));
}

int store_jobs_waiting(struct store *st, struct waiting_job **out, size_t *n, struct err *err)
{
    struct conn *c = store_reader(st, err);
    sqlite3_stmt *s = c ? STMT(c, Q_WAITING, err) : NULL;
    return sql_array(c, s, "listing waiting jobs", sizeof(**out), fill_waiting, NULL, out, n, err);
}

static int usage_row(void *ctx, sqlite3_stmt *s, struct err *err)
{
    (void)err;
    json_t *out = ctx, *q = json_object_get(out, col_text(s, 0));
    if (!q)
        json_object_set_new(out, col_text(s, 0), q = json_object());
    if (col_int(s, 1)) {
        json_object_set_new(q, "waiting_jobs", json_integer(col_int(s, 2)));
    } else {
        json_object_set_new(q, "running_jobs", json_integer(col_int(s, 2)));
        json_object_set_new(q, "gpus_used", json_integer(col_int(s, 3)));
    }
    return 0;
}

json_t *store_queue_usage(struct store *st, struct err *err)
{
    struct conn *c = store_reader(st, err);
    sqlite3_stmt *s = c ? STMT(c, Q_USAGE, err) : NULL;
    json_t *out = json_object();
    if (sql_rows(c, s, "counting queue usage", usage_row, out, err) < 0) {
        json_decref(out);
        return NULL;
    }
    return out;
}
