/*
 * status: what the Kubernetes objects say, as trainyard job and rank reports (loop thread).
 *
 *   job object condition (True)        job report
 *   Failed                             failed (reason: the first failed pod's, e.g. OOMKilled)
 *   Succeeded / Complete               succeeded
 *   Suspended (Kueue, or suspend)      queued, reason Suspended
 *   Restarting (PyTorchJob)            restarting (a new attempt)
 *   Running after Restarting           running
 *   not Suspended any more             starting, reason Resumed
 *
 *   pod / container                    rank report (one per rank of the pod)
 *   container running                  running (node, pod, restarts = restartCount + re-creations)
 *   container terminated, exit 0       succeeded
 *   container terminated, exit != 0    failed (reason Error, OOMKilled, ...; exit code)
 *   restarted in place                 the crashed run's end (from lastState), then running
 *   a container's end                  also its startedAt and the node's instance and capacity
 *                                      type, for usage (store/usage.h)
 *   pod Failed by eviction / node loss lost (reason NodeLost, Evicted, ...)
 *   pod deleted while running          lost: NodeLost when its node is NotReady or gone, else
 *                                      PodDeleted (stopped when trainyard stopped the job)
 *
 *   pod that cannot start              the job's reason and message (same state): the
 *     (image pull, config error,       first such rank's, in the kubelet's or scheduler's
 *      unschedulable)                  words; back to Starting once none waits
 *
 * Each slot (node of the job) remembers what it reported last, so a watch event that changes
 * nothing reports nothing.
 */
#include "core/clock.h"
#include "core/jsonx.h"
#include "core/xalloc.h"
#include "server/kube/internal.h"

void kube_report_job(struct kube *k, struct kjob *j, enum job_state state, const char *reason,
                     const char *message)
{
    if (j->reported == state)
        return;
    struct job_report r = { .job_pk = j->m.pk,
                            .attempt = j->attempt,
                            .set_state = true,
                            .state = state,
                            .reason = reason,
                            .message = message };
    executor_report_job(k->ex, &r);
    j->reported = state;
    if (state == JOB_RESTARTING)
        j->attempt++;
    if (jobstate_terminal(state))
        j->terminal = true;
    j->held = state == JOB_QUEUED;
}

/* The job's reason and message in the state it is in: why it waits. */
static void report_reason(struct kube *k, struct kjob *j, const char *reason, const char *message)
{
    char key[sizeof(j->wait_key)];
    snprintf(key, sizeof(key), "%s\n%s", reason, message);
    if (!strcmp(key, j->wait_key))
        return;
    snprintf(j->wait_key, sizeof(j->wait_key), "%s", key);
    struct job_report r = { .job_pk = j->m.pk,
                            .attempt = j->attempt,
                            .set_state = true,
                            .state = j->reported,
                            .reason = reason,
                            .message = message };
    executor_report_job(k->ex, &r);
}

void kube_report_event(struct kube *k, struct kjob *j, const char *type, const char *reason,
                       const char *message)
{
    struct job_event e = { .type = type, .reason = reason, .message = message, .rank = -1 };
    struct job_report r = { .job_pk = j->m.pk, .attempt = j->attempt, .events = &e, .nevents = 1 };
    executor_report_job(k->ex, &r);
}

static void report_slot(struct kube *k, struct kjob *j, int slot, struct rank_report *r)
{
    r->job_pk = j->m.pk;
    r->attempt = j->attempt;
    for (int i = 0; i < j->m.ppn; i++) {
        r->rank = slot * j->m.ppn + i;
        executor_report_rank(k->ex, r);
    }
}

void kube_status_stopped(struct kube *k, struct kjob *j, const char *why)
{
    for (int s = 0; s < j->m.nodes; s++) {
        if (j->slots[s].ended && j->slots[s].key[0])
            continue;
        struct rank_report r = { .state = RANK_STOPPED,
                                 .exit_code = -1,
                                 .reason = "Stopped",
                                 .message = why,
                                 .node = j->slots[s].node[0] ? j->slots[s].node : NULL,
                                 .restarts = j->slots[s].restarts };
        report_slot(k, j, s, &r);
        j->slots[s].ended = true;
        snprintf(j->slots[s].key, sizeof(j->slots[s].key), "stopped");
    }
}

/* The condition of that type when True (borrowed), else NULL. */
static const json_t *true_condition(const json_t *conds, const char *type)
{
    size_t i;
    json_t *c;
    json_array_foreach(conds, i, c)
    {
        const char *t = jsonx_str(c, "type"), *st = jsonx_str(c, "status");
        if (t && st && !strcmp(t, type) && !strcmp(st, "True"))
            return c;
    }
    return NULL;
}

