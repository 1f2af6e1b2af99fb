/*
 * logsource: how executors hand the log pipeline (server/ingest/collect.c) the streams of their
 * ranks, one interface for both kinds of source:
 *  - files that a rank's shim appends log records to (local executor), read from a durable
 *    byte offset;
 *  - lines pushed by a follower of Kubernetes pod logs, with an opaque durable position
 *    (e.g. the last timestamp) stored in the same transaction as the lines.
 * A source is identified by (job, key); key is stable across daemon restarts ("a0/r3").
 */
#ifndef TY_LOGSOURCE_H
#define TY_LOGSOURCE_H

#include <stddef.h>
#include <stdint.h>

#include "server/ingest/logrec.h"

struct log_origin {
    int rank;
    int attempt;
    int pid;         /* local ranks */
    const char *pod; /* Kubernetes ranks */
};

struct log_sources {
    void *ctx;
    /* Follow a rank's log file from the position stored for (job_pk, key). */
    void (*add_file)(void *ctx, int64_t job_pk, const char *key, const char *path,
                     const struct log_origin *origin);
    /* The file will not grow any more: read it to its end, then stop following it. */
    void (*file_done)(void *ctx, int64_t job_pk, const char *key);
    /* Lines read by a follower, in order, with the position to resume from after them.
     * Blocks while the pipeline is over its memory budget (back-pressure). */
    void (*push)(void *ctx, int64_t job_pk, const char *key, const struct log_origin *origin,
                 const struct logrec *lines, size_t n, const char *position);
    /* The stored position of a pushed source (caller frees), or NULL when none. */
    char *(*position)(void *ctx, int64_t job_pk, const char *key);
};

#endif
