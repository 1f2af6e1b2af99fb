/*
 * retry: the restart decision for a failed job, as a pure function of its diagnosis and the
 * job's retry policy. The diagnosis gives a category:
 *   preemption    preempted, evicted, spot interruption, node shutdown
 *   node_failure  node lost, or a cause that implicates the node (Xid 79, uncontained ECC...)
 *   nccl          NCCL timeout or error, rendezvous failure, with no cause behind it
 *   hang          the job stalled (stall.h)
 *   transient     any other cause marked retryable
 *   deterministic will fail again: CUDA OOM, an exception in user code, NaN loss
 *   unknown       a crash or an exit that nothing explains
 * and the policy says which categories restart, up to how many times. Deterministic errors
 * never restart unless the policy asks. Restarts avoid the failing node when it is to blame.
 *
 * Pure; thread-safe.
 */
#ifndef TY_DIAG_RETRY_H
#define TY_DIAG_RETRY_H

#include <jansson.h>
#include <stdbool.h>

#include "server/diag/diag.h"

enum retry_category {
    RETRY_NONE, /* nothing failed */
    RETRY_PREEMPTION,
    RETRY_NODE_FAILURE,
    RETRY_NCCL,
    RETRY_HANG,
    RETRY_TRANSIENT,
    RETRY_DETERMINISTIC,
    RETRY_UNKNOWN,
};

struct retry_policy {
    int max_restarts;      /* restarts for failures (default 3) */
    int max_preemptions;   /* restarts after preemption, counted apart (default 10) */
    bool on_preemption;    /* default true */
    bool on_node_failure;  /* default true */
    bool on_nccl;          /* default true */
    bool on_hang;          /* default false: a stalled job is cancelled */
    bool on_transient;     /* default true */
    bool on_deterministic; /* default false */
    bool on_unknown;       /* default false */
    bool avoid_node;       /* exclude the failing node when it is to blame (default true) */
};

struct retry_decision {
    bool restart;
    enum retry_category category;
    bool preempted;       /* the job ends as "preempted", not "failed", when it is not restarted */
    char avoid_node[128]; /* "" when no node is to be avoided */
    char reason[256];     /* why, for a person */
};

void retry_policy_default(struct retry_policy *p);
const char *retry_category_name(enum retry_category c);
enum retry_category retry_categorize(const struct diag_summary *s);

/* restarts / preemptions: how many restarts of each count this job already had. */
void retry_decide(const struct diag_summary *s, const struct retry_policy *p, int restarts,
                  int preemptions, struct retry_decision *out);

/* {"restart", "category", "preempted", "avoid_node", "reason"}. New reference. */
json_t *retry_decision_json(const struct retry_decision *d);

#endif
