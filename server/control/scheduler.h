/*
 * scheduler: which queued jobs start now, and why the others wait. A pure function of what is
 * running and what is waiting on one executor, called by the controller on every pass.
 *
 * Order: the queue's priority, then the job's priority, then age (oldest first). Each named
 * queue may have a GPU quota: a job whose queue is at its quota waits without holding up the
 * jobs of other queues. The first job (in order) that does not fit is the head; jobs behind it
 * start only if they cannot delay it (EASY backfill):
 *  - a job whose deadline (deadline_seconds: the longest it may run) ends before the head's
 *    shadow time, the earliest time enough resources free up for the head, counting only the
 *    running jobs whose deadline bounds their end;
 *  - a job that fits in what the head will leave over at that time;
 *  - any other job that fits now runs as a preemptible backfill, when the head cannot start for
 *    ten minutes at least (or nobody knows when): when the head would fit without it, it is
 *    suspended (SIGTERM and its grace period to checkpoint) and goes back to the queue, to
 *    resume later from its checkpoint.
 * So the head starts no later than it would have without backfill (plus the grace period of a
 * preempted job), and idle GPUs are used meanwhile.
 *
 * Resources are rank slots and GPUs; a capacity of -1 is unbounded (the Kubernetes executor:
 * the cluster and Kueue decide, through the executor's own fits()).
 */
#ifndef TY_SCHEDULER_H
#define TY_SCHEDULER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct sched_res {
    int64_t slots;
    int64_t gpus;
};

struct sched_queue {
    const char *name;
    int priority;
    int64_t gpu_quota; /* -1: none */
};

struct sched_job {
    int64_t pk;
    const char *queue; /* NULL or "": the default queue (priority 0, no quota) */
    int priority;
    int64_t created; /* ns: age breaks ties */
    struct sched_res need;
    int64_t runtime_ns; /* deadline_seconds: a bound on its run; 0: unknown */
    /* Running jobs: */
    int64_t started;  /* ns */
    bool preemptible; /* a backfill without a bound: suspended when a job ahead needs it */
    bool stopping;    /* being stopped already (its resources are not free yet) */
};

enum sched_why {
    SCHED_START,     /* start it now */
    SCHED_RESOURCES, /* not enough free: it waits (the head, or behind it) */
    SCHED_QUOTA,     /* its queue is at its GPU quota */
};

struct sched_decision {
    enum sched_why why;
    struct sched_res need; /* the job's */
    bool backfill;         /* starts ahead of a job that waits */
    bool preemptible;      /* ... with no bound on its end (see above) */
    bool head;             /* first in order of those that wait for resources */
    bool reserved;         /* the head: backfill keeps its resources for it */
    int position;          /* 1-based, among the waiting jobs of its queue */
    int64_t queue_used;    /* GPUs its queue uses (SCHED_QUOTA) */
    int64_t queue_quota;   /* its queue's quota (-1: none) */
    struct sched_res free; /* free when it was considered */
    int preempting;        /* backfilled jobs being suspended for it (the head) */
};

struct sched_input {
    struct sched_res capacity;
    const struct sched_queue *queues;
    size_t nqueues;
    const struct sched_job *running;
    size_t nrunning;
    const struct sched_job *waiting; /* in any order */
    size_t nwaiting;
    int64_t now; /* ns */
};

/* Decides for every waiting job (out[i] for waiting[i]) and lists in preempt (room for
 * nrunning) the running jobs to suspend; returns how many. */
size_t sched_decide(const struct sched_input *in, struct sched_decision *out, int64_t *preempt);

/* The waiting job's reason (a CamelCase word) and message for people ("waiting for 8 GPUs,
 * 2 free; 3rd in queue research"), into the caller's buffers. */
const char *sched_reason(const struct sched_decision *d);
void sched_message(const struct sched_decision *d, const char *queue, char *out, size_t len);

#endif
