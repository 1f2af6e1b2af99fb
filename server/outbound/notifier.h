/*
 * notifier: outbound webhooks for job changes. A job change (the controller's job_state hook,
 * or the API's job_changed hook for new jobs) only marks the job; the notifier thread turns the
 * job's new events into outbox messages (store/webhooks.h), each signed and sent by a small pool
 * of sender threads with retries and exponential backoff, one message at a time per (webhook,
 * job) so a job's messages arrive in order.
 *
 * Nothing here runs on the controller or an HTTP thread, every request has a timeout, and the
 * number of requests in flight is bounded (per webhook too), so a slow or dead receiver delays
 * only its own messages. Messages live in the outbox before any attempt, so they survive
 * kill -9; at start the notifier also catches up with job events it had not turned into messages.
 *
 * Events: job.accepted ("accepted" event), job.started (running), job.succeeded, job.failed
 * (failed, preempted), job.cancelled, job.restarted (restarting) and job.stalled (an event of
 * type "stalled").
 */
#ifndef TY_NOTIFIER_H
#define TY_NOTIFIER_H

#include <stdint.h>

#include "core/buf.h"
#include "core/err.h"
#include "trigger/webhook.h"

struct store;
struct notifier;

struct notifier_options {
    int workers;     /* requests in flight at most; 0: 4 */
    long timeout_ms; /* per request; 0: 10000 */
    struct webhook_retry retry;
    bool allow_local; /* else loopback, link-local and metadata addresses are refused */
};

/* st is borrowed and must outlive the notifier. Never NULL. */
struct notifier *notifier_new(struct store *st, const struct notifier_options *opts);
/* Starts the threads; public_url (copied) is where payloads link jobs to. */
int notifier_start(struct notifier *n, const char *public_url, struct err *err);
/* The job changed (a state, an event): send what its webhooks want. Any thread; never blocks
 * beyond a short lock. */
void notifier_job(struct notifier *n, int64_t job_pk);
/* A message was queued directly (the test button): look now. Any thread. */
void notifier_wake(struct notifier *n);
/* Stops the threads (requests in flight finish or time out) and frees. NULL is a no-op. */
void notifier_free(struct notifier *n);
void notifier_metrics(struct notifier *n, struct buf *out);

#endif
