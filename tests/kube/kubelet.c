/*
 * kubelet: per-pod runtime state (struct podrt) kept beside the stored Pod, advanced on the
 * simulated clock by kubelet_tick(). Like a real kubelet it learns about pods by following
 * their changes (the store's history) rather than re-reading them, and leaves finished pods
 * alone until they change. The stored Pod's status is rewritten only when something visible
 * changed, so a running pod that prints lines does not churn resourceVersions.
 * Timings are compressed (scheduling 50 ms, image pull 150 ms, a line every 100 ms, the first
 * restart at once, then back-off from 500 ms doubling to 5 s) and scaled by the world's speed.
 * Ownership: struct kubelet owns its podrt list; lock: world lock held by every caller.
 */
#include "tests/kube/kubelet.h"

#include <stdint.h>

#include "core/clock.h"
#include "core/crypto.h"
#include "core/jsonx.h"
#include "core/parse.h"
#include "core/xalloc.h"
#include "tests/kube/events.h"
#include "tests/kube/kubelet_pod.h"
#include "tests/kube/kubelet_script.h"
#include "tests/kube/nodes.h"
#include "tests/kube/podlog.h"
#include "tests/kube/status.h"
#include "tests/kube/store.h"
#include "tests/kube/world.h"

#define MS             (1000LL * 1000LL)
#define SCHEDULE_DELAY (50 * MS)
#define PULL_DELAY     (150 * MS)
#define KILL_DELAY     (100 * MS)
#define BACKOFF_BASE   (500 * MS)
#define BACKOFF_MAX    (5000 * MS)
#define LOST_DELETE    (1000 * MS) /* a lost node's pods are deleted after its NotReady shows */

struct kubelet {
    struct podrt *pods;
    json_t *by_uid;           /* uid -> integer holding the podrt pointer */
    json_t *runs;             /* "ns/pod/container" -> starts so far, for fail-attempts */
    int64_t seen_rv;          /* how far the pod history has been followed */
    struct sched_cache sched; /* the scheduler's cache, for one tick */
};

static struct event_source kubelet_src(const struct podrt *rt)
{
    return (struct event_source){ "kubelet", rt->node[0] ? rt->node : NULL };
}

struct kubelet *kubelet_new(void)
{
    struct kubelet *k = XNEW(struct kubelet);
    k->by_uid = json_object();
    k->runs = json_object();
    return k;
}

static void podrt_free(struct podrt *rt)
{
    json_decref(rt->pod);
    for (size_t i = 0; i < rt->n; i++) {
        json_decref(rt->c[i].last);
        script_release(&rt->c[i].script);
    }
    free(rt->c);
    free(rt);
}

void kubelet_free(struct kubelet *k)
{
    if (!k)
        return;
    for (struct podrt *rt = k->pods, *next; rt; rt = next) {
        next = rt->next;
        podrt_free(rt);
    }
    json_decref(k->by_uid);
    json_decref(k->runs);
    free(k);
}

static struct podrt *podrt_new(struct kubelet *k, const json_t *pod)
{
    struct podrt *rt = XNEW(struct podrt);
    const json_t *m = json_object_get(pod, "metadata");
    rt->pod = json_incref((json_t *)pod);
    snprintf(rt->uid, sizeof(rt->uid), "%s", kstr(m, "uid"));
    snprintf(rt->ns, sizeof(rt->ns), "%s", kstr(m, "namespace"));
    snprintf(rt->name, sizeof(rt->name), "%s", kstr(m, "name"));
    json_t *ctrs = kpath(pod, "spec.containers");
    rt->n = json_array_size(ctrs);
    rt->c = xcalloc(rt->n + 1, sizeof(struct ctr));
    for (size_t i = 0; i < rt->n; i++) {
        json_t *c = json_array_get(ctrs, i);
        snprintf(rt->c[i].name, sizeof(rt->c[i].name), "%s", kstr(c, "name"));
        snprintf(rt->c[i].image, sizeof(rt->c[i].image), "%s", kstr(c, "image"));
        rt->c[i].state = C_WAITING;
        snprintf(rt->c[i].wait_reason, sizeof(rt->c[i].wait_reason), "ContainerCreating");
    }
    rt->next = k->pods;
    k->pods = rt;
    json_object_set_new(k->by_uid, rt->uid, json_integer((json_int_t)(intptr_t)rt));
    return rt;
}

