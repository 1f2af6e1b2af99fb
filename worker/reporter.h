/*
 * reporter: the worker's reports to the daemon (contract in docs/worker.md):
 *   POST /v1/jobs/{id}/ranks/{rank}/heartbeat  {"time","step","metrics":[...],"dropped"}
 *   POST /v1/jobs/{id}/ranks/{rank}/preflight  the preflight report
 * Metrics are queued in a bounded buffer; when it is full the oldest are dropped and counted, and
 * the count goes out with the next heartbeat that gets through. An unreachable daemon only delays
 * reports: nothing here ever blocks the training for longer than one short HTTP timeout, and the
 * background thread (reporter_start) keeps even that off the caller's path.
 *
 * reporter_add/reporter_set_step/reporter_set_exit are thread-safe; the rest is for the owner.
 */
#ifndef TY_WORKER_REPORTER_H
#define TY_WORKER_REPORTER_H

#include <stddef.h>
#include <stdint.h>

#include "core/err.h"

struct reporter;

struct reporter_stats {
    uint64_t sent;          /* metrics delivered */
    uint64_t dropped_total; /* metrics dropped because the buffer was full */
    uint64_t heartbeats;    /* heartbeats delivered */
    uint64_t failures;      /* requests that failed */
    size_t pending;         /* metrics waiting */
};

/* base_url NULL: nothing is sent (metrics are still counted and dropped when full).
 * capacity: metrics kept while the daemon is away. Caller frees with reporter_free(). */
struct reporter *reporter_new(const char *base_url, const char *token, const char *job_id, int rank,
                              size_t capacity, struct err *err);
void reporter_free(struct reporter *r);

void reporter_add(struct reporter *r, const char *name, int64_t step, double value,
                  int64_t time_ns);
void reporter_set_step(struct reporter *r, int64_t step);
/* Exit of the training command, sent with the final heartbeat ("exit_code" or "signal"). */
void reporter_set_exit(struct reporter *r, int exit_code, int signo);

/* Sends one heartbeat (and more while the backlog exceeds one batch). On failure the metrics
 * stay queued; returns -1 with ERR_UNAVAILABLE or ERR_UPSTREAM. Not while the thread runs. */
int reporter_flush(struct reporter *r, struct err *err);
int reporter_send_preflight(struct reporter *r, const char *report_json, struct err *err);

/* Heartbeats every interval_ms from a background thread until reporter_stop(), which makes a
 * last attempt (with a short timeout) before returning. */
int reporter_start(struct reporter *r, int interval_ms, struct err *err);
void reporter_stop(struct reporter *r);

void reporter_stats(struct reporter *r, struct reporter_stats *out);

#endif
