/* store/rendezvous: SQL for rendezvous keys and barrier arrivals. */
#include "store/rendezvous.h"

#include "core/clock.h"
#include "core/xalloc.h"
#include "store/internal.h"

enum { R_GET, R_SET, R_ARRIVE, R_ARRIVED };

static const char *const sql[] = {
    [R_GET] = "SELECT value FROM rendezvous_keys WHERE job_pk = :pk AND attempt = :attempt"
              " AND key = :key",
    [R_SET] = "INSERT INTO rendezvous_keys (job_pk, attempt, key, value, set_at)"
              " VALUES (:pk, :attempt, :key, :value, :now)"
              " ON CONFLICT (job_pk, attempt, key) DO UPDATE SET value = excluded.value,"
              " set_at = excluded.set_at",
    [R_ARRIVE] = "INSERT OR IGNORE INTO rendezvous_arrivals"
                 " (job_pk, attempt, barrier, rank, world_size, at)"
                 " VALUES (:pk, :attempt, :barrier, :rank, :world, :now)",
    [R_ARRIVED] = "SELECT rank FROM rendezvous_arrivals WHERE job_pk = :pk"
                  " AND attempt = :attempt AND barrier = :barrier ORDER BY rank",
};

#define STMT(c, i, err) stmt((c), MOD_RENDEZVOUS, (i), sql[(i)], (err))

struct set_op {
    int64_t pk;
    int attempt;
    const char *key, *value;
    bool created;
};

static int apply_set(struct conn *c, void *arg, struct err *err)
{
    struct set_op *op = arg;
    sqlite3_stmt *s = STMT(c, R_GET, err);
    if (!s)
        return -1;
    bind_int(s, ":pk", op->pk);
    bind_int(s, ":attempt", op->attempt);
    bind_text(s, ":key", op->key);
    op->created = sqlite3_step(s) != SQLITE_ROW;
    sqlite3_reset(s);
    s = STMT(c, R_SET, err);
    if (!s)
        return -1;
    bind_int(s, ":pk", op->pk);
    bind_int(s, ":attempt", op->attempt);
    bind_text(s, ":key", op->key);
    bind_text(s, ":value", op->value);
    bind_int(s, ":now", clock_now_ns());
    return sql_exec_stmt(c, s, err, "setting a rendezvous key");
}

int store_rdzv_set(struct store *st, int64_t job_pk, int attempt, const char *key,
                   const char *value, bool *created, struct err *err)
{
    struct set_op op = { job_pk, attempt, key, value, false };
    int rc = store_write_wait(st, apply_set, &op, err);
    if (created)
        *created = op.created;
    return rc;
}

char *store_rdzv_get(struct store *st, int64_t job_pk, int attempt, const char *key,
                     struct err *err)
{
    struct conn *c = store_reader(st, err);
    sqlite3_stmt *s = c ? STMT(c, R_GET, err) : NULL;
    if (!s)
        return NULL;
    bind_int(s, ":pk", job_pk);
    bind_int(s, ":attempt", attempt);
    bind_text(s, ":key", key);
    char *v = NULL;
    int rc = sqlite3_step(s);
    if (rc == SQLITE_ROW)
        v = xstrdup(col_text(s, 0));
    else if (rc == SQLITE_DONE)
        err_set(err, ERR_NOT_FOUND, "rendezvous key '%s' is not set", key);
    else
        sql_fail(c, err, "reading a rendezvous key");
    sqlite3_reset(s);
    return v;
}

struct arrive_op {
    int64_t pk;
    int attempt, rank, world;
    const char *barrier;
};

static int apply_arrive(struct conn *c, void *arg, struct err *err)
{
    struct arrive_op *op = arg;
    sqlite3_stmt *s = STMT(c, R_ARRIVE, err);
    if (!s)
        return -1;
    bind_int(s, ":pk", op->pk);
    bind_int(s, ":attempt", op->attempt);
    bind_text(s, ":barrier", op->barrier);
    bind_int(s, ":rank", op->rank);
    bind_int(s, ":world", op->world);
    bind_int(s, ":now", clock_now_ns());
    return sql_exec_stmt(c, s, err, "recording a barrier arrival");
}

int store_rdzv_arrive(struct store *st, int64_t job_pk, int attempt, const char *barrier, int rank,
                      int world_size, struct err *err)
{
    struct arrive_op op = { job_pk, attempt, rank, world_size, barrier };
    return store_write_wait(st, apply_arrive, &op, err);
}

struct arrived {
    int *ranks;
    int n, max;
};

static int arrived_row(void *ctx, sqlite3_stmt *s, struct err *err)
{
    (void)err;
    struct arrived *a = ctx;
    if (a->n == a->max)
        return 1;
    a->ranks[a->n++] = (int)col_int(s, 0);
    return 0;
}

int store_rdzv_arrived(struct store *st, int64_t job_pk, int attempt, const char *barrier,
                       int *ranks, int max, struct err *err)
{
    struct conn *c = store_reader(st, err);
    sqlite3_stmt *s = c ? STMT(c, R_ARRIVED, err) : NULL;
    if (!s)
        return -1;
    bind_int(s, ":pk", job_pk);
    bind_int(s, ":attempt", attempt);
    bind_text(s, ":barrier", barrier);
    struct arrived a = { ranks, 0, max };
    if (sql_rows(c, s, "reading barrier arrivals", arrived_row, &a, err) < 0)
        return -1;
    return a.n;
}