static struct podrt *find(struct kubelet *k, const char *uid)
{
    json_t *v = json_object_get(k->by_uid, uid);
    return v ? (struct podrt *)(intptr_t)json_integer_value(v) : NULL;
}

/* ---- container lifecycle ---- */

static json_t *container_spec(const json_t *pod, const char *name)
{
    size_t i;
    json_t *c;
    json_array_foreach (kpath(pod, "spec.containers"), i, c)
        if (!strcmp(kstr(c, "name"), name))
            return c;
    return NULL;
}

static void start_ctr(struct world *w, struct kubelet *k, struct podrt *rt, struct ctr *c,
                      const json_t *pod)
{
    char key[600];
    snprintf(key, sizeof(key), "%s/%s/%s", rt->ns, rt->name, c->name);
    json_int_t attempt = json_integer_value(json_object_get(k->runs, key)) + 1;
    json_object_set_new(k->runs, key, json_integer(attempt));
    script_release(&c->script);
    script_load(&c->script, pod, container_spec(pod, c->name), (int)attempt);
    unsigned char rnd[32];
    char hex[65];
    crypto_random(rnd, sizeof(rnd));
    crypto_hex(rnd, sizeof(rnd), hex);
    snprintf(c->id, sizeof(c->id), "containerd://%s", hex);
    c->state = C_RUNNING;
    c->wait_reason[0] = c->wait_msg[0] = '\0';
    c->started = clock_now_ns();
    c->next_line = 0;
    c->next_at = w->sim_ns;
    c->backoff_until = 0;
    podlogs_start(w->logs, rt->uid, c->name);
    struct event_source src = kubelet_src(rt);
    char fp[96];
    snprintf(fp, sizeof(fp), "spec.containers{%s}", c->name);
    events_emit(w, pod, &src, "Normal", "Created", fp, "Created container: %s", c->name);
    events_emit(w, pod, &src, "Normal", "Started", fp, "Started container %s", c->name);
}

static void oom_event(struct world *w, const struct podrt *rt)
{
    json_t *node = store_get(w->store, resource_lookup("", "v1", "nodes"), NULL, rt->node);
    struct event_source src = { "kernel-monitor", rt->node };
    if (node)
        events_emit(w, node, &src, "Warning", "OOMKilling", NULL,
                    "Memory cgroup out of memory: Killed process %u (python) total-vm:52432080kB, "
                    "anon-rss:41943040kB, file-rss:0kB, shmem-rss:0kB, UID:0 pgtables:84312kB "
                    "oom_score_adj:-997",
                    4000 + (unsigned)(rt->uid[0] & 0x7f));
}

static void terminate_ctr(struct world *w, struct podrt *rt, struct ctr *c, int code, bool oom,
                          const char *reason)
{
    c->state = C_TERMINATED;
    c->exit_code = oom ? 137 : code;
    snprintf(c->reason, sizeof(c->reason), "%s",
             reason ? reason
             : oom  ? "OOMKilled"
             : code ? "Error"
                    : "Completed");
    c->finished = clock_now_ns();
    podlogs_end(w->logs, rt->uid, c->name);
    if (oom)
        oom_event(w, rt);
}

static bool wants_restart(const json_t *pod, const struct ctr *c)
{
    const char *policy = kstr(kpath(pod, "spec"), "restartPolicy");
    return c->force_restart || !strcmp(policy, "Always") || !policy[0] ||
           (!strcmp(policy, "OnFailure") && c->exit_code != 0);
}

