/*
 * controller_state: the controller's state (struct controller) and every change of a job's
 * state it makes, one function per transition. The other files decide when; only this one
 * commits a new job state:
 *
 *   controller.c         the loop: admission, in-flight jobs, adoption   calls report, end, state
 *   controller_report.c  executors' reports: a rank started or ended     calls end, state
 *   controller_end.c     how an attempt ends: settling, stalls, deadline  calls state
 *   controller_state.c   the transitions, and what they keep track of    calls the store
 *
 * Each file includes only the headers of the files below it, so calls go one way. What the
 * transitions may be is job/jobstate.c's table, which the store checks in the transaction that
 * applies each change; a refused change (ERR_CONFLICT: the job moved on meanwhile, say by a
 * cancel) is not an error here, the next pass starts from the new state.
 *
 * Private to server/control. Controller thread only, unless a field says otherwise.
 */
#ifndef TY_CONTROLLER_STATE_H
#define TY_CONTROLLER_STATE_H

#include <pthread.h>
#include <stdatomic.h>

#include "server/control/controller.h"
#include "server/control/scheduler.h"

struct queued_report; /* controller_report.c */

/* A job whose end is being decided (controller_end.c). */
struct ending_job {
    int64_t pk;
    int64_t since; /* monotonic */
    bool stop;     /* stop the ranks even though none failed (stall policy, deadline) */
    bool deadline; /* the job ran past deadline_seconds: it fails once its ranks ended */
};

struct controller {
    /* Set by controller_new, read-only after. */
    struct store *st;
    struct executor **executors;
    size_t nexec;
    struct controller_options opts;
    struct controller_callbacks cb;

    /* The loop (controller.c). lock guards stopping, dirty and the report queue's head. */
    pthread_t thread;
    bool running;
    pthread_mutex_t lock;
    pthread_cond_t cond;
    bool stopping;
    bool dirty;
    atomic_llong last_reconcile, reconcile_ns;

    /* The report queue (controller_report.c): head..tail under lock, filled by any thread;
     * pending..pending_tail taken in order, the first waiting while the store refuses writes. */
    struct queued_report *head, *tail;
    struct queued_report *pending, *pending_tail;
    int64_t retry_at;
    bool store_down; /* the last write or read failed with ERR_UNAVAILABLE */
    int64_t wake_at; /* monotonic: a pass is due then (a restart's backoff ends); 0: none */

    /* What the transitions keep track of (controller_state.c). */
    int64_t *stopping_jobs; /* jobs whose stop was requested, so it is sent once */
    size_t nstopping, capstopping;
    struct ending_job *ending;
    size_t nending, capending;
    atomic_ullong starts, restarts, failures, preemptions, stalls; /* read by /metrics */

    /* The parsed specs of the jobs in flight (controller.c): parsed once per job, not per pass. */
    struct spec_cache *specs;

    /* Why each queued job waits, from the last admission pass (controller_admit.c), sorted by
     * pk; swapped whole under wait_lock, which controller_queue_status takes to read it. */
    pthread_mutex_t wait_lock;
    struct job_wait *waits;
    size_t nwaits;
    atomic_ullong backfills, requeues; /* read by /metrics */
};

/* Why a queued job waits (controller_admit.c). */
struct job_wait {
    int64_t pk;
    struct sched_decision d;
    char queue[64];
};

/* ---- the transitions ---- */

/* queued|restarting -> starting (or starting again, after adoption found nothing started):
 * resets the ranks, issues the attempt's worker token and has ex start every rank. When the
 * start fails: -> failed (StartFailed), and whatever started is stopped. */
void controller_start_attempt(struct controller *c, struct executor *ex, const struct job *j,
                              const struct spec_view *v, int attempt);
/* The same for a job the scheduler starts ahead of a job that waits, with no bound on its end:
 * desired "backfill" marks it as one the scheduler may suspend to make room (scheduler.h). */
