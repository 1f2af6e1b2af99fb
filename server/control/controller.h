/*
 * controller: the reconcile loop. It owns every decision about a job's life: admission in
 * priority order, starting an attempt, turning rank reports into job states (first failure,
 * restart policy, stopping the other ranks at once), cancellation, deadlines, and adopting
 * running jobs after a daemon restart. Every transition is committed to the store before the
 * executor is told to act on it.
 *
 * Threads: one controller thread. controller_wake() and the executor event callbacks may be
 * called from any thread; they only queue work.
 */
#ifndef TY_CONTROLLER_H
#define TY_CONTROLLER_H

#include <stdbool.h>
#include <stdint.h>

#include "core/buf.h"
#include "core/err.h"
#include "server/control/executor.h"

struct store;
struct controller;

/* What the controller calls back when a job changed (for notifications: webhooks, metrics).
 * job_state is called on the controller thread after a state change is committed; also when a
 * running job's `stalled` flag changes (state is then the job's unchanged state). It must not
 * block: the controller waits for it. */
struct controller_callbacks {
    void *ctx;
    void (*job_state)(void *ctx, int64_t job_pk, enum job_state state);
};

struct health;

struct controller_options {
    int64_t stop_grace_ns;
    int64_t tick_ns;
    /* The wait before a restart the controller makes (not one an executor makes itself: the
     * operator's on Kubernetes), unless the spec's restart.backoff_seconds and
     * max_backoff_seconds say otherwise: restart_backoff_ns before the first, doubling with each
     * restart of the job up to restart_backoff_max_ns. 0: at once. */
    int64_t restart_backoff_ns, restart_backoff_max_ns;
    /* Diagnosis of attempts (may be NULL: decisions then rest on exit statuses alone). */
    struct health *health;
    int64_t stall_floor_ns; /* the daemon's floor of stall limits; 0: the library's */
    /* True while lines of the job are still to be stored (a job's end is decided once its
     * logs are in, at most grace + 5 s after its ranks ended). May be NULL. */
    bool (*logs_pending)(void *ctx, int64_t job_pk);
    void *logs_ctx;
};

/* Creates the controller; executors are borrowed and must outlive it. Events from each
 * executor are routed to the controller (ex->events is set here). cb is copied (may be NULL). */
struct controller *controller_new(struct store *st, struct executor **executors, size_t n,
                                  const struct controller_options *opts,
                                  const struct controller_callbacks *cb);
/* Adopts running jobs, then starts the loop thread. */
int controller_start(struct controller *c, struct err *err);
/* Something changed (a job was submitted, cancelled, resumed): reconcile soon. */
void controller_wake(struct controller *c, int64_t job_pk);
/* A rank failed in a way its executor cannot see (its preflight report): the job's end is
 * decided as for any failed rank. Any thread. */
void controller_rank_failed(struct controller *c, int64_t job_pk, int attempt, int rank,
                            const char *reason, const char *message);
/* Stops the loop (ranks keep running; a restarted daemon adopts them). */
void controller_stop(struct controller *c);
void controller_free(struct controller *c);
/* Why a queued job waits, as the last admission pass saw it: reason (a CamelCase word), message
 * for people ("waiting for 8 GPUs, 2 free; 3rd in queue research") and its place in its queue.
 * False when the last pass did not see the job wait (not queued, suspended, or just submitted).
 * Any thread. */
bool controller_queue_status(struct controller *c, int64_t job_pk, char *reason, size_t rlen,
                             char *message, size_t mlen, int *position);
void controller_metrics(struct controller *c, struct buf *out);

#endif