/* A terminated container that will restart: back off first (CrashLoopBackOff). */
static void begin_backoff(struct world *w, struct podrt *rt, struct ctr *c, const json_t *pod)
{
    json_decref(c->last);
    char t1[32], t2[32];
    c->last = json_pack("{s:i, s:s, s:s, s:s, s:s}", "exitCode", c->exit_code, "reason", c->reason,
                        "startedAt", ktime(c->started, t1), "finishedAt", ktime(c->finished, t2),
                        "containerID", c->id);
    /* like the kubelet: the first restart is immediate, later ones back off exponentially */
    int64_t delay = c->restarts ? BACKOFF_BASE << (c->restarts < 5 ? c->restarts - 1 : 4) : 0;
    if (delay > BACKOFF_MAX || c->force_restart)
        delay = c->force_restart ? 0 : BACKOFF_MAX;
    c->backoff_until = w->sim_ns + delay;
    c->state = C_WAITING;
    snprintf(c->wait_reason, sizeof(c->wait_reason), "%s", delay ? "CrashLoopBackOff" : "");
    snprintf(c->wait_msg, sizeof(c->wait_msg),
             "back-off %llds restarting failed container=%s pod=%s_%s(%s)",
             (long long)((delay + NS_PER_SEC - 1) / NS_PER_SEC), c->name, rt->name, rt->ns,
             rt->uid);
    if (!delay) {
        c->wait_msg[0] = '\0';
        return;
    }
    struct event_source src = kubelet_src(rt);
    char fp[96];
    snprintf(fp, sizeof(fp), "spec.containers{%s}", c->name);
    events_emit(w, pod, &src, "Warning", "BackOff", fp,
                "Back-off restarting failed container %s in pod %s_%s(%s)", c->name, rt->name,
                rt->ns, rt->uid);
}

static void restart_ctr(struct world *w, struct kubelet *k, struct podrt *rt, struct ctr *c,
                        const json_t *pod)
{
    c->restarts++;
    c->force_restart = false;
    struct event_source src = kubelet_src(rt);
    char fp[96];
    snprintf(fp, sizeof(fp), "spec.containers{%s}", c->name);
    events_emit(w, pod, &src, "Normal", "Pulled", fp,
                "Container image \"%s\" already present on machine", c->image);
    start_ctr(w, k, rt, c, pod);
}

/* Runs the scripts; returns true when the pod's status must be rewritten. */
static bool run_containers(struct world *w, struct kubelet *k, struct podrt *rt, const json_t *pod)
{
    bool changed = false, all_done = true;
    for (size_t i = 0; i < rt->n; i++) {
        struct ctr *c = &rt->c[i];
        if (c->state == C_RUNNING) {
            while (c->next_line < c->script.n && w->sim_ns >= c->next_at) {
                podlogs_append(w->logs, rt->uid, c->name, clock_now_ns(),
                               c->script.lines[c->next_line++]);
                c->next_at += c->script.interval_ns;
            }
            if (c->next_line >= c->script.n && !c->script.forever && w->sim_ns >= c->next_at) {
                terminate_ctr(w, rt, c, c->script.exit_code, c->script.oom, NULL);
                changed = true;
            }
        }
        if (c->state == C_TERMINATED && wants_restart(pod, c)) {
            begin_backoff(w, rt, c, pod);
            changed = true;
        }
        if (c->state == C_WAITING && c->last && w->sim_ns >= c->backoff_until) {
            restart_ctr(w, k, rt, c, pod);
            changed = true;
        }
        all_done &= c->state == C_TERMINATED;
    }
    if (all_done) {
        rt->stage = ST_DONE;
        changed = true;
    }
    return changed;
}

/* ---- pod stages ---- */

