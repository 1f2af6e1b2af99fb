/*
 * jobstate: the job and rank state machines, as data. Every change of a stored job's state is
 * checked against jobstate_can() by the store, in the transaction that applies it
 * (store_job_update), so that no part of trainyard (handler, executor, controller) invents its
 * own transition. Which transition happens when is decided in one place,
 * server/control/controller_state.c, apart from a user's cancel (api/jobs.c) and the states
 * the Kubernetes executor reports from its objects. The states are part of the API
 * (openapi/openapi.yaml).
 *
 * The usual life of a job:
 *
 *   queued --> starting --> running --> succeeded | failed | preempted
 *                 ^            |
 *                 +-- restarting <--+   (restart policy, or the operator restarting pods)
 *   starting | running | restarting --> cancelling --> cancelled   (queued --> cancelled)
 *
 * Every transition the table allows (tests/unit/test_jobstate.c checks this list against the
 * table, both against tests/unit/data/jobstate/transitions, which says who makes each):
 *
 *   queued     -> starting failed cancelled
 *   starting   -> queued running restarting cancelling succeeded failed cancelled preempted
 *   running    -> queued restarting cancelling succeeded failed cancelled preempted
 *   restarting -> queued starting running cancelling failed cancelled
 *   cancelling -> cancelled
 *   succeeded, failed, cancelled, preempted: terminal, nothing leaves them
 *
 * The ways back to queued are the Kubernetes executor's (a suspended or requeued object). The
 * moves from starting, running or restarting straight to cancelled have no caller today: a
 * cancel passes through cancelling, which waits for the ranks to end.
 */
#ifndef TY_JOBSTATE_H
#define TY_JOBSTATE_H

#include <stdbool.h>

enum job_state {
    JOB_QUEUED,
    JOB_STARTING,
    JOB_RUNNING,
    JOB_RESTARTING,
    JOB_CANCELLING,
    JOB_SUCCEEDED,
    JOB_FAILED,
    JOB_CANCELLED,
    JOB_PREEMPTED,
    JOB_STATE_COUNT
};

enum rank_state {
    RANK_PENDING,
    RANK_STARTING,
    RANK_RUNNING,
    RANK_SUCCEEDED,
    RANK_FAILED,
    RANK_STOPPED, /* stopped by trainyard: cancel, or another rank failed */
    RANK_LOST,    /* vanished without an exit status (node or daemon host lost) */
    RANK_STATE_COUNT
};

const char *jobstate_name(enum job_state s);
/* Returns 0 and sets *s, or -1 for an unknown name. */
int jobstate_parse(const char *name, enum job_state *s);
bool jobstate_terminal(enum job_state s);
/* True when the table allows from -> to in one step (never from -> from: the store treats an
 * update to the current state as no change of state). */
bool jobstate_can(enum job_state from, enum job_state to);

const char *rankstate_name(enum rank_state s);
int rankstate_parse(const char *name, enum rank_state *s);
bool rankstate_terminal(enum rank_state s);

#endif
