/* jobstate: names and the transition table. Pure data; thread-safe. */
#include "job/jobstate.h"

static const char *const job_names[JOB_STATE_COUNT] = {
    [JOB_QUEUED] = "queued",         [JOB_STARTING] = "starting",     [JOB_RUNNING] = "running",
    [JOB_RESTARTING] = "restarting", [JOB_CANCELLING] = "cancelling", [JOB_SUCCEEDED] = "succeeded",
    [JOB_FAILED] = "failed",         [JOB_CANCELLED] = "cancelled",   [JOB_PREEMPTED] = "preempted",
};

static const char *const rank_names[RANK_STATE_COUNT] = {
    [RANK_PENDING] = "pending",     [RANK_STARTING] = "starting", [RANK_RUNNING] = "running",
    [RANK_SUCCEEDED] = "succeeded", [RANK_FAILED] = "failed",     [RANK_STOPPED] = "stopped",
    [RANK_LOST] = "lost",
};

#define BIT(s) (1u << (s))

/* allowed[from] is the set of states reachable in one step. */
static const unsigned allowed[JOB_STATE_COUNT] = {
    [JOB_QUEUED] = BIT(JOB_STARTING) | BIT(JOB_CANCELLED) | BIT(JOB_FAILED),
    [JOB_STARTING] = BIT(JOB_RUNNING) | BIT(JOB_RESTARTING) | BIT(JOB_CANCELLING) |
                     BIT(JOB_SUCCEEDED) | BIT(JOB_FAILED) | BIT(JOB_CANCELLED) |
                     BIT(JOB_PREEMPTED) | BIT(JOB_QUEUED),
    [JOB_RUNNING] = BIT(JOB_RESTARTING) | BIT(JOB_CANCELLING) | BIT(JOB_SUCCEEDED) |
                    BIT(JOB_FAILED) | BIT(JOB_CANCELLED) | BIT(JOB_PREEMPTED) | BIT(JOB_QUEUED),
    [JOB_RESTARTING] = BIT(JOB_STARTING) | BIT(JOB_RUNNING) | BIT(JOB_CANCELLING) |
                       BIT(JOB_FAILED) | BIT(JOB_CANCELLED) | BIT(JOB_QUEUED),
    [JOB_CANCELLING] = BIT(JOB_CANCELLED),
};

const char *jobstate_name(enum job_state s)
{
    return (unsigned)s < JOB_STATE_COUNT ? job_names[s] : "unknown";
}

int jobstate_parse(const char *name, enum job_state *s)
{
    for (int i = 0; i < JOB_STATE_COUNT; i++) {
        if (strcmp(name, job_names[i]) == 0) {
            *s = (enum job_state)i;
            return 0;
        }
    }
    return -1;
}

bool jobstate_terminal(enum job_state s)
{
    return s == JOB_SUCCEEDED || s == JOB_FAILED || s == JOB_CANCELLED || s == JOB_PREEMPTED;
}

bool jobstate_can(enum job_state from, enum job_state to)
{
    if ((unsigned)from >= JOB_STATE_COUNT || (unsigned)to >= JOB_STATE_COUNT)
        return false;
    return (allowed[from] & BIT(to)) != 0;
}

const char *rankstate_name(enum rank_state s)
{
    return (unsigned)s < RANK_STATE_COUNT ? rank_names[s] : "unknown";
}

int rankstate_parse(const char *name, enum rank_state *s)
{
    for (int i = 0; i < RANK_STATE_COUNT; i++) {
        if (strcmp(name, rank_names[i]) == 0) {
            *s = (enum rank_state)i;
            return 0;
        }
    }
    return -1;
}

bool rankstate_terminal(enum rank_state s)
{
    return s == RANK_SUCCEEDED || s == RANK_FAILED || s == RANK_STOPPED || s == RANK_LOST;
}