static void try_schedule(struct world *w, struct kubelet *k, struct podrt *rt, const json_t *pod)
{
    char why[1024];
    struct event_source sched = { "default-scheduler", NULL };
    const char *bound = kstr(kpath(pod, "spec"), "nodeName");
    if (bound[0]) {
        snprintf(rt->node, sizeof(rt->node), "%s", bound);
    } else if (nodes_schedule(w, &k->sched, pod, rt->node, why, sizeof(why)) < 0) {
        events_emit(w, pod, &sched, "Warning", "FailedScheduling", NULL, "%s", why);
        kubelet_write_status(w, rt, pod, why);
        rt->at = w->sim_ns + NS_PER_SEC;
        return;
    }
    json_t *copy = json_deep_copy(pod);
    json_object_set_new(kobj(copy, "spec"), "nodeName", json_string(rt->node));
    json_t *bound_pod = store_replace(w->store, resource_lookup("", "v1", "pods"), copy, NULL);
    if (!bound[0])
        events_emit(w, bound_pod, &sched, "Normal", "Scheduled", NULL,
                    "Successfully assigned %s/%s to %s", rt->ns, rt->name, rt->node);
    unsigned char rnd[2];
    crypto_random(rnd, sizeof(rnd));
    snprintf(rt->ip, sizeof(rt->ip), "10.0.%u.%u", 100u + rnd[0] % 100u, 2u + rnd[1] % 250u);
    json_t *node = store_get(w->store, resource_lookup("", "v1", "nodes"), NULL, rt->node);
    size_t i;
    json_t *a;
    json_array_foreach (kpath(node, "status.addresses"), i, a)
        if (!strcmp(kstr(a, "type"), "InternalIP"))
            snprintf(rt->host_ip, sizeof(rt->host_ip), "%s", kstr(a, "address"));
    rt->started = clock_now_ns();
    rt->stage = ST_PULLING;
    rt->at = w->sim_ns + PULL_DELAY;
    kubelet_write_status(w, rt, bound_pod, NULL);
}

/* What the kubelet refuses before a container starts (CreateContainerConfigError): an env
 * value from a Secret or a key in it that does not exist (ConfigMaps are not simulated).
 * Returns true with the kubelet's words in msg. */
static bool config_error(struct world *w, const struct podrt *rt, const json_t *ctr, char *msg,
                         size_t size)
{
    const struct resource *secrets = resource_lookup("", "v1", "secrets");
    size_t i;
    json_t *e;
    json_array_foreach (json_object_get(ctr, "env"), i, e) {
        const json_t *ref = kpath(e, "valueFrom.secretKeyRef");
        if (!ref || json_is_true(json_object_get(ref, "optional")))
            continue;
        const json_t *sec = store_get(w->store, secrets, rt->ns, kstr(ref, "name"));
        if (!sec) {
            snprintf(msg, size, "secret \"%s\" not found", kstr(ref, "name"));
            return true;
        }
        if (!json_object_get(json_object_get(sec, "data"), kstr(ref, "key"))) {
            snprintf(msg, size, "couldn't find key %s in Secret %s/%s", kstr(ref, "key"), rt->ns,
                     kstr(ref, "name"));
            return true;
        }
    }
    return false;
}

static void pull(struct world *w, struct podrt *rt, const json_t *pod, bool pull_error)
{
    struct event_source src = kubelet_src(rt);
    for (size_t i = 0; i < rt->n; i++) {
        struct ctr *c = &rt->c[i];
        char fp[96];
        snprintf(fp, sizeof(fp), "spec.containers{%s}", c->name);
        events_emit(w, pod, &src, "Normal", "Pulling", fp, "Pulling image \"%s\"", c->image);
        if (pull_error) {
            events_emit(w, pod, &src, "Warning", "Failed", fp,
                        "Failed to pull image \"%s\": rpc error: code = NotFound desc = failed to "
                        "pull and unpack image \"%s\": not found",
                        c->image, c->image);
            events_emit(w, pod, &src, "Warning", "Failed", fp, "Error: ErrImagePull");
            events_emit(w, pod, &src, "Normal", "BackOff", fp, "Back-off pulling image \"%s\"",
                        c->image);
            snprintf(c->wait_reason, sizeof(c->wait_reason), "ImagePullBackOff");
            snprintf(c->wait_msg, sizeof(c->wait_msg), "Back-off pulling image \"%s\"", c->image);
            continue;
        }
        events_emit(w, pod, &src, "Normal", "Pulled", fp,
                    "Successfully pulled image \"%s\" in 1.204s (1.204s including waiting). Image "
                    "size: 3421556373 bytes.",
                    c->image);
    }
    rt->pulled = !pull_error;
}