void controller_start_backfill(struct controller *c, struct executor *ex, const struct job *j,
                               const struct spec_view *v);
/* starting (or restarting, where the executor restarts ranks itself) -> running, once every
 * rank runs. Applied only if the job is still in from. */
void controller_running(struct controller *c, const struct job *j, enum job_state from);
/* starting|running -> restarting, once every rank of the attempt has ended; the next attempt
 * (controller_start_attempt) starts at once, or after its backoff (controller_restart_at), which
 * the job's message then gives: controller_end.c's controller_next_attempt starts it. Strings and
 * events are borrowed for the call. */
void controller_restart(struct controller *c, struct executor *ex, const struct job *j,
                        const struct spec_view *v, const char *reason, const char *message,
                        const char *first_failure, const struct job_event *events, size_t nevents);
/* -> a terminal state (succeeded, failed, preempted, cancelled): revokes the job's worker
 * tokens and forgets its diagnosis. first_failure is JSON text or NULL; all borrowed. */
void controller_finish(struct controller *c, const struct job *j, enum job_state state,
                       const char *reason, const char *message, const char *first_failure,
                       const struct job_event *events, size_t nevents);
/* starting|running -> restarting with desired "requeue" (the scheduler makes room for a job
 * ahead) or "hold" (suspended), and the ranks are stopped. */
void controller_suspend(struct controller *c, struct executor *ex, const struct job *j,
                        const char *desired, const char *reason, const char *message);
/* A job being suspended (restarting, desired hold or requeue): queued, as a new attempt, once
 * every rank has ended. True when j is such a job (done or still stopping). */
bool controller_suspend_done(struct controller *c, const struct job *j);
/* cancelling -> cancelled when every rank has ended; true when it did. */
bool controller_cancel_done(struct controller *c, const struct job *j);
/* A state the executor reports of the job as a whole (Kubernetes: the operator's conditions),
 * committed as reported, with its events; -> restarting starts the next attempt's count. */
void controller_reported(struct controller *c, const struct job *j, const struct job_report *r);

/* ---- what they share ---- */

/* Applies u (store_job_update); 0, or -1 when the store refused it (logged, unless a conflict).
 * After a committed change of state, calls cb.job_state. */
int controller_commit(struct controller *c, struct job_update *u);
/* The executor named name, or NULL. */
struct executor *controller_executor(struct controller *c, const char *name);
/* Asks ex to stop every rank of j, once per attempt (controller_stop_requested then holds). */
void controller_stop_job(struct controller *c, struct executor *ex, const struct job *j);
bool controller_stop_requested(struct controller *c, int64_t pk);
void controller_stop_forget(struct controller *c, int64_t pk);

struct rank_counts {
    size_t total, terminal, succeeded, failed;
    int64_t last_finished; /* the latest end of a rank (wall clock); 0: none ended */
};
struct rank_counts controller_count_ranks(struct controller *c, int64_t pk);

/* When restart number `restart` (1 for the first) of a job whose last attempt ended at
 * ended_at (wall clock) may start: after the spec's (else the daemon's) backoff, doubled for
 * each earlier restart, at most the longest. */
int64_t controller_restart_at(const struct controller *c, const struct spec_view *v, int restart,
                              int64_t ended_at);
/* Has the loop reconcile at (or just after) mono, a monotonic time; the earliest asked wins. */
void controller_wake_at(struct controller *c, int64_t mono);
/* True, once, when the time controller_wake_at asked for has come. */
bool controller_wake_due(struct controller *c);

/* The jobs whose end is being decided (controller_end.c). get: NULL when pk is not one; add
 * returns it (stop: its ranks are to be stopped although none failed); remove: no-op when
 * absent. A transition to a new attempt or a terminal state removes the job. */
struct ending_job *controller_ending_get(struct controller *c, int64_t pk);
struct ending_job *controller_ending_add(struct controller *c, int64_t pk, bool stop);
void controller_ending_remove(struct controller *c, int64_t pk);

#endif
