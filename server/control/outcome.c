/*
 * outcome: the end of an attempt from its diagnosis and the restart policy (see outcome.h).
 * Without a diagnosis (no health registry, or nothing found) the earliest failed rank's ending
 * is classified by the same library, so reasons and messages have one vocabulary.
 */
#include "server/control/outcome.h"

#include "core/clock.h"
#include "core/jsonx.h"
#include "core/xalloc.h"
#include "server/diag/classify.h"
#include "store/findings.h"

void outcome_policy(const struct spec_view *v, struct retry_policy *p)
{
    retry_policy_default(p);
    p->max_restarts = v->max_restarts;
    p->max_preemptions = v->max_preemptions;
    p->avoid_node = v->avoid_failed_nodes;
    bool on_failure =
        strcmp(v->restart_policy, "on_failure") == 0 || strcmp(v->restart_policy, "exit_code") == 0;
    p->on_preemption = p->on_node_failure = p->on_nccl = p->on_transient = on_failure;
    p->on_unknown = on_failure;
    p->on_deterministic = p->on_hang = false;
    if (!v->restart_on)
        return;
    p->on_preemption = p->on_node_failure = p->on_nccl = p->on_transient = false;
    p->on_unknown = p->on_deterministic = p->on_hang = false;
    size_t i;
    json_t *c;
    json_array_foreach(v->restart_on, i, c)
    {
        const char *s = json_string_value(c);
        p->on_preemption |= strcmp(s, "preemption") == 0;
        p->on_node_failure |= strcmp(s, "node_failure") == 0;
        p->on_nccl |= strcmp(s, "nccl_timeout") == 0;
        p->on_transient |= strcmp(s, "transient") == 0;
        p->on_hang |= strcmp(s, "hang") == 0;
        p->on_unknown |= strcmp(s, "unknown") == 0;
        p->on_deterministic |= strcmp(s, "deterministic") == 0;
    }
}

void outcome_stall_options(const struct spec_view *v, int64_t floor_ns, struct stall_options *o)
{
    stall_options_default(o);
    if (floor_ns > 0)
        o->floor_ns = floor_ns;
    if (v->stall_after_seconds > 0)
        o->floor_ns = v->stall_after_seconds * NS_PER_SEC;
    if (v->startup_seconds > 0)
        o->startup_ns = v->startup_seconds * NS_PER_SEC;
    if (o->startup_ns < o->floor_ns)
        o->startup_ns = o->floor_ns;
}

/* The rank that failed first: the earliest FAILED or LOST end, else any end that is not a
 * success. NULL when every rank succeeded (or none ended). */
static const struct rank *first_failed(const struct rank *r, size_t n)
{
    const struct rank *best = NULL, *other = NULL;
    for (size_t i = 0; i < n; i++) {
        if (r[i].state == RANK_FAILED || r[i].state == RANK_LOST) {
            if (!best || r[i].finished_at < best->finished_at)
                best = &r[i];
        } else if (rankstate_terminal(r[i].state) && r[i].state != RANK_SUCCEEDED && !other) {
            other = &r[i];
        }
    }
    return best ? best : other;
}

/* A summary from one rank's ending alone (no diagnosis). */
static void from_ending(const struct rank *k, struct health_summary *hs)
{
    struct ending e = { .rank = k->rank,
                        .node = k->node[0] ? k->node : NULL,
                        .time_ns = k->finished_at,
                        .exited = k->exit_code >= 0,
                        .exit_code = k->exit_code,
                        .signal = k->signal,
                        .reason = k->reason,
                        .message = k->message,
                        .lost = k->state == RANK_LOST };
    struct ending_class c;
    ending_classify(&e, &c);
    struct diag_summary *s = &hs->s;
    memset(s, 0, sizeof(*s));
    s->rank = s->log_rank = k->rank;
    if (c.kind == DIAG_KIND_NONE)
        return;
    s->found = true;
    s->kind = c.kind;
    s->role = c.role;
    s->retry = kinds_retry_of(c.kind, DIAG_RETRY_KIND);
    s->node_fault = kinds_info(c.kind)->node_fault;
    snprintf(hs->node, sizeof(hs->node), "%s", k->node);
    s->node = hs->node[0] ? hs->node : NULL;
    s->time_ns = k->finished_at;
    s->pattern = "exit";
    s->has_exit = e.exited;
    s->exit_code = k->exit_code;
    s->signal = c.signal;
    s->ranks[s->nranks++] = k->rank;
    char who[32];
    snprintf(who, sizeof(who), "rank %d", k->rank);
    struct classify_vars vars = { .who = who, .node = s->node, .detail = c.detail, .text = c.text };
    classify_render(kinds_info(c.kind)->summary, &vars, s->text, sizeof(s->text));
}

/* Restarts of earlier attempts that were after a preemption (their own budget). */
static int preemption_restarts(struct store *st, const struct job *j)
{
    json_t *att = store_diag_attempts(st, j->pk, NULL);
    int n = 0;
    size_t i;
    json_t *a;
    json_array_foreach(att, i, a)
    {
        json_t *d = json_object_get(a, "decision");
        const char *cat = jsonx_str(d, "category");
        if (jsonx_int(a, "attempt", 0) < j->attempt && cat && strcmp(cat, "preemption") == 0 &&
            json_is_true(json_object_get(d, "restart")))
            n++;
    }
    json_decref(att);
    return n;
}

