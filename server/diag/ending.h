/*
 * ending: how a rank ended, from the signals an executor has besides the logs. Both executors
 * fill the same structs:
 *   - local processes: exited/exit_code from WIFEXITED, signal from WTERMSIG, node = host name,
 *     reason "OOMKilled" when the rank's cgroup reports an OOM kill, stopped when trainyard
 *     itself sent the signal;
 *   - Kubernetes pods: exit_code from the container's terminated state (137 = 128 + SIGKILL is
 *     understood), reason = the container's terminated reason ("OOMKilled", "Error",
 *     "DeadlineExceeded"...), pod_reason = the pod's status reason or its DisruptionTarget
 *     condition reason ("Evicted", "PreemptionByScheduler", "NodeShutdown"...), lost = the pod
 *     vanished or its node went away without a container status.
 * Kubernetes events (FailedScheduling, ErrImagePull, Preempted, spot interruption notices...)
 * arrive as struct ending_event, with or without a rank.
 *
 * Pure functions; thread-safe. Strings are borrowed for the duration of the call.
 */
#ifndef TY_DIAG_ENDING_H
#define TY_DIAG_ENDING_H

#include <stdbool.h>
#include <stdint.h>

#include "server/diag/classify.h"

struct ending {
    int rank;               /* trainyard rank */
    const char *pod;        /* NULL for local processes */
    const char *node;       /* node or host name; NULL if unknown */
    int64_t time_ns;        /* when it ended; 0 if unknown */
    bool exited;            /* an exit status is known */
    int exit_code;          /* valid when exited */
    int signal;             /* terminating signal, 0 if none (derived from exit codes 129..159) */
    const char *reason;     /* container/process reason, NULL if none */
    const char *pod_reason; /* pod status or disruption reason, NULL if none */
    const char *message;    /* status message, NULL if none */
    bool stopped; /* trainyard stopped it: cancel, or teardown after another rank failed */
    bool lost;    /* vanished without an exit status */
};

struct ending_event {
    int rank; /* -1: the whole job, or not tied to a rank */
    const char *pod;
    const char *node;
    int64_t time_ns;
    const char *reason; /* Kubernetes event/condition reason, cloud notice */
    const char *message;
};

struct ending_class {
    enum diag_kind kind; /* DIAG_KIND_NONE: a clean end (exit 0) or an irrelevant event */
    enum diag_role role;
    const char *text; /* static description of the reason, or NULL */
    int signal;       /* 0 if none */
    char detail[CLASSIFY_DETAIL_MAX];
};

void ending_classify(const struct ending *e, struct ending_class *out);
/* False (and kind NONE) when the event's reason means nothing for diagnosis. */
bool ending_classify_event(const struct ending_event *ev, struct ending_class *out);

#endif
