/*
 * store/logs: every rank's log lines, kept in the database after the ranks are gone.
 *
 * Design (numbers in docs/PERFORMANCE.md): lines are stored in blocks of up to LOG_SEAL_LINES
 * lines of one job, in sequence order. A flush of the collector appends a small unsealed block;
 * once a job's unsealed lines reach LOG_SEAL_LINES they are rewritten as sealed blocks,
 * compressed with zstd and given a Bloom filter of their words. So ingest writes few, large rows
 * (one transaction per flush for every job), the last lines of a job are a couple of block reads
 * away, and a word search reads the filters (about 2% of the text) and only the blocks that may
 * match.
 *
 * Sequence numbers are assigned here, in the transaction that stores the lines: per job they
 * start at 1, increase by one per line, never change, and order the merged timeline of all
 * ranks.
 */
#ifndef TY_STORE_LOGS_H
#define TY_STORE_LOGS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/err.h"
#include "store/logmatch.h"
#include "store/store.h"

#define LOG_SEAL_LINES 1024
#define LOG_SEAL_BYTES (256 * 1024)

enum log_line_flags { LOGF_STDERR = 1, LOGF_PROGRESS = 2, LOGF_PARTIAL = 4 };

struct log_line {
    int64_t seq;
    int64_t time;
    int src; /* source of the job it came from */
    int flags;
    const char *text;
    size_t len;
    /* Filled in by reads from the source (and by the collector for its hooks): */
    int rank;
    int pid;
    const char *pod;
    int attempt;
};

struct log_source_new {
    int src;
    const char *key;
    int rank;
    int attempt;
    int pid;
    const char *pod;
};

struct log_position {
    const char *key;
    const char *position;
};

/* One job's part of an append. Lines are given in timeline order; seqs are assigned. */
struct log_append {
    int64_t job_pk;
    struct log_line *lines;
    size_t n;
    const struct log_source_new *sources; /* sources seen for the first time */
    size_t nsources;
    const struct log_position *positions; /* where each source's reading stands now */
    size_t npositions;
    int64_t first_seq, last_seq; /* out */
};

/* Appends lines and positions of several jobs in one transaction. */
int store_logs_append(struct store *st, struct log_append *jobs, size_t n, struct err *err);

/* The src of (job, key), or -1 when unknown; *next_src is one past the largest src. */
int store_log_source_find(struct store *st, int64_t job_pk, const char *key, int *src,
                          int *next_src, struct err *err);
/* The position stored for (job, key) (caller frees), or NULL when none. */
char *store_log_position(struct store *st, int64_t job_pk, const char *key, struct err *err);

struct log_stats {
    int64_t first_seq, next_seq;
    int64_t lines, bytes;
    int64_t dropped_lines, dropped_bytes;
    bool complete;
};
int store_log_stats(struct store *st, int64_t job_pk, struct log_stats *out, struct err *err);
/* Marks a job's log complete: the job ended and every source was read to its end. */
int store_log_complete(struct store *st, int64_t job_pk, struct err *err);
/* Jobs that ended but whose log is not complete yet (caller frees the array). */
int store_logs_unfinished(struct store *st, int64_t **pks, size_t *n, struct err *err);

struct log_query {
    int64_t after;         /* seq > after */
    int64_t before;        /* seq < before; 0: no bound */
    int64_t since;         /* time >= since; 0: no bound */
    int64_t until;         /* time < until; 0: no bound */
    int tail;              /* only the last `tail` matching lines; 0: from the start */
    int limit;             /* at most this many lines; 0: no limit */
    int stream;            /* -1: both, else LOGF_STDERR or 0 for stdout */
    const uint64_t *ranks; /* bit set of ranks to keep (rank r: ranks[r/64] >> r%64); NULL: all */
    size_t nranks_words;
    const struct logmatch *match; /* NULL: no text query */
    bool by_attempt;              /* only the lines of one attempt of the job: */
    int attempt;                  /* its number (0 for the first run, 1 after a restart...) */
};

struct log_read_stats {
    int64_t blocks_read, blocks_skipped, lines_scanned;
    int64_t max_seq; /* highest seq examined (matching or not): where a follower resumes */
};

/* Calls fn for each matching line in seq order; fn returns non-zero to stop. The line's text
 * is borrowed until fn returns. */
typedef int (*log_line_fn)(void *ctx, const struct log_line *line);
int store_logs_read(struct store *st, int64_t job_pk, const struct log_query *q, log_line_fn fn,
                    void *ctx, struct log_read_stats *stats, struct err *err);

/* Drops a job's oldest blocks until its lines take at most max_bytes and none is older than
 * min_time; the dropped counts are kept in its stats. */
int store_logs_retain(struct store *st, int64_t job_pk, int64_t max_bytes, int64_t min_time,
                      struct err *err);
/* Jobs over either limit (caller frees). */
int store_logs_over_limits(struct store *st, int64_t max_bytes, int64_t min_time, int64_t **pks,
                           size_t *n, struct err *err);

#endif
