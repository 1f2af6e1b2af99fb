/*
 * test_writer: the writer's batches. Writes queued together commit together; a write that fails
 * fails alone, whether it failed before changing a row (the batch goes on) or half-way (the
 * batch is rolled back and run again with a savepoint per write, so the others still commit and
 * its own rows do not).
 */
#include <pthread.h>

#include "store/internal.h"
#include "tests/unit/check.h"
#include "tests/unit/store_fixture.h"

/* A write that inserts one audit row with action `name`, then fails if asked to, after the
 * insert (half-way) or before it (cleanly). Counts its runs. */
struct probe {
    const char *name;
    enum { SUCCEED, FAIL_BEFORE, FAIL_AFTER } mode;
    int runs;
    int rc;
    char msg[64];
};

static int apply_probe(struct conn *c, void *arg, struct err *err)
{
    struct probe *p = arg;
    p->runs++;
    if (p->mode == FAIL_BEFORE)
        return err_set(err, ERR_CONFLICT, "%s refused", p->name);
    char sql[128];
    snprintf(sql, sizeof(sql),
             "INSERT INTO audit (time, actor, action, target) VALUES (1, 'test', '%s', '')",
             p->name);
    if (sql_exec(c, sql, err) < 0)
        return -1;
    return p->mode == FAIL_AFTER ? err_set(err, ERR_IO, "%s failed half-way", p->name) : 0;
}

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static int pending;
static bool gate_held, gate_open;

static void probe_done(void *ctx, int rc, struct err *err)
{
    struct probe *p = ctx;
    p->rc = rc;
    snprintf(p->msg, sizeof(p->msg), "%s", err ? err->msg : "");
    pthread_mutex_lock(&lock);
    pending--;
    pthread_cond_broadcast(&cond);
    pthread_mutex_unlock(&lock);
}

/* Holds the writer thread inside a batch of its own until the test opens the gate, so that the
 * writes queued meanwhile are taken as one batch. */
static int apply_gate(struct conn *c, void *arg, struct err *err)
{
    (void)c, (void)arg, (void)err;
    pthread_mutex_lock(&lock);
    gate_held = true;
    pthread_cond_broadcast(&cond);
    while (!gate_open)
        pthread_cond_wait(&cond, &lock);
    pthread_mutex_unlock(&lock);
    return 0;
}

static void gate_done(void *ctx, int rc, struct err *err)
{
    (void)ctx, (void)rc, (void)err;
}

/* Runs the probes as one batch and waits for all of them. */
static void run_batch_of(struct store *st, struct probe *probes, int n)
{
    gate_held = gate_open = false;
    pending = n;
    store_write_async(st, apply_gate, NULL, gate_done, NULL);
    /* Queued before the writer holds the gate, some probes could join the gate's batch. */
    pthread_mutex_lock(&lock);
    while (!gate_held)
        pthread_cond_wait(&cond, &lock);
    pthread_mutex_unlock(&lock);
    for (int i = 0; i < n; i++)
        store_write_async(st, apply_probe, &probes[i], probe_done, &probes[i]);
    pthread_mutex_lock(&lock);
    gate_open = true;
    pthread_cond_broadcast(&cond);
    while (pending > 0)
        pthread_cond_wait(&cond, &lock);
    pthread_mutex_unlock(&lock);
}

static int audit_rows(struct store *st, const char *action)
{
    struct err err;
    err_init(&err);
    struct conn *c = store_reader(st, &err);
    sqlite3_stmt *s = NULL;
    int n = -1;
    if (c && sqlite3_prepare_v2(c->db, "SELECT count(*) FROM audit WHERE action = ?", -1, &s,
                                NULL) == SQLITE_OK) {
        sqlite3_bind_text(s, 1, action, -1, SQLITE_STATIC);
        n = sqlite3_step(s) == SQLITE_ROW ? sqlite3_column_int(s, 0) : -1;
    }
    sqlite3_finalize(s);
    err_release(&err);
    return n;
}

static uint64_t reruns(struct store *st)
{
    struct store_stats stats;
    store_stats(st, &stats);
    return stats.rerun_batches;
}

/* A write refused before it changed anything fails alone; the batch is not run again. */
static void test_clean_failure(struct store *st)
{
    struct probe p[3] = { { "c1", SUCCEED }, { "c2", FAIL_BEFORE }, { "c3", SUCCEED } };
    run_batch_of(st, p, 3);
    CHECK(p[0].rc == 0 && p[2].rc == 0);
    CHECK(p[1].rc < 0);
    CHECK_STR(p[1].msg, "c2 refused");
    CHECK(p[0].runs == 1 && p[1].runs == 1 && p[2].runs == 1);
    CHECK(audit_rows(st, "c1") == 1 && audit_rows(st, "c3") == 1);
    CHECK(reruns(st) == 0);
}

/* A write that fails after inserting its row: the batch runs again with savepoints; the others
 * commit once each, and the failed write's row is not stored. */
static void test_half_way_failure(struct store *st)
{
    struct probe p[4] = {
        { "h1", SUCCEED }, { "h2", SUCCEED }, { "h3", FAIL_AFTER }, { "h4", SUCCEED }
    };
    run_batch_of(st, p, 4);
    CHECK(p[0].rc == 0 && p[1].rc == 0 && p[3].rc == 0);
    CHECK(p[2].rc < 0);
    CHECK_STR(p[2].msg, "h3 failed half-way");
    CHECK(p[0].runs == 2 && p[1].runs == 2 && p[2].runs == 2 && p[3].runs == 1);
    CHECK(audit_rows(st, "h1") == 1 && audit_rows(st, "h2") == 1 && audit_rows(st, "h4") == 1);
    CHECK(audit_rows(st, "h3") == 0);
    CHECK(reruns(st) == 1);
}

int main(void)
{
    struct fixture f;
    struct store *st = fixture_open(&f);
    CHECK(st != NULL);
    if (!st)
        return check_done();
    test_clean_failure(st);
    test_half_way_failure(st);
    fixture_close(&f);
    return check_done();
}