/* Kubeflow's ExitCode policy: codes from signals an operator sends are worth retrying. */
static bool retryable_exit(const struct spec_view *v, const struct rank *k)
{
    int code = k->signal ? 128 + k->signal : k->exit_code;
    if (v->restart_exit_codes) {
        size_t i;
        json_t *c;
        json_array_foreach(v->restart_exit_codes, i,
                           c) if (json_integer_value(c) == code) return true;
        return false;
    }
    return code == 130 || code == 137 || code == 143 || code == 138;
}

static void legacy_exit_code(const struct spec_view *v, const struct job *j, int susp,
                             const struct rank *k, struct retry_decision *d)
{
    if (d->category == RETRY_PREEMPTION || v->restart_on)
        return; /* preemptions keep their own budget; `on` replaces the exit code rule */
    bool listed = k && retryable_exit(v, k), budget = j->attempt - susp < v->max_restarts;
    d->restart = listed && budget;
    int code = k ? (k->signal ? 128 + k->signal : k->exit_code) : -1;
    snprintf(d->reason, sizeof(d->reason), "exit code %d %s restart.exit_codes%s", code,
             listed ? "is in" : "is not in", listed && !budget ? " (restarts used up)" : "");
}

/* The ending of the rank the summary names (its exit code or signal belongs to it, not to the
 * rank that happened to exit first); NULL when that rank has none. */
static const struct rank *named_rank(const struct diag_summary *s, const struct rank *ranks,
                                     size_t n, const struct rank *first)
{
    int want = s->log_rank >= 0 ? s->log_rank : s->rank;
    if (!s->found)
        return first;
    if (s->every_rank)
        return NULL; /* no rank is named, so no rank's ending either */
    for (size_t i = 0; i < n && want >= 0; i++)
        if (ranks[i].rank == want)
            return &ranks[i];
    return NULL;
}

/* k: the failed rank the summary names (NULL: none or the job), first: the first to fail. */
static char *first_failure_json(const struct diag_summary *s, const struct rank *k,
                                const struct rank *first, const struct job *j, const char *reason)
{
    json_t *o = diag_summary_json(s);
    if (!json_is_object(o)) {
        json_decref(o);
        o = json_object();
    }
    int rank = s->rank >= 0 ? s->rank : s->log_rank >= 0 ? s->log_rank : k ? k->rank : -1;
    if (s->every_rank)
        rank = -1; /* every rank reported it alike: the logs name none */
    json_object_set_new(o, "rank", rank >= 0 ? json_integer(rank) : json_null());
    json_object_set_new(o, "reason", json_string(reason));
    json_object_set_new(o, "kind", json_string(s->found ? kinds_info(s->kind)->name : "exit"));
    if (!s->has_exit && k) {
        json_object_set_new(o, "exit_code",
                            k->exit_code >= 0 ? json_integer(k->exit_code) : json_null());
        json_object_set_new(o, "signal", k->signal ? json_integer(k->signal) : json_null());
    }
    if ((json_is_null(json_object_get(o, "node")) || !json_object_get(o, "node")) && rank >= 0)
        jsonx_set_str(o, "node", k && k->node[0] ? k->node : NULL);
    jsonx_set_time(o, "at", s->time_ns ? s->time_ns : first ? first->finished_at : clock_now_ns());
    json_object_set_new(o, "attempt", json_integer(j->attempt));
    char *text = jsonx_dumps(o);
    json_decref(o);
    return text;
}

void outcome_decide(struct store *st, struct health *h, const struct job *j,
                    const struct spec_view *v, struct outcome *out)
{
    memset(out, 0, sizeof(*out));
    struct rank *ranks = NULL;
    size_t n = 0;
    store_ranks_get(st, j->pk, &ranks, &n, NULL);
    const struct rank *k = first_failed(ranks, n);
    struct health_summary hs;
    memset(&hs, 0, sizeof(hs));
    if (!(h && health_summarize(h, j, &hs) && hs.s.found)) {
        memset(&hs, 0, sizeof(hs));
        hs.s.rank = hs.s.log_rank = -1;
        if (k)
            from_ending(k, &hs);
    }
    struct retry_policy pol;
    outcome_policy(v, &pol);
    int pre = preemption_restarts(st, j), susp = store_job_suspensions(st, j->pk);
    retry_decide(&hs.s, &pol, j->attempt - pre - susp, pre, &out->dec);
    if (strcmp(v->restart_policy, "exit_code") == 0)
        legacy_exit_code(v, j, susp, k, &out->dec);
    out->restart = out->dec.restart;
    out->state = out->dec.preempted ? JOB_PREEMPTED : JOB_FAILED;
    if (hs.s.found) {
        snprintf(out->reason, sizeof(out->reason), "%s", kinds_info(hs.s.kind)->reason);
        snprintf(out->message, sizeof(out->message), "%s", hs.s.text);
    } else {
        snprintf(out->reason, sizeof(out->reason), "%s",
                 k && k->reason[0] && strcmp(k->reason, "Error") ? k->reason : "RankFailed");
        snprintf(out->message, sizeof(out->message), "%s",
                 k && k->message[0] ? k->message : "the job's ranks ended without succeeding");
    }
    out->node_fault = hs.s.found && hs.s.node_fault;
    snprintf(out->node, sizeof(out->node), "%s", hs.s.node ? hs.s.node : "");
    out->first_failure =
        first_failure_json(&hs.s, named_rank(&hs.s, ranks, n, k), k, j, out->reason);
    out->decision = retry_decision_json(&out->dec);
    json_object_set_new(out->decision, "attempt", json_integer(j->attempt));
    ranks_free(ranks, n);
}

void outcome_release(struct outcome *o)
{
    free(o->first_failure);
    json_decref(o->decision);
    o->first_failure = NULL;
    o->decision = NULL;
}
