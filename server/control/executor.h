/*
 * executor: what runs a job's ranks, behind one interface. The controller (controller*.c) owns
 * the job state machine and every decision (admit, restart, fail, stop); an executor only
 * carries decisions out and reports what it observes, through struct executor_events.
 *
 *   local       each rank is a process on this machine, supervised by a shim (local.c)
 *   kubernetes  a PyTorchJob or TrainJob through the Kubernetes API (kube/)
 *
 * Threads: the controller calls executor functions from its own thread only. Executors report
 * events from any thread; the controller queues them.
 */
#ifndef TY_EXECUTOR_H
#define TY_EXECUTOR_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "job/spec.h"
#include "core/err.h"
#include "store/jobs.h"

/* What an executor saw happen to one rank. */
struct rank_report {
    int64_t job_pk;
    int attempt; /* the job attempt the rank belongs to */
    int rank;
    enum rank_state state; /* RANK_RUNNING, or a terminal state */
    int pid;
    const char *node;
    const char *pod;
    int exit_code;      /* -1: none */
    int signal;         /* 0: none */
    const char *reason; /* "Completed", "Error", "OOMKilled", "Evicted", "Lost", ... */
    const char *message;
    int64_t time;
    int restarts; /* executors that manage restarts: the rank's restarts so far */
    /* usage (store/usage.h), for a rank's end when the executor knows them: the run's own
     * start (0: the one reported when it ran), the node's instance and capacity type (NULL:
     * the spec's placement) */
    int64_t started_at;
    const char *instance_type;
    const char *capacity_type;
};

/* What an executor saw happen to a job as a whole (Kubernetes conditions, events). */
struct job_report {
    int64_t job_pk;
    int attempt;
    bool set_state;
    enum job_state state;
    const char *reason;
    const char *message;
    const struct job_event *events; /* timeline entries to add (e.g. Kubernetes events) */
    size_t nevents;
};

struct executor_events {
    void *ctx;
    void (*rank)(void *ctx, const struct rank_report *r);
    void (*job)(void *ctx, const struct job_report *r);
};

struct executor {
    const char *name;
    /* The executor restarts ranks itself (the Training Operator does on Kubernetes), so the
     * controller only records restarts instead of ordering them. */
    bool manages_restarts;
    /* 1 when the job can start now, 0 when it must wait for capacity (and the jobs behind it
     * too), -1 when the executor already holds it (its object waits in the cluster's own
     * queue): skipped, without holding up the others. */
    int (*fits)(struct executor *ex, const struct job *job, const struct spec_view *spec);
    /* What it can run at once, in rank slots and GPUs; NULL, or -1 in either: unbounded (the
     * cluster decides, through fits()). The scheduler plans with it (scheduler.h). */
    void (*capacity)(struct executor *ex, int64_t *slots, int64_t *gpus);
    /* Starts every rank of attempt `attempt`; reports RANK_RUNNING per rank as they start.
     * worker_token is the job-scoped token the ranks use to call the daemon (TRAINYARD_TOKEN). */
    int (*start)(struct executor *ex, const struct job *job, const struct spec_view *spec,
                 int attempt, const char *worker_token, struct err *err);
    /* Stops every rank of the job: SIGTERM (or delete) now, SIGKILL after grace_ns. Reports
     * each rank's end. Idempotent. */
    int (*stop)(struct executor *ex, const struct job *job, int64_t grace_ns, struct err *err);
    /* After a daemon restart: finds the job's ranks again and reports what became of them.
     * Returns 1 when nothing of the current attempt was ever started (start it again). */
    int (*adopt)(struct executor *ex, const struct job *job, const struct spec_view *spec,
                 struct err *err);
    /* Called by the controller on every tick (about 10/s) and when woken. */
    void (*poll)(struct executor *ex);
    /* A job was deleted: remove what the executor keeps for it. */
    void (*forget)(struct executor *ex, const char *job_id);
    /* The object start() would create, for dry runs (new reference). */
    json_t *(*render)(struct executor *ex, const json_t *spec, const char *job_id, struct err *err);
    /* Appends Prometheus text. */
    void (*metrics)(struct executor *ex, struct buf *out);
    void (*free)(struct executor *ex);
    struct executor_events events;
    void *impl;
};

/* Reports through ex->events (convenience for executors). */
void executor_report_rank(struct executor *ex, const struct rank_report *r);
void executor_report_job(struct executor *ex, const struct job_report *r);

#endif
