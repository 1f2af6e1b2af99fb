/*
 * store internals shared by the modules under store/; nothing outside store/ includes this.
 *
 * Statements: each module keeps all its SQL in one table (`static const char *const sql[]`),
 * and fetches prepared statements from the calling connection's cache with stmt(). A statement
 * comes back reset with bindings cleared; it is borrowed until the next stmt() of the same slot.
 */
#ifndef TY_STORE_INTERNAL_H
#define TY_STORE_INTERNAL_H

#include <jansson.h>
#include <sqlite3.h>

#include "store/store.h"

enum store_module {
    MOD_JOBS,
    MOD_JOB_UPDATES,
    MOD_LOGS,
    MOD_LOG_READS,
    MOD_TOKENS,
    MOD_AUDIT,
    MOD_TEMPLATES,
    MOD_TRIGGERS,
    MOD_DELIVERIES,
    MOD_WEBHOOKS,
    MOD_OUTBOX,
    MOD_METRICS,
    MOD_METRIC_READS,
    MOD_NODES,
    MOD_RENDEZVOUS,
    MOD_MISC,
    MOD_FINDINGS,
    MOD_POLICIES,
    MOD_QUEUES,
    MOD_USAGE,
    MOD_USAGE_READS,
    MOD_WRITER,
    MOD_COUNT
};
#define STMTS_PER_MODULE 48

struct conn {
    sqlite3 *db;
    sqlite3_stmt *stmts[MOD_COUNT][STMTS_PER_MODULE];
};

/* The calling thread's read connection (opened on first use). NULL with err on failure. */
struct conn *store_reader(struct store *st, struct err *err);
/* Prepared statement `index` of module `mod` whose text is sql; NULL with err on failure. */
sqlite3_stmt *stmt(struct conn *c, enum store_module mod, int index, const char *sql,
                   struct err *err);
/* Maps the connection's last error to an err: SQLITE_FULL -> ERR_UNAVAILABLE ("disk full"),
 * SQLITE_BUSY -> ERR_UNAVAILABLE, constraint -> ERR_CONFLICT, else ERR_IO. Returns -1. */
int sql_fail(struct conn *c, struct err *err, const char *what);
/* Steps a statement that returns no rows; -1 with err on failure. */
int sql_exec_stmt(struct conn *c, sqlite3_stmt *s, struct err *err, const char *what);
/* Steps a statement that must change a row: -1 with ERR_NOT_FOUND "no <noun> '<key>'" when it
 * changed none, or with the SQLite error. */
int sql_exec_one(struct conn *c, sqlite3_stmt *s, struct err *err, const char *noun,
                 const char *key);
/* Steps a statement that selects one row: 0 with the row ready to read (the caller resets s), or
 * -1 (s reset) with ERR_NOT_FOUND "no <noun> '<key>'" or the SQLite error. */
int sql_step_one(struct conn *c, sqlite3_stmt *s, struct err *err, const char *noun,
                 const char *key);
/* Runs SQL text (no parameters) on c. */
int sql_exec(struct conn *c, const char *sql, struct err *err);

/* The read loop (rows.c): every statement in store/ that yields several rows is stepped through
 * these. Each takes s NULL (a stmt() that failed, err set) and then returns -1 or NULL; s comes
 * back reset. A failed step is reported as sql_fail(c, err, what). */

/* One row: 0 to go on, 1 to stop here (not a failure), -1 with err set to fail the loop. The
 * row's columns are borrowed until it returns. */
typedef int (*sql_row_fn)(void *ctx, sqlite3_stmt *s, struct err *err);
/* Calls row(ctx, s, err) on each row of s. 0, or -1 with row's error or SQLite's. */
int sql_rows(struct conn *c, sqlite3_stmt *s, const char *what, sql_row_fn row, void *ctx,
             struct err *err);

/* Writes one element (zeroed before) from the row; copies what it keeps of the columns. */
typedef void (*sql_fill_fn)(void *elem, sqlite3_stmt *s);
/* Releases what fill put in one element (not the element itself). */
typedef void (*sql_drop_fn)(void *elem);
/* The one row of s filled into out (its slot untouched when none): 0, or -1 with ERR_NOT_FOUND
 * "no <noun> '<key>'" or SQLite's error, as sql_step_one. */
int sql_one(struct conn *c, sqlite3_stmt *s, const char *noun, const char *key, sql_fill_fn fill,
            void *out, struct err *err);
/* The rows of s as a heap array of *n elements of `size` bytes each, one per row, made by fill.
 * out is the address of the caller's array pointer (`T **` for an array of T); the caller frees
 * the array. NULL and 0 when there are no rows, and on failure, when what was made is dropped
 * (drop may be NULL when fill keeps nothing). */
int sql_array(struct conn *c, sqlite3_stmt *s, const char *what, size_t size, sql_fill_fn fill,
              sql_drop_fn drop, void *out, size_t *n, struct err *err);