static void pull_and_start(struct world *w, struct kubelet *k, struct podrt *rt, const json_t *pod)
{
    struct event_source src = kubelet_src(rt);
    bool pull_error = !strcmp(
        kstr(kpath(pod, "metadata.annotations"), "testserver.trainyard.io/image-pull-error"),
        "true");
    if (!rt->pulled)
        pull(w, rt, pod, pull_error);
    bool waiting = false;
    for (size_t i = 0; rt->pulled && i < rt->n; i++) {
        struct ctr *c = &rt->c[i];
        char fp[96], msg[256];
        snprintf(fp, sizeof(fp), "spec.containers{%s}", c->name);
        if (c->state == C_WAITING &&
            config_error(w, rt, container_spec(pod, c->name), msg, sizeof(msg))) {
            events_emit(w, pod, &src, "Warning", "Failed", fp, "Error: %s", msg);
            snprintf(c->wait_reason, sizeof(c->wait_reason), "CreateContainerConfigError");
            snprintf(c->wait_msg, sizeof(c->wait_msg), "%s", msg);
            waiting = true;
            continue;
        }
        if (c->state == C_WAITING)
            start_ctr(w, k, rt, c, pod);
    }
    if (waiting) /* the kubelet tries again on its next sync */
        rt->at = w->sim_ns + NS_PER_SEC;
    rt->stage = pull_error ? ST_STUCK : waiting ? ST_PULLING : ST_RUNNING;
    kubelet_write_status(w, rt, pod, NULL);
}

static void drop(struct world *w, struct kubelet *k, struct podrt *rt)
{
    podlogs_drop(w->logs, rt->uid);
    json_object_del(k->by_uid, rt->uid);
    for (struct podrt **pp = &k->pods; *pp; pp = &(*pp)->next)
        if (*pp == rt) {
            *pp = rt->next;
            break;
        }
    podrt_free(rt);
}

/* Deletion: stop the containers, then remove the pod once they are down. */
static bool kill_pod(struct world *w, struct kubelet *k, struct podrt *rt, const json_t *pod)
{
    if (rt->stage != ST_KILLING) {
        struct event_source src = kubelet_src(rt);
        for (size_t i = 0; i < rt->n && !rt->evict_reason; i++) {
            struct ctr *c = &rt->c[i];
            if (c->state != C_RUNNING)
                continue;
            char fp[96];
            snprintf(fp, sizeof(fp), "spec.containers{%s}", c->name);
            events_emit(w, pod, &src, "Normal", "Killing", fp, "Stopping container %s", c->name);
            terminate_ctr(w, rt, c, 143, false, "Error");
        }
        rt->stage = ST_KILLING;
        rt->at = w->sim_ns + KILL_DELAY;
        kubelet_write_status(w, rt, pod, NULL);
        return true;
    }
    if (w->sim_ns < rt->at)
        return true;
    const json_t *m = json_object_get(pod, "metadata");
    store_remove(w->store, resource_lookup("", "v1", "pods"), kstr(m, "namespace"), kstr(m, "name"),
                 NULL);
    drop(w, k, rt);
    return false;
}

static void lost_pod_gone(struct world *w, struct podrt *rt, const json_t *pod);

/* Advances one pod; false when rt was freed (the pod is gone). */
static bool step(struct world *w, struct kubelet *k, struct podrt *rt, const json_t *pod)
{
    if (rt->stage != ST_LOST && kpath(pod, "metadata.deletionTimestamp"))
        return kill_pod(w, k, rt, pod);
    if (w->sim_ns < rt->at)
        return true;
    switch (rt->stage) {
    case ST_LOST:
        lost_pod_gone(w, rt, pod);
        break;
    case ST_UNSCHEDULED:
        try_schedule(w, k, rt, pod);
        break;
    case ST_PULLING:
        pull_and_start(w, k, rt, pod);
        break;
    case ST_RUNNING:
        if (run_containers(w, k, rt, pod))
            kubelet_write_status(w, rt, pod, NULL);
        break;
    default:
        break;
    }
    rt->idle = rt->stage == ST_DONE || rt->stage == ST_STUCK;
    return true;
}

static bool finished(const json_t *pod)
{
    const char *phase = kstr(kpath(pod, "status"), "phase");
    return !strcmp(phase, "Succeeded") || !strcmp(phase, "Failed");
}

/* Whether this kubelet runs the pod: every pod when this process is the API server (it
 * schedules them too); behind a real one, only the pods its scheduler bound to our nodes. */
