/*
 * outcome: how a job's attempt ends once its ranks have stopped, decided from the diagnosis
 * (server/health/health.h) and the job's restart policy (the spec's `restart` object, mapped onto
 * server/diag/retry.h): restart (avoiding the node to blame), preempted, or failed, with the
 * job's reason, message and first_failure.
 *
 * The spec's restart policy:
 *   policy "never" (default)  no restart, unless `on` lists categories
 *   policy "on_failure"       categories preemption, node_failure, nccl_timeout, transient,
 *                             unknown (never deterministic errors or hangs unless listed in `on`)
 *   policy "exit_code"        restart when the failed rank's exit code is listed (Kubeflow's
 *                             ExitCode policy; default 130, 137, 138, 143)
 *   on: [...]                 replaces the policy's categories
 *   max_restarts              failure restarts; max_preemptions: restarts after preemption
 *   avoid_failed_nodes        name the node to avoid when the node is to blame
 *
 * Pure decisions plus store reads (ranks, earlier attempts); called on the controller thread.
 */
#ifndef TY_OUTCOME_H
#define TY_OUTCOME_H

#include <jansson.h>
#include <stdbool.h>

#include "job/spec.h"
#include "server/diag/retry.h"
#include "server/diag/stall.h"
#include "server/health/health.h"
#include "store/jobs.h"

struct outcome {
    bool restart;
    enum job_state state; /* when not restarting: JOB_FAILED or JOB_PREEMPTED */
    char reason[64];
    char message[512];
    char *first_failure; /* JSON text; owned */
    json_t *decision;    /* retry_decision_json plus "attempt"; owned */
    struct retry_decision dec;
    bool node_fault;
    char node[128]; /* the node the diagnosis blames ("" when none) */
};

void outcome_policy(const struct spec_view *v, struct retry_policy *p);
/* Stall limits for a job: the daemon's floor (0: the library's), the spec's health object. */
void outcome_stall_options(const struct spec_view *v, int64_t floor_ns, struct stall_options *o);

/* Decides the end of j's current attempt (its ranks have stopped). h may be NULL: then only
 * the ranks' exit statuses speak. Caller releases with outcome_release(). */
void outcome_decide(struct store *st, struct health *h, const struct job *j,
                    const struct spec_view *v, struct outcome *out);
void outcome_release(struct outcome *o);

#endif