/* A fill for an array of int64_t: the row's first column. */
void sql_fill_int(void *elem, sqlite3_stmt *s);

/* One row as JSON (a new reference), or NULL with err set to fail; NULL without an error leaves
 * the row out (as json_pack's NULL for text that is not UTF-8 always has). */
typedef json_t *(*sql_json_fn)(void *ctx, sqlite3_stmt *s, struct err *err);
/* The rows of s as a JSON array (new reference) of what to_json makes of each; NULL with err. */
json_t *sql_json_rows(struct conn *c, sqlite3_stmt *s, const char *what, sql_json_fn to_json,
                      void *ctx, struct err *err);

/* Binds by name (":name"); a missing parameter is a bug and aborts in debug builds. Text and
 * blobs are not copied (a copy and an allocation per value were a tenth of the writer's work on a
 * submission): the value stays valid until the statement's last step, which holds wherever a
 * statement is bound and stepped in one function, as every one in store/ is. */
void bind_text(sqlite3_stmt *s, const char *name, const char *v);
void bind_blob(sqlite3_stmt *s, const char *name, const void *v, size_t len);
void bind_int(sqlite3_stmt *s, const char *name, int64_t v);
void bind_null(sqlite3_stmt *s, const char *name);
/* Column helpers: text columns come back as "" when NULL; borrowed until the next step. */
const char *col_text(sqlite3_stmt *s, int i);
const char *col_text_or_null(sqlite3_stmt *s, int i);
int64_t col_int(sqlite3_stmt *s, int i);

/* Runs apply on the writer thread inside the group transaction and waits for COMMIT. apply may
 * run twice: when another write of its batch fails half-way, the batch is rolled back and run
 * again (writer.c). So apply computes everything it writes into arg afresh on each run (resets
 * its outputs first) and leaves effects outside the database to after COMMIT. A failing apply
 * that changed no row costs the batch nothing. */
typedef int (*store_apply_fn)(struct conn *c, void *arg, struct err *err);
int store_write_wait(struct store *st, store_apply_fn apply, void *arg, struct err *err);
/* The same without waiting: done(ctx, rc, err) runs on the writer thread after COMMIT. arg must
 * stay valid until done is called. */
void store_write_async(struct store *st, store_apply_fn apply, void *arg, store_done_fn done,
                       void *ctx);

/* SQLite's allocator (sqlalloc.c): installed before the first connection opens; the bytes it
 * holds now. */
void sqlalloc_install(void);
uint64_t sqlalloc_used(void);

/* Opens a connection with trainyard's pragmas. */
struct conn *conn_open(const char *path, const struct store_options *opts, struct err *err);
void conn_close(struct conn *c);

/* Writer lifecycle (writer.c), used by store_open/store_close. */
struct writer;
/* dir: where the database lives; writes are refused (ERR_UNAVAILABLE, "disk full") while its
 * disk has less than opts->min_free_bytes free (dir NULL: no guard). */
struct writer *writer_start(struct conn *c, const char *dir, const struct store_options *opts,
                            struct err *err);
void writer_stop(struct writer *w);
void writer_submit(struct writer *w, store_apply_fn apply, void *arg, store_done_fn done,
                   void *ctx);
void writer_stats(struct writer *w, struct store_stats *out);

int migrations_apply(struct conn *c, struct err *err);

/* The in-memory cache of each job's newest committed lines (logcache.h). */
struct logcache *store_logcache(struct store *st);

/* Appends an audit entry inside a write (tokens.c). */
struct audit_entry;
/* After a committed write that can end a token (revocation, a job deleted with its tokens). */
void store_tokens_changed(struct store *st);
int audit_insert(struct conn *c, const struct audit_entry *e, struct err *err);
/* The same for a change to a stored definition: action "<noun>.<verb>", target "<noun>/<key>"
 * ("trigger.update" on "trigger/<id>"); actor and request_id may be NULL. */
int audit_change(struct conn *c, const char *noun, const char *verb, const char *key,
                 const char *actor, const char *request_id, struct err *err);
/* Steps s, a DELETE of one <noun> by :id (bound here), and audits "<noun>.delete": ERR_NOT_FOUND
 * when there was none. s NULL (stmt() failed, err set): -1. */
int delete_audited(struct conn *c, sqlite3_stmt *s, const char *noun, const char *id,
                   const char *actor, const char *request_id, struct err *err);

/* Appends an event to a job's timeline (job_update.c); runs inside a write. */
struct job_event;
int event_insert(struct conn *c, int64_t pk, const struct job_event *e, int64_t now,
                 struct err *err);

/* Records a rank's run inside the write that records its end (usage.c; store/usage.h). */
struct usage_run;
int usage_record_run(struct conn *c, int64_t pk, const struct usage_run *r, struct err *err);

#endif
