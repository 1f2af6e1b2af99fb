/*
 * retry: restart decisions from a diagnosis and a policy (see retry.h). Preemptions have their
 * own budget: a job on spot capacity should not exhaust its failure restarts by being
 * preempted.
 *
 * Pure; thread-safe.
 */
#include "server/diag/retry.h"

#include <stdio.h>
#include <string.h>

#include "core/jsonx.h"

void retry_policy_default(struct retry_policy *p)
{
    memset(p, 0, sizeof(*p));
    p->max_restarts = 3;
    p->max_preemptions = 10;
    p->on_preemption = true;
    p->on_node_failure = true;
    p->on_nccl = true;
    p->on_transient = true;
    p->avoid_node = true;
}

const char *retry_category_name(enum retry_category c)
{
    static const char *const names[] = { "none", "preemption", "node_failure",  "nccl",
                                         "hang", "transient",  "deterministic", "unknown" };
    return (unsigned)c < sizeof(names) / sizeof(names[0]) ? names[c] : "unknown";
}

enum retry_category retry_categorize(const struct diag_summary *s)
{
    if (!s->found)
        return RETRY_NONE;
    switch (s->kind) {
    case DIAG_PREEMPTION:
    case DIAG_EVICTION:
        return RETRY_PREEMPTION;
    case DIAG_NODE_LOST:
        return RETRY_NODE_FAILURE;
    case DIAG_HANG:
        return RETRY_HANG;
    case DIAG_NCCL_TIMEOUT:
    case DIAG_NCCL_ERROR:
    case DIAG_RENDEZVOUS:
        if (s->retry == DIAG_RETRYABLE)
            return s->node_fault ? RETRY_NODE_FAILURE : RETRY_NCCL;
        break;
    default:
        break;
    }
    if (s->node_fault && s->retry != DIAG_DETERMINISTIC)
        return RETRY_NODE_FAILURE;
    switch (s->retry) {
    case DIAG_RETRYABLE:
        return RETRY_TRANSIENT;
    case DIAG_DETERMINISTIC:
        return RETRY_DETERMINISTIC;
    default:
        return RETRY_UNKNOWN;
    }
}

static bool allowed(const struct retry_policy *p, enum retry_category c)
{
    switch (c) {
    case RETRY_PREEMPTION:
        return p->on_preemption;
    case RETRY_NODE_FAILURE:
        return p->on_node_failure;
    case RETRY_NCCL:
        return p->on_nccl;
    case RETRY_HANG:
        return p->on_hang;
    case RETRY_TRANSIENT:
        return p->on_transient;
    case RETRY_DETERMINISTIC:
        return p->on_deterministic;
    case RETRY_UNKNOWN:
        return p->on_unknown;
    case RETRY_NONE:
        break;
    }
    return false;
}

void retry_decide(const struct diag_summary *s, const struct retry_policy *p, int restarts,
                  int preemptions, struct retry_decision *out)
{
    memset(out, 0, sizeof(*out));
    out->category = retry_categorize(s);
    out->preempted = out->category == RETRY_PREEMPTION;
    const char *cat = retry_category_name(out->category);
    if (out->category == RETRY_NONE) {
        snprintf(out->reason, sizeof(out->reason), "no failure to recover from");
        return;
    }
    bool pre = out->category == RETRY_PREEMPTION;
    int used = pre ? preemptions : restarts, limit = pre ? p->max_preemptions : p->max_restarts;
    if (!allowed(p, out->category)) {
        snprintf(out->reason, sizeof(out->reason), "%s failures are not restarted by the policy",
                 cat);
        return;
    }
    if (used >= limit) {
        snprintf(out->reason, sizeof(out->reason), "%s: %d of %d %s used", cat, used, limit,
                 pre ? "preemption restarts" : "restarts");
        return;
    }
    out->restart = true;
    if (p->avoid_node && s->node && s->node_fault)
        snprintf(out->avoid_node, sizeof(out->avoid_node), "%s", s->node);
    snprintf(out->reason, sizeof(out->reason), "%s: restart %d of %d%s%s", cat, used + 1, limit,
             out->avoid_node[0] ? ", avoiding node " : "", out->avoid_node);
}

json_t *retry_decision_json(const struct retry_decision *d)
{
    json_t *o = json_object();
    json_object_set_new(o, "restart", json_boolean(d->restart));
    json_object_set_new(o, "category", json_string(retry_category_name(d->category)));
    json_object_set_new(o, "preempted", json_boolean(d->preempted));
    jsonx_set_str(o, "avoid_node", d->avoid_node[0] ? d->avoid_node : NULL);
    json_object_set_new(o, "reason", json_string(d->reason));
    return o;
}