static bool runs_here(struct world *w, const json_t *pod)
{
    if (!w->remote)
        return true;
    const char *node = kstr(kpath(pod, "spec"), "nodeName");
    json_t *n =
        node[0] ? store_get(w->store, resource_lookup("", "v1", "nodes"), NULL, node) : NULL;
    size_t i;
    json_t *c;
    json_array_foreach (kpath(n, "status.conditions"), i, c)
        if (!strcmp(kstr(c, "type"), "Ready"))
            return !strcmp(kstr(c, "status"), "True"); /* a lost node's kubelet runs nothing */
    return false;
}

/* Takes in a new version of a pod: updates its podrt, or starts tracking a new pod. */
static void observe(struct world *w, struct kubelet *k, json_t *pod)
{
    struct podrt *rt = find(k, kstr(kpath(pod, "metadata"), "uid"));
    if (!rt && !runs_here(w, pod))
        return;
    if (rt) {
        json_decref(rt->pod);
        rt->pod = json_incref(pod);
        rt->idle = false;
    } else if (!finished(pod)) { /* a pod finished before we knew it has nothing left to run */
        rt = podrt_new(k, pod);
        rt->at = w->sim_ns + SCHEDULE_DELAY;
    }
}

/* Re-reads every pod: at start, and when the history no longer reaches back. */
static void resync(struct world *w, struct kubelet *k)
{
    for (struct podrt *rt = k->pods; rt; rt = rt->next)
        rt->gone = true;
    size_t n;
    json_t **pods = store_list(w->store, resource_lookup("", "v1", "pods"), NULL, &n);
    for (size_t i = 0; i < n; i++) {
        observe(w, k, pods[i]);
        struct podrt *rt = find(k, kstr(kpath(pods[i], "metadata"), "uid"));
        if (rt)
            rt->gone = false;
    }
    store_list_free(pods, n);
}

/* Follows the store's history of pods since the last tick, like a kubelet's pod watch. */
static void sync(struct world *w, struct kubelet *k)
{
    if (k->seen_rv < store_oldest_rv(w->store)) {
        resync(w, k);
    } else {
        const struct store_event *ev;
        for (int64_t rv = k->seen_rv; (ev = store_event_after(w->store, rv)); rv = ev->rv) {
            if (ev->res->table != TABLE_POD)
                continue;
            struct podrt *rt = find(k, kstr(kpath(ev->obj, "metadata"), "uid"));
            if (ev->type == STORE_DELETED && rt)
                rt->gone = true;
            else if (ev->type != STORE_DELETED)
                observe(w, k, ev->obj);
        }
    }
    k->seen_rv = store_rv(w->store);
}

void kubelet_tick(struct world *w, struct kubelet *k)
{
    sync(w, k);
    for (struct podrt *rt = k->pods, *next; rt; rt = next) {
        next = rt->next; /* step() may free rt */
        if (rt->gone) {
            drop(w, k, rt); /* deleted with grace 0, its namespace deleted, or removed by us */
            continue;
        }
        if (rt->idle)
            continue;
        json_t *pod = json_incref(rt->pod);
        step(w, k, rt, pod);
        json_decref(pod);
    }
    nodes_cache_release(&k->sched);
}

/* ---- control API ---- */

static struct podrt *running_pod(struct world *w, struct kubelet *k, const char *ns,
                                 const char *name, const json_t **pod, struct err *err)
{
    const struct resource *res = resource_lookup("", "v1", "pods");
    *pod = store_get(w->store, res, ns, name);
    if (!*pod) {
        store_not_found(err, res, name);
        return NULL;
    }
    struct podrt *rt = find(k, kstr(json_object_get(*pod, "metadata"), "uid"));
    if (!rt || rt->stage != ST_RUNNING) {
        status_set(err, ERR_CONFLICT, "Conflict", "pod \"%s\" is not running", name);
        return NULL;
    }
    return rt;
}

static struct ctr *pick(struct podrt *rt, const char *container, struct err *err)
{
    for (size_t i = 0; i < rt->n; i++)
        if (!container || !container[0] || !strcmp(rt->c[i].name, container))
            return &rt->c[i];
    status_set(err, ERR_NOT_FOUND, "NotFound", "container \"%s\" not found", container);
    return NULL;
}