static void failed(struct kube *k, struct kjob *j, const json_t *c)
{
    if (!j->fail_listed) { /* read the pods first, so that the first failure is a pod's */
        kube_obj_list_pods(k, j);
        return;
    }
    char msg[768];
    const char *cm = jsonx_str(c, "message");
    snprintf(msg, sizeof(msg), "%s%s%s%s", cm ? cm : "job failed", j->fail_msg[0] ? " (" : "",
             j->fail_msg, j->fail_msg[0] ? ")" : "");
    const char *reason = j->fail_reason[0] ? j->fail_reason : jsonx_str(c, "reason");
    kube_report_job(k, j, JOB_FAILED, reason ? reason : "Failed", msg);
    /* The operator deletes running pods of a finished job only per its cleanPodPolicy (None by
     * default for a PyTorchJob: the ranks that did not fail keep their GPUs): trainyard does. */
    kube_obj_reap(k, j);
}

/* Every slot's last report is a running container. */
static bool all_running(const struct kjob *j)
{
    for (int s = 0; s < j->m.nodes; s++)
        if (!j->slots[s].key[0] || j->slots[s].ended)
            return false;
    return true;
}

/* A pod ran again: the operator's restart is over once the object says Running (and no longer
 * Restarting or Failed) and every pod runs. */
static void restart_over(struct kube *k, struct kjob *j)
{
    const struct kobj *o = kmap_get(&k->objs, j->key);
    if (!o || j->reported != JOB_RESTARTING || j->stop_requested || j->terminal)
        return;
    if (true_condition(o->conditions, "Running") && !true_condition(o->conditions, "Failed") &&
        !true_condition(o->conditions, "Restarting") && all_running(j))
        kube_report_job(k, j, JOB_RUNNING, "Running", "the failed pods are running again");
}

void kube_status_object(struct kube *k, struct kjob *j)
{
    const struct kobj *o = kmap_get(&k->objs, j->key);
    if (!o || j->stop_requested || j->terminal)
        return;
    const json_t *conds = o->conditions, *c;
    char msg[512];
    if ((c = true_condition(conds, "Failed"))) {
        failed(k, j, c);
    } else if ((c = true_condition(conds, "Succeeded")) ||
               (c = true_condition(conds, "Complete"))) {
        const char *m = jsonx_str(c, "message");
        kube_report_job(k, j, JOB_SUCCEEDED, "Succeeded", m ? m : "the job completed");
    } else if (o->suspended || (c = true_condition(conds, "Suspended"))) {
        const char *m = c ? jsonx_str(c, "message") : NULL;
        snprintf(msg, sizeof(msg),
                 "%s (the %s is suspended: Kueue admits it when its queue has "
                 "quota, or resume it in Kubernetes)",
                 m ? m : "suspended", j->m.kind);
        kube_report_job(k, j, JOB_QUEUED, "Suspended", msg);
    } else if ((c = true_condition(conds, "Restarting"))) {
        const char *m = jsonx_str(c, "message");
        kube_report_job(k, j, JOB_RESTARTING, "Restarting", m ? m : "restarting failed pods");
    } else if (j->reported == JOB_QUEUED) {
        kube_report_job(k, j, JOB_STARTING, "Resumed", "the job is no longer suspended");
    } else if (j->reported == JOB_RESTARTING && true_condition(conds, "Running") &&
               all_running(j)) { /* not before its re-created pods are reported running */
        kube_report_job(k, j, JOB_RUNNING, "Running", "the failed pods are running again");
    }
}

void kube_status_object_gone(struct kube *k, struct kjob *j)
{
    j->phase = KJ_GONE;
    char msg[400];
    if (j->stop_requested) {
        kube_status_stopped(k, j, "cancelled: the job's pods were deleted");
        return;
    }
    snprintf(msg, sizeof(msg), "the %s %s/%s was deleted outside trainyard", j->m.kind, j->m.ns,
             j->m.obj);
    if (!j->terminal)
        kube_report_job(k, j, JOB_FAILED, "Deleted", msg);
    kube_status_stopped(k, j, msg);
}

/* A pod's failure as one line for the job's message. */
static void note_failure(struct kjob *j, const struct kpod *p, int slot, const char *reason,
                         int code)
{
    if (j->fail_reason[0] || j->stop_requested)
        return;
    char exit[32] = "";
    if (code >= 0)
        snprintf(exit, sizeof(exit), ", exit code %d", code);
    snprintf(j->fail_reason, sizeof(j->fail_reason), "%s", reason);
    snprintf(j->fail_msg, sizeof(j->fail_msg), "first failure: rank %d, pod %s on node %s: %s%s",
             slot * j->m.ppn, p->name, p->node[0] ? p->node : "?", reason, exit);
}

