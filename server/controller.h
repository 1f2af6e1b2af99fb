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

#include <stdint.h>

#include "server/core/buf.h"
#include "server/core/err.h"
#include "server/executor.h"

struct store;
struct controller;

/* A job changed state (for notifications: webhooks, metrics). Called on the controller thread
 * after the change is committed. */
struct controller_hooks {
    void *ctx;
    void (*job_state)(void *ctx, int64_t job_pk, enum job_state state);
};

struct controller_options {
    int64_t stop_grace_ns;
    int64_t tick_ns;
};

/* Creates the controller; executors are borrowed and must outlive it. Events from each
 * executor are routed to the controller (ex->events is set here). */
struct controller *controller_new(struct store *st, struct executor **executors, size_t n,
                                  const struct controller_options *opts,
                                  const struct controller_hooks *hooks);
/* Adopts running jobs, then starts the loop thread. */
int controller_start(struct controller *c, struct err *err);
/* Something changed (a job was submitted, cancelled, resumed): reconcile soon. */
void controller_wake(struct controller *c, int64_t job_pk);
/* Stops the loop (ranks keep running; a restarted daemon adopts them). */
void controller_stop(struct controller *c);
void controller_free(struct controller *c);
void controller_metrics(struct controller *c, struct buf *out);

#endif
