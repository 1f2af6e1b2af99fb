/*
 * writer: the one thread that writes. Callers queue writes; the thread takes everything queued
 * (up to max_batch), runs them in one transaction, COMMITs once, then reports each write's
 * outcome. Under load batches grow by themselves, so the commit cost (an fsync with
 * synchronous=FULL) is shared by many writes.
 *
 * A failed write must not take the others down with it. Writes first run back to back: one that
 * fails before changing a row (not found, conflict: the usual failures) is simply failed. Only
 * when one fails half-way is the batch rolled back and run again with each write inside its own
 * SAVEPOINT, so that it rolls back alone. Savepoints are not the default because each copies
 * every page its write touches (a third of a submission's cost in the writer); the price is that
 * an apply function may run twice, so it computes its outputs afresh each time (internal.h).
 */
#include <pthread.h>
#include <stdbool.h>
#include <sys/statvfs.h>

#include "core/clock.h"
#include "core/xalloc.h"
#include "store/internal.h"

struct wop {
    store_apply_fn apply;
    void *arg;
    store_done_fn done;
    void *ctx;
    int rc;
    struct err err;
    struct wop *next;
};

struct writer {
    struct conn *conn;
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t cond;
    struct wop *head, *tail;
    bool stopping;
    int max_batch;
    struct store_stats stats;
    char *dir;        /* the database's directory, for the free space guard (NULL: none) */
    int64_t min_free; /* bytes; 0: a share of the disk */
    int64_t space_checked;
    bool space_low;
    char space_msg[ERR_MSG_MAX];
    int busy_timeout_ms;
    bool locked; /* another process held the write lock at the last BEGIN */
};

static struct wop *take_batch(struct writer *w)
{
    pthread_mutex_lock(&w->lock);
    while (!w->head && !w->stopping)
        pthread_cond_wait(&w->cond, &w->lock);
    struct wop *batch = w->head, *last = NULL;
    int n = 0;
    for (struct wop *op = w->head; op && n < w->max_batch; op = op->next, n++)
        last = op;
    if (last) {
        w->head = last->next;
        if (!w->head)
            w->tail = NULL;
        last->next = NULL;
    }
    pthread_mutex_unlock(&w->lock);
    return batch;
}

enum { W_SAVEPOINT, W_ROLLBACK, W_RELEASE };
static const char *const savepoint_sql[] = {
    [W_SAVEPOINT] = "SAVEPOINT w",
    [W_ROLLBACK] = "ROLLBACK TO w",
    [W_RELEASE] = "RELEASE w",
};

/* One savepoint statement, prepared once: every write of a batch runs three of them. */
static int savepoint(struct conn *c, int which, struct err *err)
{
    sqlite3_stmt *s = stmt(c, MOD_WRITER, which, savepoint_sql[which], err);
    return s ? sql_exec_stmt(c, s, err, savepoint_sql[which]) : -1;
}

/* The transaction is gone: SQLite rolls back by itself on some errors (disk full, I/O). */
static bool tx_lost(struct conn *c)
{
    return sqlite3_get_autocommit(c->db) != 0;
}

/* One write inside its own savepoint: a failure rolls back this write alone. */
static void run_one_careful(struct writer *w, struct wop *op)
{
    if (savepoint(w->conn, W_SAVEPOINT, &op->err) < 0) {
        op->rc = -1;
        return;
    }
    op->rc = op->apply(w->conn, op->arg, &op->err);
    if (op->rc < 0) {
        struct err ignore;
        err_init(&ignore);
        savepoint(w->conn, W_ROLLBACK, &ignore);
        err_release(&ignore);
    }
    struct err release;
    err_init(&release);
    if (savepoint(w->conn, W_RELEASE, &release) < 0 && op->rc == 0) {
        op->rc = -1;
        err_move(&op->err, &release);
    }
    err_release(&release);
}

enum run_outcome { RUN_DONE, RUN_HALF_WAY, RUN_TX_LOST };

/* Runs the writes, each in a savepoint (careful) or back to back. Stops at a write that failed
 * half-way (back to back only) or that lost the transaction. */