/* Reports one state of the slot unless it is what was reported last. */
static void report_state(struct kube *k, struct kjob *j, struct kpod *p, struct kslot *s,
                         struct rank_report *r, int instance)
{
    bool ended = rankstate_terminal(r->state);
    char key[192];
    snprintf(key, sizeof(key), "%s %d %s", p->uid, instance, ended ? "ended" : "running");
    if (!strcmp(key, s->key))
        return;
    snprintf(s->key, sizeof(s->key), "%s", key);
    s->ended = ended;
    /* Pods trainyard (cancel), the operator after the end, or Kueue (suspend) took away. */
    bool ours = j->stop_requested || j->held || (j->terminal && r->state == RANK_FAILED);
    if (ended && r->state != RANK_SUCCEEDED && ours) {
        r->state = RANK_STOPPED;
        r->reason = j->held ? "Suspended" : "Stopped";
    } else if (ended && r->state != RANK_SUCCEEDED) {
        note_failure(j, p, p->slot, r->reason ? r->reason : "Error", r->exit_code);
    }
    r->node = p->node[0] ? p->node : NULL;
    r->pod = p->name;
    r->restarts = s->restarts;
    if (ended) { /* usage: what the run's node was (Karpenter's nodes do not stay) */
        const json_t *node = kube_nodes_get(k->nodes, r->node);
        r->instance_type = jsonx_str(node, "instance_type");
        r->capacity_type = jsonx_str(node, "capacity_type");
    }
    report_slot(k, j, p->slot, r);
}

static void ended_from(const json_t *term, struct rank_report *r)
{
    r->exit_code = (int)jsonx_int(term, "exitCode", -1);
    r->signal = (int)jsonx_int(term, "signal", 0);
    r->state = r->exit_code == 0 ? RANK_SUCCEEDED : RANK_FAILED;
    r->reason = jsonx_str(term, "reason");
    if (!r->reason)
        r->reason = r->exit_code == 0 ? "Completed" : "Error";
    r->message = jsonx_str(term, "message");
    const char *at = jsonx_str(term, "finishedAt");
    if (!at || clock_parse(at, &r->time) < 0)
        r->time = clock_now_ns();
    /* usage: the run's own start, which the rank's stored one is not after a restart in place */
    at = jsonx_str(term, "startedAt");
    if (!at || clock_parse(at, &r->started_at) < 0)
        r->started_at = 0;
}

static const json_t *container_status(const json_t *pod, const char *name)
{
    size_t i;
    json_t *cs;
    json_array_foreach(json_object_get(json_object_get(pod, "status"), "containerStatuses"), i,
                       cs) if (jsonx_str(cs, "name") &&
                               !strcmp(jsonx_str(cs, "name"), name)) return cs;
    return NULL;
}

/* Eviction or node loss: the pod failed without its container ending. */
static bool lost(struct kube *k, struct kjob *j, struct kpod *p, struct kslot *s, int restarts)
{
    const json_t *st = json_object_get(p->last, "status");
    const char *phase = jsonx_str(st, "phase"), *why = jsonx_str(st, "reason");
    if (!phase || strcmp(phase, "Failed") != 0 || !why)
        return false;
    bool node = !strcmp(why, "DeletionByTaintManager") || !strcmp(why, "DeletionByPodGC") ||
                !strcmp(why, "NodeLost");
    struct rank_report r = { .state = RANK_LOST,
                             .exit_code = -1,
                             .reason = node ? "NodeLost" : why,
                             .message = jsonx_str(st, "message"),
                             .time = clock_now_ns() };
    report_state(k, j, p, s, &r, restarts);
    return true;
}

/* Takes the slot over for a new pod (a re-created one); false for a pod already replaced. */
static bool claim(struct kube *k, struct kjob *j, struct kpod *p, struct kslot *s)
{
    if (!strcmp(s->uid, p->uid))
        return true;
    if (p->retired)
        return false;
    struct kpod *old = s->uid[0] ? kmap_get(&k->pods, s->uid) : NULL;
    if (old)
        old->retired = true;
    snprintf(s->uid, sizeof(s->uid), "%s", p->uid);
    s->pods++;
    (void)j;
    return true;
}

/* Waiting reasons of a container that mean it cannot start without a change (the kubelet's). */
static bool cannot_start(const char *reason)
{
    static const char *const reasons[] = { "ErrImagePull",         "ImagePullBackOff",
                                           "InvalidImageName",     "CreateContainerConfigError",
                                           "CreateContainerError", "RunContainerError" };
    for (size_t i = 0; reason && i < sizeof(reasons) / sizeof(reasons[0]); i++)
        if (!strcmp(reason, reasons[i]))
            return true;
    return false;
}