int kubelet_exit(struct world *w, struct kubelet *k, const char *ns, const char *name,
                 const char *container, const struct kubelet_exit *how, struct err *err)
{
    const json_t *pod;
    struct podrt *rt = running_pod(w, k, ns, name, &pod, err);
    struct ctr *c = rt ? pick(rt, container, err) : NULL;
    if (!c)
        return -1;
    if (c->state != C_RUNNING)
        return status_set(err, ERR_CONFLICT, "Conflict", "container \"%s\" is not running",
                          c->name);
    terminate_ctr(w, rt, c, how->code, how->oom, how->reason);
    c->force_restart = how->restart;
    run_containers(w, k, rt, pod);
    kubelet_write_status(w, rt, pod, NULL);
    return 0;
}

int kubelet_print(struct world *w, struct kubelet *k, const char *ns, const char *name,
                  const char *container, const json_t *lines, struct err *err)
{
    const json_t *pod;
    struct podrt *rt = running_pod(w, k, ns, name, &pod, err);
    struct ctr *c = rt ? pick(rt, container, err) : NULL;
    if (!c)
        return -1;
    size_t i;
    json_t *l;
    json_array_foreach (lines, i, l)
        podlogs_append(w->logs, rt->uid, c->name, clock_now_ns(),
                       json_is_string(l) ? json_string_value(l) : "");
    return 0;
}

/* Behind a real API server a lost node's kubelet says nothing more: its containers stop, and
 * a second later (once the node's NotReady is on the server) its pods are deleted, as when
 * the cloud terminates the instance and the pod garbage collector removes what was bound to
 * it (grace 0: nobody is left to confirm). */
static void node_lost_remote(struct world *w, struct kubelet *k, const char *node)
{
    for (struct podrt *rt = k->pods; rt; rt = rt->next) {
        if (strcmp(rt->node, node) || rt->stage == ST_LOST)
            continue;
        for (size_t i = 0; i < rt->n; i++)
            if (rt->c[i].state == C_RUNNING)
                podlogs_end(w->logs, rt->uid, rt->c[i].name);
        rt->stage = ST_LOST;
        rt->at = w->sim_ns + LOST_DELETE;
        rt->idle = false;
    }
}

static void lost_pod_gone(struct world *w, struct podrt *rt, const json_t *pod)
{
    w->remote->del(w->remote->ctx, resource_lookup("", "v1", "pods"), pod, "Background", 0, false);
    rt->stage = ST_DONE;
}

void kubelet_node_lost(struct world *w, struct kubelet *k, const char *node, bool deleted)
{
    const struct resource *res = resource_lookup("", "v1", "pods");
    if (w->remote) {
        node_lost_remote(w, k, node);
        return;
    }
    for (struct podrt *rt = k->pods; rt; rt = rt->next) {
        if (strcmp(rt->node, node) || rt->stage == ST_KILLING || rt->stage == ST_DONE)
            continue;
        json_t *pod = store_get(w->store, res, rt->ns, rt->name);
        if (!pod)
            continue;
        rt->evict_reason = deleted ? "DeletionByPodGC" : "DeletionByTaintManager";
        rt->evict_msg = deleted ? "PodGC: node no longer exists"
                                : "Taint manager: deleting due to NoExecute taint";
        for (size_t i = 0; i < rt->n; i++)
            if (rt->c[i].state == C_RUNNING)
                terminate_ctr(w, rt, &rt->c[i], 137, false, "Error");
        rt->stage = ST_DONE;
        kubelet_write_status(w, rt, pod, NULL);
        /* the node is gone: nobody runs the graceful part, the pod is removed shortly */
        pod = store_get(w->store, res, rt->ns, rt->name);
        json_t *copy = json_deep_copy(pod);
        ktime_set(kobj(copy, "metadata"), "deletionTimestamp", clock_now_ns());
        json_object_set_new(kobj(copy, "metadata"), "deletionGracePeriodSeconds", json_integer(0));
        store_replace(w->store, res, copy, NULL);
        rt->stage = ST_KILLING;
        rt->at = w->sim_ns + 3 * KILL_DELAY;
    }
}
