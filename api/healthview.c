/*
 * healthview: the job health answer (see healthview.h). Each check appends a reason and raises
 * the level; the level names the status.
 */
#include "api/healthview.h"

#include "core/clock.h"
#include "core/jsonx.h"
#include "store/nodes.h"

enum level { OK, DEGRADED, FAILING };

struct view {
    enum level level;
    json_t *reasons;
};

static void reason(struct view *v, enum level l, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void reason(struct view *v, enum level l, const char *fmt, ...)
{
    char text[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof(text), fmt, ap);
    va_end(ap);
    json_array_append_new(v->reasons, json_string(text));
    if (l > v->level)
        v->level = l;
}

static json_t *saved_rank(const json_t *health, int rank)
{
    size_t i;
    json_t *r;
    json_array_foreach(json_object_get(health, "ranks"), i,
                       r) if (jsonx_int(r, "rank", -1) == rank) return r;
    return NULL;
}

static void copy(json_t *to, const json_t *from, const char *key)
{
    json_t *v = json_object_get(from, key);
    json_object_set(to, key, v ? v : json_null());
}

static json_t *rank_view(const struct job *j, const struct rank *r, const json_t *saved,
                         int64_t now, struct view *v)
{
    bool active = !jobstate_terminal(j->state);
    json_t *o = json_object();
    json_object_set_new(o, "rank", json_integer(r->rank));
    json_object_set_new(o, "state", json_string(rankstate_name(r->state)));
    json_object_set_new(o, "alive", json_boolean(r->state == RANK_RUNNING));
    jsonx_set_str(o, "node", r->node[0] ? r->node : NULL);
    jsonx_set_str(o, "pod", r->pod[0] ? r->pod : NULL);
    json_object_set_new(o, "restarts", json_integer(r->restarts));
    json_object_set_new(o, "exit_code",
                        r->exit_code >= 0 ? json_integer(r->exit_code) : json_null());
    json_object_set_new(o, "signal", r->signal ? json_integer(r->signal) : json_null());
    static const char *const keys[] = { "last_line_time", "last_seq",       "last_step",
                                        "heartbeat_time", "heartbeat_step", "metrics_dropped",
                                        "straggler",      "preflight" };
    for (size_t k = 0; k < sizeof(keys) / sizeof(keys[0]); k++)
        copy(o, saved, keys[k]);
    if (!json_is_boolean(json_object_get(o, "straggler")))
        json_object_set_new(o, "straggler", json_false());
    if (active && (r->state == RANK_FAILED || r->state == RANK_LOST))
        reason(v, FAILING, "rank %d %s%s%s", r->rank, rankstate_name(r->state),
               r->reason[0] ? ": " : "", r->reason);
    if (json_is_true(json_object_get(o, "straggler")))
        reason(v, DEGRADED, "rank %d is a straggler", r->rank);
    json_t *pf = json_object_get(o, "preflight");
    if (json_is_false(json_object_get(pf, "ok")))
        reason(v, FAILING, "rank %d failed its preflight: %s", r->rank,
               jsonx_str(pf, "detail") ? jsonx_str(pf, "detail") : "");
    const char *hb = jsonx_str(o, "heartbeat_time");
    int64_t hb_ns = 0;
    if (active && r->state == RANK_RUNNING && hb && clock_parse(hb, &hb_ns) == 0 &&
        now - hb_ns > HEALTHVIEW_HEARTBEAT_STALE_NS)
        reason(v, DEGRADED, "rank %d sent no heartbeat for %.0f s", r->rank,
               (double)(now - hb_ns) / 1e9);
    return o;
}

static json_t *mark_json(const struct node_mark *m)
{
    json_t *o = json_pack("{s:s,s:s,s:s,s:s}", "state", m->state, "reason", m->reason, "message",
                          m->message, "source", m->source);
    jsonx_set_str(o, "job_id", m->job_id[0] ? m->job_id : NULL);
    jsonx_set_time(o, "updated_at", m->updated_at);
    return o;
}

static void node_conditions(const char *name, const json_t *conds, struct view *v)
{
    size_t i;
    json_t *c;
    json_array_foreach(conds, i, c)
    {
        const char *s = json_string_value(c);
        if (!s)
            continue;
        bool bad = strcmp(s, "GPUXidError") == 0 || strcmp(s, "GPUECCError") == 0;
        reason(v, bad ? FAILING : DEGRADED, "node %s: %s", name, s);
    }
}

static json_t *node_view(struct store *st, const char *name, const json_t *saved, bool active,
                         struct view *v)
{
    json_t *o = json_object();
    json_t *conds = json_object_get(saved, "conditions");
    json_object_set_new(o, "conditions", conds ? json_incref(conds) : json_array());
    json_t *gpus = json_object_get(saved, "gpus");
    json_object_set_new(o, "gpus", gpus ? json_incref(gpus) : json_array());
    copy(o, saved, "gpus_updated");
    struct node_mark *m = store_node_mark_get(st, name, NULL);
    json_object_set_new(o, "mark", m ? mark_json(m) : json_null());
    if (m)
        reason(v, strcmp(m->state, "bad") == 0 ? FAILING : DEGRADED, "node %s is marked %s: %s",
               name, m->state, m->reason);
    if (active)
        node_conditions(name, conds, v);
    node_mark_free(m);
    return o;
}

/* Why an executor says a job that has not ended waits (the Kubernetes kubelet's and
 * scheduler's reasons, server/kube/status.c): failing when it cannot start without a change,
 * degraded when it waits for capacity. */
static enum level waiting_level(const char *reason)
{
    static const char *const failing[] = { "ErrImagePull",         "ImagePullBackOff",
                                           "InvalidImageName",     "CreateContainerConfigError",
                                           "CreateContainerError", "RunContainerError" };
    for (size_t i = 0; reason && i < sizeof(failing) / sizeof(failing[0]); i++)
        if (!strcmp(reason, failing[i]))
            return FAILING;
    return reason && !strcmp(reason, "Unschedulable") ? DEGRADED : OK;
}

static void job_reasons(const struct job *j, const json_t *diag, struct view *v)
{
    enum level waiting = jobstate_terminal(j->state) ? OK : waiting_level(j->reason);
    if (waiting != OK)
        reason(v, waiting, "%s: %s", j->reason, j->message ? j->message : "");
    if (j->state == JOB_FAILED)
        reason(v, FAILING, "the job failed: %s", j->message ? j->message : "");
    else if (j->state == JOB_PREEMPTED)
        reason(v, DEGRADED, "the job was preempted: %s", j->message ? j->message : "");
    if (!jobstate_terminal(j->state) && json_is_true(json_object_get(diag, "stalled"))) {
        json_t *s = json_object_get(diag, "stall");
        const char *summary = jsonx_str(s, "summary");
        if (summary)
            reason(v, FAILING, "stalled: %s", summary);
        else
            reason(v, FAILING, "stalled: no progress for %.0f s (limit %.0f s)",
                   json_number_value(json_object_get(s, "idle_seconds")),
                   json_number_value(json_object_get(s, "limit_seconds")));
    }
}

json_t *healthview_job(struct store *st, const struct job *j, const struct rank *ranks, size_t n,
                       const json_t *diag, int64_t now)
{
    struct view v = { .level = OK, .reasons = json_array() };
    const json_t *health = json_object_get(diag, "health");
    job_reasons(j, diag, &v);
    json_t *rs = json_array(), *nodes = json_object();
    for (size_t i = 0; i < n; i++)
        json_array_append_new(rs,
                              rank_view(j, &ranks[i], saved_rank(health, ranks[i].rank), now, &v));
    for (size_t i = 0; i < n; i++) {
        const char *name = ranks[i].node;
        if (!name[0] || json_object_get(nodes, name))
            continue;
        const json_t *saved = json_object_get(json_object_get(health, "nodes"), name);
        json_object_set_new(nodes, name,
                            node_view(st, name, saved, !jobstate_terminal(j->state), &v));
    }
    static const char *const names[] = { "ok", "degraded", "failing" };
    json_t *o = json_object();
    json_object_set_new(o, "job_id", json_string(j->id));
    json_object_set_new(o, "state", json_string(jobstate_name(j->state)));
    json_object_set_new(o, "status", json_string(names[v.level]));
    json_object_set_new(o, "reasons", v.reasons);
    json_object_set_new(o, "attempt", json_integer(j->attempt));
    json_object_set_new(o, "stalled", json_boolean(json_is_true(json_object_get(diag, "stalled"))));
    copy(o, diag, "stall");
    copy(o, diag, "progress");
    json_object_set_new(o, "ranks", rs);
    json_object_set_new(o, "nodes", nodes);
    copy(o, diag, "updated_at");
    return o;
}
