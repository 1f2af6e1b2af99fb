/*
 * kubelet_pod: renders struct podrt into Pod.status as the kubelet reports it: phase, the pod
 * conditions (lastTransitionTime kept while a condition holds), host and pod IPs, startTime,
 * and containerStatuses with state, lastState, restartCount, image and container IDs.
 * Lock: world lock held by callers.
 */
#include "tests/kube/kubelet_pod.h"

#include "core/clock.h"
#include "tests/kube/store.h"
#include "tests/kube/world.h"

static json_t *ctr_state(const struct ctr *c)
{
    char t1[32], t2[32];
    if (c->state == C_RUNNING)
        return json_pack("{s:{s:s}}", "running", "startedAt", ktime(c->started, t1));
    if (c->state == C_TERMINATED)
        return json_pack("{s:{s:i, s:s, s:s, s:s, s:s}}", "terminated", "exitCode", c->exit_code,
                         "reason", c->reason, "startedAt", ktime(c->started, t1), "finishedAt",
                         ktime(c->finished, t2), "containerID", c->id);
    json_t *w = json_pack("{s:s}", "reason", c->wait_reason);
    if (c->wait_msg[0])
        json_object_set_new(w, "message", json_string(c->wait_msg));
    return json_pack("{s:o}", "waiting", w);
}

static json_t *ctr_status(const struct ctr *c)
{
    bool ready = c->state == C_RUNNING;
    json_t *s = json_pack("{s:s, s:o, s:o, s:b, s:i, s:s, s:s, s:b}", "name", c->name, "state",
                          ctr_state(c), "lastState", json_object(), "ready", ready, "restartCount",
                          c->restarts, "image", c->image, "imageID", "", "started", ready);
    if (c->last)
        json_object_set_new(s, "lastState", json_pack("{s:O}", "terminated", c->last));
    if (c->id[0]) {
        json_object_set_new(s, "containerID", json_string(c->id));
        char digest[80];
        snprintf(digest, sizeof(digest), "%s@sha256:%.64s", c->image, c->id + 13);
        json_object_set_new(s, "imageID", json_string(digest));
    }
    return s;
}

/* Adds a condition, keeping lastTransitionTime when the status did not change. */
static void add_condition(json_t *conds, const json_t *old_conds, const char *type, bool value,
                          const char *reason, const char *message)
{
    json_t *c = json_pack("{s:s, s:s, s:n}", "type", type, "status", value ? "True" : "False",
                          "lastProbeTime");
    if (reason)
        json_object_set_new(c, "reason", json_string(reason));
    if (message)
        json_object_set_new(c, "message", json_string(message));
    size_t i;
    json_t *o;
    json_array_foreach (old_conds, i, o)
        if (!strcmp(kstr(o, "type"), type) && !strcmp(kstr(o, "status"), kstr(c, "status")))
            json_object_set(c, "lastTransitionTime", json_object_get(o, "lastTransitionTime"));
    if (!json_object_get(c, "lastTransitionTime"))
        ktime_set(c, "lastTransitionTime", clock_now_ns());
    json_array_append_new(conds, c);
}

static const char *phase_of(const struct podrt *rt, const json_t *pod)
{
    if (rt->evict_reason)
        return "Failed";
    switch (rt->stage) {
    case ST_UNSCHEDULED:
    case ST_PULLING:
    case ST_STUCK:
        return "Pending";
    case ST_RUNNING:
        return "Running";
    case ST_KILLING:
    case ST_LOST:
        return kstr(kpath(pod, "status"), "phase");
    case ST_DONE:
        for (size_t i = 0; i < rt->n; i++)
            if (rt->c[i].exit_code != 0)
                return "Failed";
        return "Succeeded";
    }
    return "Unknown";
}

void kubelet_write_status(struct world *w, struct podrt *rt, const json_t *pod,
                          const char *sched_msg)
{
    json_t *old = json_object_get(pod, "status");
    json_t *old_conds = json_object_get(old, "conditions");
    json_t *st = json_pack("{s:s, s:s}", "phase", phase_of(rt, pod), "qosClass",
                           kstr(old, "qosClass")[0] ? kstr(old, "qosClass") : "BestEffort");
    json_t *conds = json_array();
    bool all_ready = rt->stage == ST_RUNNING && !rt->evict_reason;
    for (size_t i = 0; i < rt->n; i++)
        all_ready &= rt->c[i].state == C_RUNNING;
    if (rt->evict_reason)
        add_condition(conds, old_conds, "DisruptionTarget", true, rt->evict_reason, rt->evict_msg);
    if (rt->stage != ST_UNSCHEDULED) {
        add_condition(conds, old_conds, "PodReadyToStartContainers", !rt->evict_reason, NULL, NULL);
        add_condition(conds, old_conds, "Initialized", true, NULL, NULL);
        add_condition(conds, old_conds, "Ready", all_ready, all_ready ? NULL : "ContainersNotReady",
                      NULL);
        add_condition(conds, old_conds, "ContainersReady", all_ready,
                      all_ready ? NULL : "ContainersNotReady", NULL);
    }
    add_condition(conds, old_conds, "PodScheduled", rt->stage != ST_UNSCHEDULED,
                  sched_msg ? "Unschedulable" : NULL, sched_msg);
    json_object_set_new(st, "conditions", conds);
    if (rt->stage != ST_UNSCHEDULED) {
        json_t *ips = json_pack("[{s:s}]", "ip", rt->ip);
        json_object_set_new(st, "hostIP", json_string(rt->host_ip));
        json_object_set_new(st, "hostIPs", json_pack("[{s:s}]", "ip", rt->host_ip));
        json_object_set_new(st, "podIP", json_string(rt->ip));
        json_object_set_new(st, "podIPs", ips);
        ktime_set(st, "startTime", rt->started);
        json_t *cs = json_array();
        for (size_t i = 0; i < rt->n; i++)
            json_array_append_new(cs, ctr_status(&rt->c[i]));
        json_object_set_new(st, "containerStatuses", cs);
    }
    if (rt->evict_reason) {
        json_object_set_new(st, "reason", json_string(rt->evict_reason));
        json_object_set_new(st, "message", json_string(rt->evict_msg));
    }
    if (json_equal(st, old)) {
        json_decref(st);
        return;
    }
    json_t *copy = json_deep_copy(pod);
    json_object_set_new(copy, "status", st);
    store_replace(w->store, resource_lookup("", "v1", "pods"), copy, NULL);
}
