/*
 * collect: the log pipeline's ingest side. It follows every rank's log file (and takes lines
 * pushed by Kubernetes log followers), merges each job's new lines into its timeline, stores
 * them with the sources' new positions in one transaction per flush, and wakes the job's
 * followers. Because a position is committed with the lines read up to it, a daemon killed at
 * any moment resumes exactly where the last commit left off: no line lost, none twice.
 *
 * Threads: one collector thread. The log_sources callbacks may be called from any thread.
 */
#ifndef TY_COLLECT_H
#define TY_COLLECT_H

#include <stdbool.h>
#include <stdint.h>

#include "core/buf.h"
#include "core/err.h"
#include "server/ingest/logsource.h"
#include "store/logs.h"

struct store;
struct wakeups;
struct collect;

/* What to call with every stored line, on the collector thread, after its commit (diagnosis
 * and progress parsing are fed from here). */
struct collect_stored {
    void *ctx;
    void (*lines)(void *ctx, int64_t job_pk, const struct log_line *lines, size_t n);
};

struct collect_options {
    int64_t max_bytes;  /* per job */
    int64_t max_age_ns; /* per line */
    int64_t poll_ns;
    struct collect_stored stored;
};

struct collect *collect_new(struct store *st, struct wakeups *n, const struct collect_options *o);
/* The callbacks executors use to hand over their ranks' logs. */
struct log_sources collect_sources(struct collect *c);
int collect_start(struct collect *c, struct err *err);
/* The executors have re-registered the sources of running jobs after a restart: from now on a
 * finished job whose sources are all read is marked complete. */
void collect_adopted(struct collect *c);
/* True while the job has a source not yet read to its end: more of its lines may come (the
 * controller decides how a job ended once its logs are in). Any thread. */
bool collect_pending(struct collect *c, int64_t job_pk);
/* Reads everything currently readable and stores it now (tests, shutdown). */
void collect_flush(struct collect *c);
void collect_free(struct collect *c);
void collect_metrics(struct collect *c, struct buf *out);

#endif
