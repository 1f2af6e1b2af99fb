/*
 * controller_internal: the controller's state, shared by controller.c (state machine, loop),
 * controller_report.c (the queue of executors' reports and their handling) and
 * controller_end.c (how a running attempt ends: settling, the outcome, stalls, deadlines).
 * Not for use outside these files; everything here runs on the controller thread unless it
 * says otherwise.
 */
#ifndef TY_CONTROLLER_INTERNAL_H
#define TY_CONTROLLER_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>

#include "server/control/controller.h"

/* A job whose end is being decided (see controller_end.c). */
struct ending_job {
    int64_t pk;
    int64_t since; /* monotonic */
    bool stop;     /* stop the ranks even though none failed (stall policy) */
};

struct queued_report {
    bool is_job;
    struct rank_report rank;
    struct job_report job;
    char *strings[5]; /* owned copies of the report's strings */
    struct queued_report *next;
};

struct controller {
    struct store *st;
    struct executor **executors;
    size_t nexec;
    struct controller_options opts;
    struct controller_callbacks cb;
    pthread_t thread;
    bool running;
    pthread_mutex_t lock;
    pthread_cond_t cond;
    bool stopping;
    bool dirty;
    struct queued_report *head, *tail;
    /* Reports taken from the queue, in order; the first waits while the store refuses writes. */
    struct queued_report *pending, *pending_tail;
    int64_t retry_at;
    bool store_down; /* the last write or read failed with ERR_UNAVAILABLE */
    atomic_llong last_reconcile, reconcile_ns;
    /* jobs whose stop was already requested, so it is sent once: pk list */
    int64_t *stopping_jobs;
    size_t nstopping, capstopping;
    struct ending_job *ending;
    size_t nending, capending;
    /* read by /metrics on HTTP threads */
    atomic_ullong starts, restarts, failures, preemptions, stalls;
};

struct rank_counts {
    size_t total, terminal, succeeded, failed;
};

/* controller.c */
struct executor *controller_executor(struct controller *c, const char *name); /* or NULL */
int controller_commit(struct controller *c, struct job_update *u);
void controller_stop_job(struct controller *c, struct executor *ex, const struct job *j);
bool controller_stop_requested(struct controller *c, int64_t pk);
void controller_mark_stop(struct controller *c, int64_t pk, bool on);
struct rank_counts controller_count_ranks(struct controller *c, int64_t pk);
void controller_start_attempt(struct controller *c, struct executor *ex, const struct job *j,
                              const struct spec_view *v, int attempt);
void controller_finish(struct controller *c, const struct job *j, enum job_state state,
                       const char *reason, const char *message, const char *ff,
                       const struct job_event *events, size_t nevents);

/* controller_report.c */
/* Makes c the receiver of ex's reports (any thread). */
void controller_listen(struct controller *c, struct executor *ex);
/* Handles the queued reports in order; see the function. */
void controller_drain(struct controller *c);
void controller_reports_free(struct controller *c); /* the reports still queued */

/* controller_end.c */
/* Drives a starting or running job whose ranks are ending: stops the others when one failed,
 * and decides the end once every rank ended and the logs are in. */
void controller_settle(struct controller *c, struct executor *ex, const struct job *j,
                       const struct spec_view *v);
/* Stall and straggler detection of a running job and its stall policy. */
void controller_watch(struct controller *c, struct executor *ex, const struct job *j,
                      const struct spec_view *v);
void controller_deadline(struct controller *c, struct executor *ex, const struct job *j,
                         const struct spec_view *v, int64_t now);
void controller_ending_remove(struct controller *c, int64_t pk);

#endif
