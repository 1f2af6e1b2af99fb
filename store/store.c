/*
 * store: opening the database, per-thread read connections, statement caches and the binding
 * helpers every store module uses. Writes go through writer.c.
 */
#include "store/internal.h"

#include <assert.h>
#include <pthread.h>
#include <stdatomic.h>

#include "core/xalloc.h"
#include "store/logcache.h"
#include "store/tokens.h"

struct reader {
    struct conn *conn;
    struct store *st;
    int snapshots; /* store_snapshot_begin() depth */
    struct reader *next, *prev;
};

struct store {
    char *path;
    struct store_options opts;
    struct writer *writer;
    pthread_key_t key;
    pthread_mutex_t lock; /* guards readers */
    struct reader *readers;
    int schema_version;
    struct logcache *logcache;
    _Atomic uint64_t tokens_generation; /* see store_tokens_generation() */
};

struct logcache *store_logcache(struct store *st)
{
    return st->logcache;
}

void store_tokens_changed(struct store *st)
{
    atomic_fetch_add(&st->tokens_generation, 1);
}

uint64_t store_tokens_generation(struct store *st)
{
    return atomic_load(&st->tokens_generation);
}

static const char *const pragmas = "PRAGMA journal_mode=WAL;"
                                   "PRAGMA foreign_keys=ON;"
                                   "PRAGMA temp_store=MEMORY;"
                                   "PRAGMA cache_size=-4000;"
                                   "PRAGMA wal_autocheckpoint=4000;";

struct conn *conn_open(const char *path, const struct store_options *opts, struct err *err)
{
    sqlite3 *db = NULL;
    sqlalloc_install();
    int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX;
    if (sqlite3_open_v2(path, &db, flags, NULL) != SQLITE_OK) {
        err_set(err, ERR_IO, "cannot open database %s: %s", path,
                db ? sqlite3_errmsg(db) : "out of memory");
        sqlite3_close(db);
        return NULL;
    }
    sqlite3_busy_timeout(db, opts->busy_timeout_ms);
    sqlite3_extended_result_codes(db, 1);
    struct conn *c = XNEW(struct conn);
    c->db = db;
    char sync[64];
    snprintf(sync, sizeof(sync), "PRAGMA synchronous=%s;", opts->sync_full ? "FULL" : "NORMAL");
    if (sql_exec(c, pragmas, err) < 0 || sql_exec(c, sync, err) < 0) {
        conn_close(c);
        return NULL;
    }
    return c;
}

void conn_close(struct conn *c)
{
    if (!c)
        return;
    for (int m = 0; m < MOD_COUNT; m++)
        for (int i = 0; i < STMTS_PER_MODULE; i++)
            sqlite3_finalize(c->stmts[m][i]);
    sqlite3_close(c->db);
    free(c);
}

static void reader_unlink(struct store *st, struct reader *r)
{
    if (r->prev)
        r->prev->next = r->next;
    else
        st->readers = r->next;
    if (r->next)
        r->next->prev = r->prev;
}

/* pthread key destructor: the thread that owned this reader exits. */
static void reader_release(void *p)
{
    struct reader *r = p;
    pthread_mutex_lock(&r->st->lock);
    reader_unlink(r->st, r);
    pthread_mutex_unlock(&r->st->lock);
    conn_close(r->conn);
    free(r);
}

struct conn *store_reader(struct store *st, struct err *err)
{
    struct reader *r = pthread_getspecific(st->key);
    if (r)
        return r->conn;
    struct conn *c = conn_open(st->path, &st->opts, err);
    if (!c)
        return NULL;
    r = XNEW(struct reader);
    r->conn = c;
    r->st = st;
    pthread_mutex_lock(&st->lock);
    r->next = st->readers;
    if (st->readers)
        st->readers->prev = r;
    st->readers = r;
    pthread_mutex_unlock(&st->lock);
    pthread_setspecific(st->key, r);
    return c;
}

int store_snapshot_begin(struct store *st, struct err *err)
{
    struct conn *c = store_reader(st, err);
    if (!c)
        return -1;
    struct reader *r = pthread_getspecific(st->key);
    if (r->snapshots == 0 && sql_exec(c, "BEGIN", err) < 0)
        return -1;
    r->snapshots++;
    return 0;
}

void store_snapshot_end(struct store *st)
{
    struct reader *r = pthread_getspecific(st->key);
    if (!r || r->snapshots == 0 || --r->snapshots > 0)
        return;
    struct err err;
    err_init(&err);
    if (sql_exec(r->conn, "COMMIT", &err) < 0) /* read-only: rolling back loses nothing, and */
        sql_exec(r->conn, "ROLLBACK", NULL);   /* a snapshot left open would go stale */
    err_release(&err);
}

