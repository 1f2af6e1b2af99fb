/*
 * triggerloop: the background half of S3 triggers. The hook handler stores each new object
 * version as a pending submission in the same write as its delivery; this loop renders the
 * trigger's template for it and submits the job through jobs_submission_*() (the path POST
 * /v1/jobs takes), then marks the object submitted with its job id. It also confirms SNS
 * subscriptions (GET SubscribeURL) recorded by the handler, and prunes old delivery ids, delivery
 * logs and finished webhook messages.
 *
 * Exactly once: a job's idempotency key is "<trigger id>/<dedupe key>" under the owner
 * "trigger/<name>", so a submission repeated after kill -9 (job committed, object not yet
 * marked) finds the job it already made instead of making a second one. At start the loop picks
 * up every submission still pending.
 *
 * Threads: one loop thread; triggerloop_wake() may be called from any thread and never blocks.
 */
#ifndef TY_TRIGGERLOOP_H
#define TY_TRIGGERLOOP_H

#include <stdbool.h>
#include <stdint.h>

#include "api/api.h"
#include "core/buf.h"
#include "core/err.h"

struct store;
struct triggerloop;

struct triggerloop_options {
    bool paused;         /* keep submissions pending (deliveries are still accepted) */
    const char *ca_file; /* TESTS ONLY: CA for SubscribeURL fetches from the SNS test host */
    int64_t retry_ns;    /* wait after a temporary failure; 0: 5 s */
};

/* st and api are borrowed and must outlive the loop. Never NULL. */
struct triggerloop *triggerloop_new(struct store *st, struct api *api,
                                    const struct triggerloop_options *opts);
int triggerloop_start(struct triggerloop *l, struct err *err);
/* A delivery stored new work: look now. Any thread. */
void triggerloop_wake(struct triggerloop *l);
/* Stops the thread (a submission in flight is finished first) and frees. NULL is a no-op. */
void triggerloop_free(struct triggerloop *l);
void triggerloop_metrics(struct triggerloop *l, struct buf *out);

#endif