static enum run_outcome run_writes(struct writer *w, struct wop *batch, bool careful)
{
    sqlite3 *db = w->conn->db;
    for (struct wop *op = batch; op; op = op->next) {
        err_release(&op->err);
        op->rc = 0;
        int64_t before = sqlite3_total_changes64(db);
        if (careful)
            run_one_careful(w, op);
        else
            op->rc = op->apply(w->conn, op->arg, &op->err);
        if (op->rc < 0 && tx_lost(w->conn))
            return RUN_TX_LOST;
        if (op->rc < 0 && !careful && sqlite3_total_changes64(db) != before)
            return RUN_HALF_WAY;
    }
    return RUN_DONE;
}

/* Runs the batch back to back, or again with savepoints if a write failed half-way (*rerun).
 * Returns -1 with err set when the transaction is lost or cannot begin again. */
static int run_writes_in_tx(struct writer *w, struct wop *batch, bool *rerun, struct err *err)
{
    enum run_outcome r = run_writes(w, batch, false);
    *rerun = r == RUN_HALF_WAY;
    if (r == RUN_HALF_WAY) {
        if (sql_exec(w->conn, "ROLLBACK", err) < 0 || sql_exec(w->conn, "BEGIN IMMEDIATE", err) < 0)
            return -1;
        r = run_writes(w, batch, true);
    }
    if (r == RUN_TX_LOST) {
        err_set(err, ERR_UNAVAILABLE, "the database rolled the batch back: %s",
                sqlite3_errmsg(w->conn->db));
        err->retry_after = 1;
        return -1;
    }
    return 0;
}

/* Marks every write of the batch failed with a copy of the transaction's error. */
static void fail_batch(struct wop *batch, const struct err *cause)
{
    for (struct wop *op = batch; op; op = op->next) {
        if (op->rc == 0) {
            err_release(&op->err);
            err_set(&op->err, cause->code, "%s", cause->msg);
            op->err.retry_after = cause->retry_after;
        }
        op->rc = -1;
    }
}

#define SPACE_CHECK_NS (200 * NS_PER_MS)
#define MIB            (1024 * 1024ULL)

/* Free space on the database's disk. SQLite needs room to grow its WAL and to checkpoint, and
 * a batch that finds the disk full fails half-way; below the reserve every batch is refused up
 * front instead, with a clean "disk full" (503 with Retry-After). Reads keep working. */
static int check_space(struct writer *w, struct err *err)
{
    int64_t now = clock_mono_ns();
    struct statvfs fs;
    if (w->dir && now - w->space_checked >= SPACE_CHECK_NS && statvfs(w->dir, &fs) == 0) {
        w->space_checked = now;
        uint64_t avail = (uint64_t)fs.f_bavail * fs.f_frsize;
        uint64_t reserve = (uint64_t)fs.f_blocks * fs.f_frsize / 100;
        reserve = reserve < MIB ? MIB : reserve > 256 * MIB ? 256 * MIB : reserve;
        if (w->min_free > 0)
            reserve = (uint64_t)w->min_free;
        w->space_low = avail < reserve;
        snprintf(w->space_msg, sizeof(w->space_msg),
                 "disk full: %.1f MiB free on the data disk, below the reserve of %.1f MiB",
                 (double)avail / MIB, (double)reserve / MIB);
    }
    if (!w->space_low)
        return 0;
    err_set(err, ERR_UNAVAILABLE, "%s", w->space_msg);
    err->retry_after = 10;
    return -1;
}

/* Another process holds the write lock (the sqlite3 CLI, a backup): the first batch waits the
 * whole busy timeout, later ones only briefly until the lock goes, so that writes queued behind
 * it get their 503 at once rather than one timeout each. */
static void set_locked(struct writer *w, bool locked)
{
    if (locked == w->locked)
        return;
    w->locked = locked;
    sqlite3_busy_timeout(w->conn->db, locked ? 100 : w->busy_timeout_ms);
}