struct store *store_open(const char *path, const struct store_options *opts, struct err *err)
{
    struct store_options defaults = { .sync_full = true,
                                      .busy_timeout_ms = 5000,
                                      .max_batch = 512 };
    struct store *st = XNEW(struct store);
    st->path = xstrdup(path);
    st->opts = opts ? *opts : defaults;
    if (st->opts.max_batch <= 0)
        st->opts.max_batch = defaults.max_batch;
    pthread_mutex_init(&st->lock, NULL);
    pthread_key_create(&st->key, reader_release);
    struct conn *wc = conn_open(path, &st->opts, err);
    /* The writer touches the most pages (indexes, log blocks): it gets the larger cache. */
    if (!wc || sql_exec(wc, "PRAGMA cache_size=-16000", err) < 0 || migrations_apply(wc, err) < 0)
        goto fail;
    sqlite3_stmt *s = stmt(wc, MOD_MISC, 0, "PRAGMA user_version", err);
    if (s && sqlite3_step(s) == SQLITE_ROW)
        st->schema_version = (int)sqlite3_column_int(s, 0);
    if (s)
        sqlite3_reset(s);
    char *dir = xstrdup(path), *slash = strrchr(dir, '/');
    if (slash)
        *slash = '\0';
    st->writer = writer_start(wc, slash ? (slash == dir ? "/" : dir) : ".", &st->opts, err);
    free(dir);
    if (!st->writer)
        goto fail;
    st->logcache = logcache_new(64u << 20);
    return st;
fail:
    conn_close(wc);
    pthread_key_delete(st->key);
    pthread_mutex_destroy(&st->lock);
    free(st->path);
    free(st);
    return NULL;
}

void store_close(struct store *st)
{
    if (!st)
        return;
    writer_stop(st->writer);
    logcache_free(st->logcache);
    pthread_key_delete(st->key);
    pthread_mutex_lock(&st->lock);
    while (st->readers) {
        struct reader *r = st->readers;
        reader_unlink(st, r);
        conn_close(r->conn);
        free(r);
    }
    pthread_mutex_unlock(&st->lock);
    pthread_mutex_destroy(&st->lock);
    free(st->path);
    free(st);
}

int store_schema_version(struct store *st)
{
    return st->schema_version;
}

void store_stats(struct store *st, struct store_stats *out)
{
    writer_stats(st->writer, out);
    out->sqlite_memory_bytes = sqlalloc_used();
    out->log_cache_bytes = st->logcache ? logcache_bytes(st->logcache) : 0;
}

void store_write_async(struct store *st, store_apply_fn apply, void *arg, store_done_fn done,
                       void *ctx)
{
    writer_submit(st->writer, apply, arg, done, ctx);
}

struct waiter {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    bool finished;
    int rc;
    struct err err;
};

static void wake_waiter(void *ctx, int rc, struct err *err)
{
    struct waiter *w = ctx;
    pthread_mutex_lock(&w->lock);
    w->rc = rc;
    if (err)
        err_move(&w->err, err);
    w->finished = true;
    pthread_cond_signal(&w->cond);
    pthread_mutex_unlock(&w->lock);
}

int store_write_wait(struct store *st, store_apply_fn apply, void *arg, struct err *err)
{
    struct waiter w = { .finished = false };
    pthread_mutex_init(&w.lock, NULL);
    pthread_cond_init(&w.cond, NULL);
    err_init(&w.err);
    writer_submit(st->writer, apply, arg, wake_waiter, &w);
    pthread_mutex_lock(&w.lock);
    while (!w.finished)
        pthread_cond_wait(&w.cond, &w.lock);
    pthread_mutex_unlock(&w.lock);
    pthread_cond_destroy(&w.cond);
    pthread_mutex_destroy(&w.lock);
    if (w.rc < 0)
        err_move(err, &w.err);
    err_release(&w.err);
    return w.rc;
}

static int noop_read(struct conn *c, struct err *err)
{
    sqlite3_stmt *s = stmt(c, MOD_MISC, 1, "SELECT count(*) FROM sqlite_schema", err);
    if (!s)
        return -1;
    int rc = sqlite3_step(s);
    sqlite3_reset(s);
    return rc == SQLITE_ROW ? 0 : sql_fail(c, err, "health read");
}

static int noop_write(struct conn *c, void *arg, struct err *err)
{
    (void)c;
    (void)arg;
    (void)err;
    return 0;
}

int store_check(struct store *st, struct err *err)
{
    struct conn *c = store_reader(st, err);
    if (!c || noop_read(c, err) < 0)
        return err_wrap(err, "database read");
    if (store_write_wait(st, noop_write, NULL, err) < 0)
        return err_wrap(err, "database write");
    return 0;
}