/* Why the slot's pod waits, into s->wait_reason/wait_msg ("" when it does not). */
static void note_waiting(struct kslot *s, const struct kpod *p, const json_t *cs)
{
    const json_t *st = json_object_get(p->last, "status");
    const json_t *w = json_object_get(json_object_get(cs, "state"), "waiting");
    const char *why = jsonx_str(w, "reason"), *msg = jsonx_str(w, "message");
    s->wait_reason[0] = s->wait_msg[0] = '\0';
    if (cannot_start(why)) {
        snprintf(s->wait_reason, sizeof(s->wait_reason), "%s", why);
        snprintf(s->wait_msg, sizeof(s->wait_msg), "%s", msg ? msg : why);
        return;
    }
    size_t i;
    json_t *c;
    json_array_foreach(json_object_get(st, "conditions"), i, c)
    {
        const char *t = jsonx_str(c, "type"), *r = jsonx_str(c, "reason");
        if (t && r && !strcmp(t, "PodScheduled") && !strcmp(r, "Unschedulable")) {
            snprintf(s->wait_reason, sizeof(s->wait_reason), "Unschedulable");
            msg = jsonx_str(c, "message");
            snprintf(s->wait_msg, sizeof(s->wait_msg), "cannot be scheduled: %s",
                     msg ? msg : "no node fits");
        }
    }
}

/* The job's reason: the first waiting slot's, until none waits. */
static void report_waiting(struct kube *k, struct kjob *j)
{
    if (j->terminal || j->stop_requested || j->held || j->reported == JOB_QUEUED)
        return;
    for (int i = 0; i < j->m.nodes; i++) {
        const struct kslot *s = &j->slots[i];
        if (!s->wait_reason[0] || s->ended)
            continue;
        char msg[800];
        const struct kpod *p = kmap_get(&k->pods, s->uid);
        snprintf(msg, sizeof(msg), "rank %d (pod %s): %s", i * j->m.ppn, p ? p->name : "?",
                 s->wait_msg);
        report_reason(k, j, s->wait_reason, msg);
        return;
    }
    if (j->wait_key[0] && j->reported == JOB_STARTING)
        report_reason(k, j, "Starting", "no pod waits for an image, its configuration or a node");
}

void kube_status_pod(struct kube *k, struct kpod *p)
{
    struct kjob *j = p->job;
    if (!j || p->slot < 0 || p->slot >= j->m.nodes || !claim(k, j, p, &j->slots[p->slot]))
        return;
    struct kslot *s = &j->slots[p->slot];
    snprintf(s->node, sizeof(s->node), "%s", p->node);
    const json_t *cs = container_status(p->last, p->container);
    int restarts = (int)jsonx_int(cs, "restartCount", 0);
    s->restarts = s->pods - 1 + restarts;
    note_waiting(s, p, cs);
    report_waiting(k, j);
    if (lost(k, j, p, s, restarts))
        return;
    const json_t *state = json_object_get(cs, "state");
    const json_t *last = json_object_get(json_object_get(cs, "lastState"), "terminated");
    struct rank_report r = { .exit_code = -1 };
    if (json_object_get(state, "running")) {
        if (last && restarts > 0) { /* the run before this one ended while we were not looking */
            struct rank_report e = { 0 };
            ended_from(last, &e);
            int keep = s->restarts;
            s->restarts = keep - 1;
            report_state(k, j, p, s, &e, restarts - 1);
            s->restarts = keep;
        }
        r.state = RANK_RUNNING;
        const char *at = jsonx_str(json_object_get(state, "running"), "startedAt");
        if (!at || clock_parse(at, &r.time) < 0)
            r.time = clock_now_ns();
        report_state(k, j, p, s, &r, restarts);
        restart_over(k, j);
    } else if (json_object_get(state, "terminated")) {
        ended_from(json_object_get(state, "terminated"), &r);
        report_state(k, j, p, s, &r, restarts);
    } else if (last) { /* waiting to restart after a crash */
        ended_from(last, &r);
        report_state(k, j, p, s, &r, restarts);
    }
}

void kube_status_pod_gone(struct kube *k, struct kpod *p)
{
    struct kjob *j = p->job;
    if (!j || p->slot < 0 || p->slot >= j->m.nodes)
        return;
    struct kslot *s = &j->slots[p->slot];
    if (strcmp(s->uid, p->uid) != 0 || s->ended)
        return;
    /* A pod that vanished from a node that stopped reporting went with its node (the cloud
     * terminated the instance and the pod garbage collector removed the pod): the node's
     * NotReady comes first, so the node cache already says so. */
    bool node_gone = p->node[0] && !kube_nodes_ready(k->nodes, p->node);
    char msg[400];
    snprintf(msg, sizeof(msg), "the pod was deleted while it ran%s%s%s",
             node_gone ? " on node " : "", node_gone ? p->node : "",
             node_gone ? ", which is NotReady or gone" : "");
    struct rank_report r = { .state = RANK_LOST,
                             .exit_code = -1,
                             .reason = node_gone ? "NodeLost" : "PodDeleted",
                             .message = msg,
                             .time = clock_now_ns() };
    report_state(k, j, p, s, &r, -1);
}
