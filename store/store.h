/*
 * store: trainyard's durable state in one SQLite file (WAL). The only code that includes
 * <sqlite3.h>. Per-table-group APIs live in store/jobs.h, store/logs.h, store/tokens.h, ...
 *
 * Threads: any thread may call any store function. Reads run on a connection private to the
 * calling thread (opened on first use, closed when the thread exits). Writes are handed to one
 * writer thread that group-commits everything queued into one transaction, so many concurrent
 * small writes cost one commit. A write returns (or calls its completion) only after COMMIT:
 * whatever the API answered 2xx for is on disk.
 */
#ifndef TY_STORE_H
#define TY_STORE_H

#include <stdbool.h>
#include <stdint.h>

#include "core/err.h"

struct store;

struct store_options {
    bool sync_full;      /* synchronous=FULL: fsync every commit (power-loss safe); else NORMAL */
    int busy_timeout_ms; /* waiting for another process (the CLI) that holds the write lock */
    int max_batch;       /* writes per group commit */
    int64_t min_free_bytes; /* below this much free disk, writes are refused (503) before SQLite
                               runs out of room mid-transaction; 0: 1% of the disk, 1-256 MiB */
};

/* Opens (creating if needed) and migrates the database at path; starts the writer thread.
 * Returns NULL with ERR_IO, or ERR_UNAVAILABLE when the file is newer than this binary. */
struct store *store_open(const char *path, const struct store_options *opts, struct err *err);
/* Stops the writer after draining queued writes, closes connections. NULL is a no-op. */
void store_close(struct store *st);
/* The schema version (PRAGMA user_version) after migration. */
int store_schema_version(struct store *st);

/* A write to run on the writer thread inside the group transaction. apply() sees the writer's
 * connection through the store_* write helpers (store/internal.h) and must not block.
 * done() runs on the writer thread after COMMIT (rc 0) or rollback (rc -1, err set); it owns
 * nothing of the write and must return quickly. */
struct store_write;
typedef void (*store_done_fn)(void *ctx, int rc, struct err *err);

/* The calling thread's reads between store_snapshot_begin() and store_snapshot_end() see one
 * snapshot of the database and take its read locks once. Without it each statement takes and
 * drops them (two fcntl() calls a statement: most of the cost of a list page, which reads the
 * labels and progress of each job). Nests; every successful begin needs its end, on the same
 * thread, soon: a snapshot held open keeps the WAL from being checkpointed past it. */
int store_snapshot_begin(struct store *st, struct err *err);
void store_snapshot_end(struct store *st);

/* Counters for /metrics. */
struct store_stats {
    uint64_t commits;
    uint64_t writes;
    uint64_t failed_commits;
    uint64_t rerun_batches; /* run again with a savepoint per write: one failed half-way */
    uint64_t max_batch_seen;
    /* Memory of the bounded caches, so that a load test can tell them from a leak: SQLite's
     * heap (page caches: at most the cache_size of each connection) and the log line cache. */
    uint64_t sqlite_memory_bytes;
    uint64_t log_cache_bytes;
};
void store_stats(struct store *st, struct store_stats *out);

/* Health for /readyz: 0 when a read and the writer work; ERR_UNAVAILABLE otherwise. */
int store_check(struct store *st, struct err *err);

#endif