sqlite3_stmt *stmt(struct conn *c, enum store_module mod, int index, const char *sql,
                   struct err *err)
{
    assert(index >= 0 && index < STMTS_PER_MODULE);
    sqlite3_stmt **slot = &c->stmts[mod][index];
    if (*slot) {
        sqlite3_reset(*slot);
        sqlite3_clear_bindings(*slot);
        return *slot;
    }
    if (sqlite3_prepare_v3(c->db, sql, -1, SQLITE_PREPARE_PERSISTENT, slot, NULL) != SQLITE_OK) {
        sql_fail(c, err, "preparing a statement");
        *slot = NULL;
        return NULL;
    }
    return *slot;
}

/* Tells a client when a temporary failure is worth retrying (the Retry-After of its 503). */
static int retry_after(struct err *err, int seconds)
{
    if (err && err->code == ERR_UNAVAILABLE && !err->retry_after)
        err->retry_after = seconds;
    return -1;
}

int sql_fail(struct conn *c, struct err *err, const char *what)
{
    int code = sqlite3_extended_errcode(c->db);
    const char *msg = sqlite3_errmsg(c->db);
    switch (code & 0xff) {
    case SQLITE_FULL:
        err_set(err, ERR_UNAVAILABLE, "%s: disk full", what);
        return retry_after(err, 10);
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
        err_set(err, ERR_UNAVAILABLE, "%s: database busy", what);
        return retry_after(err, 2);
    case SQLITE_CONSTRAINT:
        return err_set(err, ERR_CONFLICT, "%s: %s", what, msg);
    case SQLITE_READONLY:
        return err_set(err, ERR_UNAVAILABLE, "%s: database is read-only", what);
    default:
        return err_set(err, ERR_IO, "%s: %s", what, msg);
    }
}

int sql_exec_stmt(struct conn *c, sqlite3_stmt *s, struct err *err, const char *what)
{
    int rc = sqlite3_step(s);
    sqlite3_reset(s);
    if (rc != SQLITE_DONE && rc != SQLITE_ROW)
        return sql_fail(c, err, what);
    return 0;
}

static int fail_on(struct conn *c, struct err *err, const char *noun, const char *key)
{
    char what[160];
    snprintf(what, sizeof(what), "%s '%.100s'", noun, key);
    return sql_fail(c, err, what);
}

int sql_exec_one(struct conn *c, sqlite3_stmt *s, struct err *err, const char *noun,
                 const char *key)
{
    int rc = sqlite3_step(s);
    sqlite3_reset(s);
    if (rc != SQLITE_DONE && rc != SQLITE_ROW)
        return fail_on(c, err, noun, key);
    if (sqlite3_changes(c->db) == 0)
        return err_set(err, ERR_NOT_FOUND, "no %s '%s'", noun, key);
    return 0;
}

int sql_step_one(struct conn *c, sqlite3_stmt *s, struct err *err, const char *noun,
                 const char *key)
{
    int rc = sqlite3_step(s);
    if (rc == SQLITE_ROW)
        return 0;
    sqlite3_reset(s);
    if (rc == SQLITE_DONE)
        return err_set(err, ERR_NOT_FOUND, "no %s '%s'", noun, key);
    return fail_on(c, err, noun, key);
}

int sql_exec(struct conn *c, const char *sql, struct err *err)
{
    char *msg = NULL;
    if (sqlite3_exec(c->db, sql, NULL, NULL, &msg) != SQLITE_OK) {
        sqlite3_free(msg);
        return sql_fail(c, err, "executing SQL");
    }
    return 0;
}

static int param(sqlite3_stmt *s, const char *name)
{
    int i = sqlite3_bind_parameter_index(s, name);
    assert(i > 0 && "unknown SQL parameter");
    return i;
}

void bind_text(sqlite3_stmt *s, const char *name, const char *v)
{
    if (v)
        sqlite3_bind_text(s, param(s, name), v, -1, SQLITE_STATIC);
    else
        sqlite3_bind_null(s, param(s, name));
}

void bind_blob(sqlite3_stmt *s, const char *name, const void *v, size_t len)
{
    sqlite3_bind_blob64(s, param(s, name), v, len, SQLITE_STATIC);
}

void bind_int(sqlite3_stmt *s, const char *name, int64_t v)
{
    sqlite3_bind_int64(s, param(s, name), v);
}

void bind_null(sqlite3_stmt *s, const char *name)
{
    sqlite3_bind_null(s, param(s, name));
}

const char *col_text(sqlite3_stmt *s, int i)
{
    const unsigned char *t = sqlite3_column_text(s, i);
    return t ? (const char *)t : "";
}

const char *col_text_or_null(sqlite3_stmt *s, int i)
{
    return (const char *)sqlite3_column_text(s, i);
}

int64_t col_int(sqlite3_stmt *s, int i)
{
    return sqlite3_column_int64(s, i);
}
