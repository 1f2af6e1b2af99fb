/*
 * logcache: the newest lines of each job, in memory, as they were committed. Followers ask for
 * "the lines after seq N" many times a second; when N is recent (the usual case) the answer
 * comes from here without touching SQLite, so a hundred followers cost a hundred copies, not a
 * hundred transactions. Only committed lines enter; reads that reach back further than the
 * cache holds go to the store. Internal to store/ (store_logs_append fills it, store_logs_read
 * reads it; tests/unit/test_logcache.c checks its answers against SQLite's). Thread-safe: one
 * mutex.
 */
#ifndef TY_LOGCACHE_H
#define TY_LOGCACHE_H

#include <stdbool.h>
#include <stdint.h>

#include "store/logs.h"

struct logcache;

struct logcache *logcache_new(size_t max_bytes);
void logcache_free(struct logcache *lc);
/* Adds committed lines (seqs assigned, ascending, following what the cache holds). sources
 * maps src to rank/pid/pod for the sources seen in this append. */
void logcache_put(struct logcache *lc, int64_t job_pk, const struct log_line *lines, size_t n,
                  const struct log_source_new *sources, size_t nsources);
/* Memory held, within max_bytes (for /metrics). */
size_t logcache_bytes(struct logcache *lc);
/* Forgets a job (deleted, or its lines were dropped). */
void logcache_drop(struct logcache *lc, int64_t job_pk);
/* Answers q from memory when every line it asks for is cached: returns 1 (fn was called for
 * each matching line, stats filled), 0 when the store must answer. */
int logcache_read(struct logcache *lc, int64_t job_pk, const struct log_query *q,
                  bool (*wanted)(const struct log_query *q, const struct log_line *l),
                  log_line_fn fn, void *ctx, struct log_read_stats *stats);

#endif