static void run_batch(struct writer *w, struct wop *batch)
{
    struct err txerr;
    err_init(&txerr);
    int n = 0;
    bool rerun = false;
    for (struct wop *op = batch; op; op = op->next) {
        op->rc = 0;
        err_init(&op->err);
        n++;
    }
    if (check_space(w, &txerr) < 0) {
        fail_batch(batch, &txerr);
    } else if (sql_exec(w->conn, "BEGIN IMMEDIATE", &txerr) < 0) {
        set_locked(w, (sqlite3_errcode(w->conn->db) & 0xff) == SQLITE_BUSY);
        fail_batch(batch, &txerr);
    } else {
        set_locked(w, false);
        if (run_writes_in_tx(w, batch, &rerun, &txerr) < 0 ||
            sql_exec(w->conn, "COMMIT", &txerr) < 0) {
            struct err ignore;
            err_init(&ignore);
            sql_exec(w->conn, "ROLLBACK", &ignore);
            err_release(&ignore);
            fail_batch(batch, &txerr);
        }
    }
    pthread_mutex_lock(&w->lock);
    w->stats.commits++;
    w->stats.writes += (uint64_t)n;
    w->stats.rerun_batches += rerun;
    if (err_is_set(&txerr))
        w->stats.failed_commits++;
    if ((uint64_t)n > w->stats.max_batch_seen)
        w->stats.max_batch_seen = (uint64_t)n;
    pthread_mutex_unlock(&w->lock);
    for (struct wop *op = batch; op; op = op->next)
        if (op->rc < 0 && op->err.code == ERR_UNAVAILABLE)
            w->space_checked = 0; /* SQLite found the disk full (or locked): look again now */
    err_release(&txerr);
    while (batch) {
        struct wop *next = batch->next;
        batch->done(batch->ctx, batch->rc, batch->rc < 0 ? &batch->err : NULL);
        err_release(&batch->err);
        free(batch);
        batch = next;
    }
}

static void *writer_main(void *arg)
{
    pthread_setname_np(pthread_self(), "ty-writer");
    struct writer *w = arg;
    for (;;) {
        struct wop *batch = take_batch(w);
        if (!batch)
            break; /* stopping and drained */
        run_batch(w, batch);
    }
    return NULL;
}

struct writer *writer_start(struct conn *c, const char *dir, const struct store_options *opts,
                            struct err *err)
{
    struct writer *w = XNEW(struct writer);
    w->dir = dir ? xstrdup(dir) : NULL;
    w->min_free = opts->min_free_bytes;
    w->busy_timeout_ms = opts->busy_timeout_ms;
    w->conn = c;
    w->max_batch = opts->max_batch;
    pthread_mutex_init(&w->lock, NULL);
    pthread_cond_init(&w->cond, NULL);
    if (pthread_create(&w->thread, NULL, writer_main, w) != 0) {
        pthread_cond_destroy(&w->cond);
        pthread_mutex_destroy(&w->lock);
        free(w->dir);
        free(w);
        err_set(err, ERR_INTERNAL, "cannot start the database writer thread");
        return NULL;
    }
    return w;
}

void writer_stop(struct writer *w)
{
    if (!w)
        return;
    pthread_mutex_lock(&w->lock);
    w->stopping = true;
    pthread_cond_signal(&w->cond);
    pthread_mutex_unlock(&w->lock);
    pthread_join(w->thread, NULL);
    conn_close(w->conn);
    pthread_cond_destroy(&w->cond);
    pthread_mutex_destroy(&w->lock);
    free(w->dir);
    free(w);
}

void writer_submit(struct writer *w, store_apply_fn apply, void *arg, store_done_fn done, void *ctx)
{
    struct wop *op = XNEW(struct wop);
    op->apply = apply;
    op->arg = arg;
    op->done = done;
    op->ctx = ctx;
    pthread_mutex_lock(&w->lock);
    if (w->tail)
        w->tail->next = op;
    else
        w->head = op;
    w->tail = op;
    pthread_cond_signal(&w->cond);
    pthread_mutex_unlock(&w->lock);
}

void writer_stats(struct writer *w, struct store_stats *out)
{
    pthread_mutex_lock(&w->lock);
    *out = w->stats;
    pthread_mutex_unlock(&w->lock);
}
