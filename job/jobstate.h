/*
 * jobstate: the job and rank state machines, as data. Every change of state goes through
 * jobstate_can() so that no part of trainyard (handler, executor, reconcile loop) invents its own
 * transition. The states and reasons are part of the API (openapi/openapi.yaml).
 *
 *   queued -> starting -> running -> succeeded | failed | cancelled | preempted
 *                 ^          |
 *                 +-- restarting <-+      (restart policy, preemption retry)
 *   queued/starting/running/restarting -> cancelling -> cancelled
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
/* True when the machine allows from -> to. */
bool jobstate_can(enum job_state from, enum job_state to);

const char *rankstate_name(enum rank_state s);
int rankstate_parse(const char *name, enum rank_state *s);
bool rankstate_terminal(enum rank_state s);

#endif
