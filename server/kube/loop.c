/*
 * loop: the Kubernetes executor's thread. It owns the caches (jobs, objects, pods, nodes), the
 * watches per namespace, the log followers, and every API call; commands from the controller
 * arrive through a queue (executor.c) and are carried out here.
 */
#include "server/core/clock.h"
#include "server/core/jsonx.h"
#include "server/core/log.h"
#include "server/core/parse.h"
#include "server/core/xalloc.h"
#include "server/kube/internal.h"

#define TICK_NS      (100 * NS_PER_MS)
#define PUBLISH_NS   (500 * NS_PER_MS)
#define HELD_CHECK   (2 * NS_PER_SEC)
#define LABEL_JOBSET "jobset.sigs.k8s.io/jobset-name"
#define LABEL_PTJ    "training.kubeflow.org/job-name"

void kube_held_set(struct kube *k, const char *id, bool held)
{
    pthread_mutex_lock(&k->lock);
    if (held)
        kmap_put(&k->held, id, (void *)1);
    else
        kmap_del(&k->held, id);
    pthread_mutex_unlock(&k->lock);
}

static const char *label(const json_t *obj, const char *key)
{
    return jsonx_str(json_object_get(json_object_get(obj, "metadata"), "labels"), key);
}

static void obj_key(const json_t *obj, char *out, size_t size)
{
    const json_t *m = json_object_get(obj, "metadata");
    snprintf(out, size, "%s/%s", jsonx_str(m, "namespace") ? jsonx_str(m, "namespace") : "",
             jsonx_str(m, "name") ? jsonx_str(m, "name") : "");
}

/* ---- pods ---------------------------------------------------------------------------- */

static int pod_slot(const struct kjob *j, const json_t *labels)
{
    int idx = -1;
    if (!strcmp(j->m.kind, "TrainJob")) {
        const char *rj = jsonx_str(labels, "jobset.sigs.k8s.io/replicatedjob-name");
        const char *ci = jsonx_str(labels, "batch.kubernetes.io/job-completion-index");
        if ((rj && strcmp(rj, "node") != 0) || !ci || parse_int(ci, 0, 1 << 20, &idx) < 0)
            return -1;
        return idx;
    }
    const char *type = jsonx_str(labels, "training.kubeflow.org/replica-type");
    const char *ri = jsonx_str(labels, "training.kubeflow.org/replica-index");
    if (!type || !ri || parse_int(ri, 0, 1 << 20, &idx) < 0)
        return -1;
    if (!strcmp(type, "master"))
        return 0;
    return j->m.has_master ? idx + 1 : idx;
}

static struct kjob *job_of_pod(struct kube *k, const struct kpod *p)
{
    struct kjob *j = p->job_id ? kmap_get(&k->jobs_by_id, p->job_id) : NULL;
    return j ? j : p->owner_key ? kmap_get(&k->jobs, p->owner_key) : NULL;
}

static void follow(struct kube *k, struct kpod *p)
{
    struct kjob *j = p->job;
    if (!j || p->slot < 0 || p->slot >= j->m.nodes || !k->opts.logs.push || p->logs_done)
        return;
    if (!p->follow) {
        struct kube_follow_options o = { .client = k->client,
                                         .sources = k->opts.logs,
                                         .job_pk = j->m.pk,
                                         .rank = p->slot * j->m.ppn,
                                         .attempt = j->attempt,
                                         .ns = p->ns,
                                         .pod = p->name,
                                         .uid = p->uid,
                                         .container = p->container,
                                         .max_line = (size_t)k->opts.max_line };
        p->follow = kube_follow_new(&o);
    }
    struct kube_cstatus st;
    kube_cstatus_from_pod(p->last, p->container, &st);
    kube_follow_update(p->follow, &st);
}

static void pick_container(const json_t *pod, char *out, size_t size)
{
    const json_t *cs = json_object_get(json_object_get(pod, "spec"), "containers");
    const char *first = NULL;
    size_t i;
    json_t *c;
    json_array_foreach(cs, i, c)
    {
        const char *n = jsonx_str(c, "name");
        if (n && (!strcmp(n, "pytorch") || !strcmp(n, "node"))) {
            snprintf(out, size, "%s", n);
            return;
        }
        if (!first)
            first = n;
    }
    snprintf(out, size, "%s", first ? first : "pytorch");
}

static struct kpod *pod_new(const json_t *pod, const char *uid)
{
    struct kpod *p = XNEW(struct kpod);
    const json_t *m = json_object_get(pod, "metadata");
    snprintf(p->uid, sizeof(p->uid), "%s", uid);
    p->name = xstrdup(jsonx_str(m, "name") ? jsonx_str(m, "name") : "");
    p->ns = xstrdup(jsonx_str(m, "namespace") ? jsonx_str(m, "namespace") : "");
    const char *id = label(pod, KUBE_LABEL_JOB_ID);
    p->job_id = id ? xstrdup(id) : NULL;
    const char *owner = label(pod, LABEL_PTJ);
    if (!owner)
        owner = label(pod, LABEL_JOBSET);
    p->owner_key = owner ? xasprintf("%s/%s", p->ns, owner) : NULL;
    pick_container(pod, p->container, sizeof(p->container));
    p->labels = json_deep_copy(json_object_get(m, "labels"));
    p->slot = -1;
    return p;
}

void kube_pod_upsert(struct kube *k, const json_t *pod)
{
    const char *uid = jsonx_str(json_object_get(pod, "metadata"), "uid");
    if (!uid)
        return;
    struct kpod *p = kmap_get(&k->pods, uid);
    if (!p) {
        p = pod_new(pod, uid);
        kmap_put(&k->pods, uid, p);
    }
    const char *node = jsonx_str(json_object_get(pod, "spec"), "nodeName");
    if (node)
        snprintf(p->node, sizeof(p->node), "%s", node);
    json_decref(p->last);
    p->last = json_pack("{s:O}", "status", json_object_get(pod, "status"));
    if (!p->job && (p->job = job_of_pod(k, p)))
        p->slot = pod_slot(p->job, p->labels);
    if (!p->job)
        return;
    kube_status_pod(k, p);
    follow(k, p);
    k->nodes_dirty = true;
}

static void pod_remove(void *ctx, const json_t *pod)
{
    struct kube *k = ctx;
    const char *uid = jsonx_str(json_object_get(pod, "metadata"), "uid");
    struct kpod *p = uid ? kmap_get(&k->pods, uid) : NULL;
    if (!p || p->gone)
        return;
    p->gone = true;
    kube_status_pod_gone(k, p);
    if (p->follow) {
        struct kube_cstatus st = { .gone = true };
        kube_follow_update(p->follow, &st);
    }
    k->nodes_dirty = true;
}

static void pod_upsert(void *ctx, const json_t *pod)
{
    kube_pod_upsert(ctx, pod);
}

static void pod_free(struct kpod *p, bool force)
{
    kube_follow_free(p->follow, force);
    json_decref(p->last);
    json_decref(p->labels);
    free(p->name);
    free(p->ns);
    free(p->owner_key);
    free(p->job_id);
    free(p);
}

/* Frees pods that are gone and whose logs are read; ticks the followers of the others. */
static void pods_tick(struct kube *k, int64_t now)
{
    unsigned long long streams = 0, waiting = 0;
    for (struct kmap_iter it = kmap_first(&k->pods); it.e;) {
        struct kpod *p = it.e->value;
        const char *key = it.e->key;
        kmap_next(&k->pods, &it);
        if (p->follow) {
            kube_follow_tick(p->follow, now);
            streams += kube_follow_streaming(p->follow);
            waiting += (unsigned long long)kube_follow_waiting(p->follow);
        }
        if (p->follow && kube_follow_done(p->follow)) { /* every line is read: release the source */
            kube_follow_free(p->follow, false);
            p->follow = NULL;
            p->logs_done = true;
        }
        if (p->gone && !p->follow) {
            kmap_del(&k->pods, key);
            pod_free(p, false);
        }
    }
    atomic_store(&k->streams_open, streams);
    atomic_store(&k->streams_waiting, waiting);
    atomic_store(&k->pods_tracked, k->pods.n);
}

/* ---- job objects --------------------------------------------------------------------- */

static bool suspended(const json_t *obj)
{
    const json_t *spec = json_object_get(obj, "spec");
    return jsonx_bool(spec, "suspend", false) ||
           jsonx_bool(json_object_get(spec, "runPolicy"), "suspend", false);
}

static void obj_upsert(void *ctx, const json_t *obj)
{
    struct kube *k = ctx;
    char key[320];
    obj_key(obj, key, sizeof(key));
    struct kobj *o = kmap_get(&k->objs, key);
    if (!o) {
        o = XNEW(struct kobj);
        kmap_put(&k->objs, key, o);
    }
    const char *uid = jsonx_str(json_object_get(obj, "metadata"), "uid");
    const char *id = label(obj, KUBE_LABEL_JOB_ID);
    snprintf(o->uid, sizeof(o->uid), "%s", uid ? uid : "");
    snprintf(o->job_id, sizeof(o->job_id), "%s", id ? id : "");
    snprintf(o->kind, sizeof(o->kind), "%s", jsonx_str(obj, "kind") ? jsonx_str(obj, "kind") : "");
    json_decref(o->conditions);
    o->conditions = json_incref(json_object_get(json_object_get(obj, "status"), "conditions"));
    o->suspended = suspended(obj);
    if (id)
        kube_held_set(k, id, true); /* an object exists for this job: never start it again */
    struct kjob *j = kmap_get(&k->jobs, key);
    if (j && j->phase != KJ_CREATING)
        kube_status_object(k, j);
}

static void obj_remove(void *ctx, const json_t *obj)
{
    struct kube *k = ctx;
    char key[320];
    obj_key(obj, key, sizeof(key));
    struct kobj *o = kmap_del(&k->objs, key);
    if (o) {
        if (o->job_id[0])
            kube_held_set(k, o->job_id, false);
        json_decref(o->conditions);
        free(o);
    }
    struct kjob *j = kmap_get(&k->jobs, key);
    if (j && j->phase != KJ_CREATING && j->phase != KJ_GONE)
        kube_status_object_gone(k, j);
}

/* ---- events -------------------------------------------------------------------------- */

static void add_event(struct kube *k, struct kjob *j, const struct kube_event *ev)
{
    if (j->nevents == 0) { /* remember it for flush_events() */
        if (k->nevjobs == k->capevjobs) {
            k->capevjobs = k->capevjobs ? k->capevjobs * 2 : 64;
            k->evjobs = xrealloc(k->evjobs, k->capevjobs * sizeof(*k->evjobs));
        }
        k->evjobs[k->nevjobs++] = j;
    }
    if (j->nevents == j->capevents) {
        j->capevents = j->capevents ? j->capevents * 2 : 8;
        j->event_store = xrealloc(j->event_store, j->capevents * sizeof(*j->event_store));
    }
    j->event_store[j->nevents++] = *ev;
}

static void event_upsert(void *ctx, const json_t *ev)
{
    struct kube *k = ctx;
    const char *kind, *name, *uid;
    kube_event_subject(ev, &kind, &name, &uid);
    const char *ns = jsonx_str(json_object_get(ev, "metadata"), "namespace");
    struct kjob *j = NULL;
    int rank = -1;
    if (!strcmp(kind, "Pod")) {
        struct kpod *p = kmap_get(&k->pods, uid);
        j = p ? p->job : NULL;
        rank = p && p->slot >= 0 ? p->slot * (j ? j->m.ppn : 1) : -1;
    } else if (!strcmp(kind, "PyTorchJob") || !strcmp(kind, "TrainJob")) {
        char key[320];
        snprintf(key, sizeof(key), "%s/%s", ns ? ns : "", name);
        j = kmap_get(&k->jobs, key);
    }
    struct kube_event e;
    if (j && kube_event_convert(ev, rank, &e))
        add_event(k, j, &e);
}

static void event_remove(void *ctx, const json_t *ev)
{
    (void)ctx;
    (void)ev;
}

/* Hands each job's Kubernetes events of this round to the controller in one report. */
static void flush_events(struct kube *k)
{
    for (size_t n = 0; n < k->nevjobs; n++) {
        struct kjob *j = k->evjobs[n];
        struct job_event *evs = xcalloc(j->nevents, sizeof(*evs));
        for (size_t i = 0; i < j->nevents; i++) {
            evs[i] = j->event_store[i].e;
            evs[i].type = j->event_store[i].type;
            evs[i].reason = j->event_store[i].reason;
            evs[i].message = j->event_store[i].message;
            evs[i].ext_id = j->event_store[i].ext_id;
        }
        struct job_report r = {
            .job_pk = j->m.pk, .attempt = j->attempt, .events = evs, .nevents = j->nevents
        };
        executor_report_job(k->ex, &r);
        free(evs);
        j->nevents = 0;
    }
    k->nevjobs = 0;
}

/* ---- namespaces ---------------------------------------------------------------------- */

static struct kns *ensure_ns(struct kube *k, const char *ns)
{
    struct kns *n = kmap_get(&k->namespaces, ns);
    if (n)
        return n;
    n = XNEW(struct kns);
    n->name = xstrdup(ns);
    kmap_put(&k->namespaces, ns, n);
    struct kube_watch_ops objs = { k, obj_upsert, obj_remove, NULL };
    struct kube_watch_ops pods = { k, pod_upsert, pod_remove, NULL };
    char path[400];
    snprintf(path, sizeof(path), "/apis/kubeflow.org/v1/namespaces/%s/pytorchjobs", ns);
    n->pytorchjobs = kube_watch_new(k->client, path, KUBE_LABEL_JOB_ID, &objs);
    snprintf(path, sizeof(path), "/apis/trainer.kubeflow.org/v1alpha1/namespaces/%s/trainjobs", ns);
    n->trainjobs = kube_watch_new(k->client, path, KUBE_LABEL_JOB_ID, &objs);
    snprintf(path, sizeof(path), "/api/v1/namespaces/%s/pods", ns);
    n->pods = kube_watch_new(k->client, path, KUBE_LABEL_JOB_ID, &pods);
    return n;
}

/* TrainJob pods need not carry our labels (older Trainers, or runtimes that drop them): they
 * are found by their JobSet's name. */
static void ensure_jobset_pods(struct kube *k, struct kns *n)
{
    if (n->jobset_pods)
        return;
    struct kube_watch_ops pods = { k, pod_upsert, pod_remove, NULL };
    char path[400];
    snprintf(path, sizeof(path), "/api/v1/namespaces/%s/pods", n->name);
    n->jobset_pods = kube_watch_new(k->client, path, LABEL_JOBSET, &pods);
}

static void ensure_events(struct kube *k, struct kns *n)
{
    if (n->events || !atomic_load(&k->adopted_all))
        return;
    struct kube_watch_ops evs = { k, event_upsert, event_remove, NULL };
    char path[400];
    snprintf(path, sizeof(path), "/api/v1/namespaces/%s/events", n->name);
    n->events = kube_watch_new(k->client, path, NULL, &evs);
}

static bool ns_synced(const struct kns *n)
{
    return kube_watch_synced(n->pytorchjobs) && kube_watch_synced(n->trainjobs) &&
           kube_watch_synced(n->pods) && (!n->jobset_pods || kube_watch_synced(n->jobset_pods));
}

static void ns_free(struct kns *n)
{
    kube_watch_free(n->pytorchjobs);
    kube_watch_free(n->trainjobs);
    kube_watch_free(n->pods);
    kube_watch_free(n->jobset_pods);
    kube_watch_free(n->events);
    free(n->name);
    free(n);
}

/* ---- jobs ---------------------------------------------------------------------------- */

/* The job's record, made on first use; pods seen before it are attached now. */
static struct kjob *job_register(struct kube *k, const struct kjob_meta *m, int attempt,
                                 enum job_state reported)
{
    char key[320];
    snprintf(key, sizeof(key), "%s/%s", m->ns, m->obj);
    struct kjob *j = kmap_get(&k->jobs, key);
    if (!j) {
        j = XNEW(struct kjob);
        j->k = k;
        j->m = *m;
        snprintf(j->key, sizeof(j->key), "%s", key);
        j->slots = xcalloc((size_t)(m->nodes > 0 ? m->nodes : 1), sizeof(*j->slots));
        kmap_put(&k->jobs, key, j);
        kmap_put(&k->jobs_by_id, m->id, j);
    }
    j->attempt = attempt;
    j->reported = reported;
    j->phase = KJ_LIVE;
    struct kns *n = ensure_ns(k, m->ns);
    if (!strcmp(m->kind, "TrainJob"))
        ensure_jobset_pods(k, n);
    for (struct kmap_iter it = kmap_first(&k->pods); it.e; kmap_next(&k->pods, &it)) {
        struct kpod *p = it.e->value;
        if (p->job || p->gone || job_of_pod(k, p) != j)
            continue;
        p->job = j;
        p->slot = pod_slot(j, p->labels);
        kube_status_pod(k, p);
        follow(k, p);
    }
    atomic_store(&k->jobs_tracked, k->jobs.n);
    return j;
}

static void kjob_free(struct kube *k, struct kjob *j)
{
    for (size_t n = 0; n < k->nevjobs; n++)
        if (k->evjobs[n] == j)
            k->evjobs[n--] = k->evjobs[--k->nevjobs];
    kube_call_cancel(k->client, j->call);
    kube_call_cancel(k->client, j->list_call);
    for (struct kmap_iter it = kmap_first(&k->pods); it.e; kmap_next(&k->pods, &it)) {
        struct kpod *p = it.e->value;
        if (p->job == j) {
            kube_follow_free(p->follow, true);
            p->follow = NULL;
            p->job = NULL;
            p->gone = true;
        }
    }
    kmap_del(&k->jobs, j->key);
    if (kmap_get(&k->jobs_by_id, j->m.id) == j)
        kmap_del(&k->jobs_by_id, j->m.id);
    json_decref(j->object);
    json_decref(j->secret);
    free(j->slots);
    free(j->event_store);
    free(j);
    atomic_store(&k->jobs_tracked, k->jobs.n);
}

/* ---- commands ------------------------------------------------------------------------ */

/* Answers an adopt; returns true when nobody waits for the answer any more. */
static bool answer(struct kube *k, struct kcmd *c, int result)
{
    struct adopt_reply *r = c->reply;
    if (!r)
        return true;
    pthread_mutex_lock(&k->lock);
    bool abandoned = r->refs == 1;
    r->result = result;
    r->done = true;
    if (--r->refs == 0)
        free(r);
    pthread_cond_broadcast(&k->cond);
    pthread_mutex_unlock(&k->lock);
    c->reply = NULL;
    return abandoned;
}

static void do_start(struct kube *k, struct kcmd *c)
{
    struct kjob *j = job_register(k, &c->m, c->attempt, JOB_STARTING);
    j->stop_requested = j->terminal = j->fail_listed = j->adopted = false;
    j->fail_reason[0] = j->fail_msg[0] = j->uid[0] = '\0';
    memset(j->slots, 0, (size_t)j->m.nodes * sizeof(*j->slots));
    json_decref(j->object);
    json_decref(j->secret);
    j->object = c->object;
    j->secret = c->secret;
    c->object = c->secret = NULL;
    j->start_mono = c->queued_at;
    kube_held_set(k, j->m.id, true);
    kube_obj_create(k, j);
}

static void do_adopt(struct kube *k, struct kcmd *c)
{
    char key[320];
    snprintf(key, sizeof(key), "%s/%s", c->m.ns, c->m.obj);
    const struct kobj *o = kmap_get(&k->objs, key);
    bool exists = o && (!o->job_id[0] || !strcmp(o->job_id, c->m.id));
    if (!exists && (c->state == JOB_STARTING || c->state == JOB_CANCELLING)) {
        /* Nothing was created: the controller starts it (or ends the cancel). */
        if (answer(k, c, 1) && c->state == JOB_STARTING) {
            struct kjob *j = job_register(k, &c->m, c->attempt, c->state);
            j->phase = KJ_GONE;
            kube_report_job(k, j, JOB_QUEUED, "Requeued",
                            "the object was never created (the daemon stopped first): queued "
                            "again to create it");
        }
        return;
    }
    struct kjob *j = job_register(k, &c->m, c->attempt, c->state);
    j->stop_requested = c->state == JOB_CANCELLING;
    if (exists) {
        snprintf(j->uid, sizeof(j->uid), "%s", o->uid);
        kube_status_object(k, j);
    } else {
        kube_status_object_gone(k, j);
    }
    answer(k, c, 0);
}

static void do_stop(struct kube *k, struct kcmd *c)
{
    struct kjob *j = kmap_get(&k->jobs_by_id, c->m.id);
    if (!j)
        j = job_register(k, &c->m, c->attempt, c->state);
    j->stop_requested = true;
    kube_obj_delete(k, j, "Foreground");
}

static void do_forget(struct kube *k, struct kcmd *c)
{
    struct kjob *j = kmap_get(&k->jobs_by_id, c->m.id);
    if (j) {
        kube_obj_delete_detached(k, j->m.kind, j->m.ns, j->m.obj, j->m.token);
        kjob_free(k, j);
    }
    for (struct kmap_iter it = kmap_first(&k->objs); it.e; kmap_next(&k->objs, &it)) {
        struct kobj *o = it.e->value;
        if (j || strcmp(o->job_id, c->m.id) != 0)
            continue;
        const char *slash = strchr(it.e->key, '/');
        char ns[64];
        snprintf(ns, sizeof(ns), "%.*s", (int)(slash - it.e->key), it.e->key);
        kube_obj_delete_detached(k, o->kind, ns, slash + 1, true);
    }
    kube_held_set(k, c->m.id, false);
}

static void do_held(struct kube *k, struct kcmd *c)
{
    if (kmap_get(&k->jobs_by_id, c->m.id))
        return;
    struct kjob *j = job_register(k, &c->m, c->attempt, JOB_QUEUED);
    kube_status_object(k, j);
}

static void cmd_free(struct kcmd *c)
{
    json_decref(c->object);
    json_decref(c->secret);
    free(c);
}

/* Runs c, or parks it until its namespace's first lists are in (adopt and stop). */
static void run_cmd(struct kube *k, struct kcmd *c)
{
    if ((c->type == C_ADOPT || c->type == C_STOP || c->type == C_HELD) &&
        !ns_synced(ensure_ns(k, c->m.ns))) {
        c->next = k->waiting;
        k->waiting = c;
        return;
    }
    switch (c->type) {
    case C_START:
        do_start(k, c);
        break;
    case C_ADOPT:
        do_adopt(k, c);
        break;
    case C_STOP:
        do_stop(k, c);
        break;
    case C_FORGET:
        do_forget(k, c);
        break;
    case C_HELD:
        do_held(k, c);
        break;
    }
    answer(k, c, 0);
    cmd_free(c);
}

static void run_waiting(struct kube *k)
{
    struct kcmd *c = k->waiting;
    k->waiting = NULL;
    while (c) {
        struct kcmd *next = c->next;
        run_cmd(k, c);
        c = next;
    }
}

/* ---- the loop ------------------------------------------------------------------------ */

static void node_upsert(void *ctx, const json_t *node)
{
    struct kube *k = ctx;
    kube_nodes_upsert(k->nodes, node);
    k->nodes_dirty = true;
}

static void node_remove(void *ctx, const json_t *node)
{
    struct kube *k = ctx;
    kube_nodes_remove(k->nodes, node);
    k->nodes_dirty = true;
}

static void node_synced(void *ctx)
{
    struct kube *k = ctx;
    k->nodes_dirty = true;
}

static void strv_free(char **v)
{
    for (char **p = v; p && *p; p++)
        free(*p);
    free(v);
}

/* Publishes the GET /v1/nodes document: nodes with the ranks placed on each. */
static void publish_nodes(struct kube *k)
{
    size_t n = 0, cap = 0;
    struct kube_placement *pl = NULL;
    for (struct kmap_iter it = kmap_first(&k->pods); it.e; kmap_next(&k->pods, &it)) {
        struct kpod *p = it.e->value;
        if (!p->job || p->gone || !p->node[0] || p->slot < 0 || p->retired)
            continue;
        for (int r = 0; r < p->job->m.ppn; r++) {
            if (n == cap) {
                cap = cap ? cap * 2 : 64;
                pl = xrealloc(pl, cap * sizeof(*pl));
            }
            pl[n++] = (struct kube_placement){ p->node, p->job->m.id, p->job->m.name,
                                               p->slot * p->job->m.ppn + r };
        }
    }
    char **marked = k->opts.marked_nodes ? k->opts.marked_nodes(k->opts.ctx) : NULL;
    json_t *doc = kube_nodes_json(k->nodes, pl, n, (const char *const *)marked);
    strv_free(marked);
    free(pl);
    pthread_mutex_lock(&k->lock);
    json_t *old = k->nodes_doc;
    k->nodes_doc = kube_watch_synced(k->nodes_watch) ? doc : NULL;
    snprintf(k->nodes_err, sizeof(k->nodes_err), "%s", kube_watch_error(k->nodes_watch));
    pthread_mutex_unlock(&k->lock);
    json_decref(old);
    if (!k->nodes_doc)
        json_decref(doc);
    k->nodes_dirty = false;
}

/* Jobs waiting suspended whose trainyard job was cancelled meanwhile: their objects go. */
static void check_held(struct kube *k)
{
    if (!k->opts.job_state)
        return;
    for (struct kmap_iter it = kmap_first(&k->jobs); it.e;) {
        struct kjob *j = it.e->value;
        kmap_next(&k->jobs, &it);
        enum job_state st;
        if (j->reported != JOB_QUEUED || j->phase == KJ_GONE)
            continue;
        int rc = k->opts.job_state(k->opts.ctx, j->m.pk, &st);
        if (rc == 0 && !jobstate_terminal(st))
            continue;
        log_info("kube: job %s ended while its %s waited suspended: deleting it", j->m.id,
                 j->m.kind);
        kube_obj_delete_detached(k, j->m.kind, j->m.ns, j->m.obj, j->m.token);
        kube_held_set(k, j->m.id, false);
        kjob_free(k, j);
    }
}

static void watch_totals(struct kube *k)
{
    struct kube_watch_stats sum = { 0 }, one;
    for (struct kmap_iter it = kmap_first(&k->namespaces); it.e; kmap_next(&k->namespaces, &it)) {
        struct kns *n = it.e->value;
        struct kube_watch *ws[] = { n->pytorchjobs, n->trainjobs, n->pods, n->jobset_pods,
                                    n->events };
        for (size_t i = 0; i < 5; i++) {
            if (!ws[i])
                continue;
            kube_watch_stats(ws[i], &one);
            sum.lists += one.lists;
            sum.events += one.events;
            sum.restarts_closed += one.restarts_closed;
            sum.restarts_expired += one.restarts_expired;
            sum.restarts_error += one.restarts_error;
        }
    }
    kube_watch_stats(k->nodes_watch, &one);
    atomic_store(&k->watch_lists, sum.lists + one.lists);
    atomic_store(&k->watch_events, sum.events + one.events);
    atomic_store(&k->watch_closed, sum.restarts_closed + one.restarts_closed);
    atomic_store(&k->watch_expired, sum.restarts_expired + one.restarts_expired);
    atomic_store(&k->watch_errors, sum.restarts_error + one.restarts_error);
}

static void tick(struct kube *k, int64_t now)
{
    kube_watch_tick(k->nodes_watch, now);
    for (struct kmap_iter it = kmap_first(&k->namespaces); it.e; kmap_next(&k->namespaces, &it)) {
        struct kns *n = it.e->value;
        struct kube_watch *ws[] = { n->pytorchjobs, n->trainjobs, n->pods, n->jobset_pods,
                                    n->events };
        for (size_t i = 0; i < 5; i++)
            if (ws[i])
                kube_watch_tick(ws[i], now);
        if (ns_synced(n))
            ensure_events(k, n);
    }
    struct kns *def = kmap_get(&k->namespaces, k->cfg.namespace);
    if (def && ns_synced(def) && !k->synced) {
        pthread_mutex_lock(&k->lock);
        k->synced = true;
        pthread_cond_broadcast(&k->cond);
        pthread_mutex_unlock(&k->lock);
    }
    for (struct kmap_iter it = kmap_first(&k->jobs); it.e; kmap_next(&k->jobs, &it))
        kube_obj_tick(k, it.e->value, now);
    pods_tick(k, now);
    if (k->waiting)
        run_waiting(k);
    if (now - k->held_checked > HELD_CHECK) {
        check_held(k);
        k->held_checked = now;
    }
    if (k->nodes_dirty && now - k->nodes_published > PUBLISH_NS) {
        publish_nodes(k);
        k->nodes_published = now;
    }
    watch_totals(k);
}

/* Which form of pod settings the installed Trainer takes, from its OpenAPI document. */
static void on_trainer_openapi(void *ctx, long status, const struct buf *body, struct err *err)
{
    struct kube *k = ctx;
    (void)status;
    if (err_is_set(err) || !body->len)
        return;
    const char *text = buf_cstr(body);
    enum kube_trainer_api api = TRAINER_RUNTIME_PATCHES;
    if (strstr(text, "runtimePatches"))
        api = TRAINER_RUNTIME_PATCHES;
    else if (strstr(text, "podTemplateOverrides"))
        api = TRAINER_TEMPLATE_OVERRIDES;
    else if (strstr(text, "podSpecOverrides"))
        api = TRAINER_SPEC_OVERRIDES;
    else
        return;
    pthread_mutex_lock(&k->lock);
    k->trainer_api = api;
    pthread_mutex_unlock(&k->lock);
}

static struct kcmd *take_cmds(struct kube *k, bool *stopping)
{
    pthread_mutex_lock(&k->lock);
    struct kcmd *c = k->cmds;
    k->cmds = k->cmds_tail = NULL;
    *stopping = k->stopping;
    pthread_mutex_unlock(&k->lock);
    int64_t now = clock_mono_ns(), lag = 0;
    for (struct kcmd *p = c; p; p = p->next)
        if (now - p->queued_at > lag)
            lag = now - p->queued_at;
    if (c)
        atomic_store(&k->cmd_lag_ns, lag);
    return c;
}

static void loop_free(struct kube *k)
{
    for (struct kmap_iter it = kmap_first(&k->jobs); it.e; it = kmap_first(&k->jobs))
        kjob_free(k, it.e->value);
    for (struct kmap_iter it = kmap_first(&k->pods); it.e; kmap_next(&k->pods, &it))
        pod_free(it.e->value, false);
    for (struct kmap_iter it = kmap_first(&k->objs); it.e; kmap_next(&k->objs, &it)) {
        struct kobj *o = it.e->value;
        json_decref(o->conditions);
        free(o);
    }
    for (struct kmap_iter it = kmap_first(&k->namespaces); it.e; kmap_next(&k->namespaces, &it))
        ns_free(it.e->value);
    while (k->waiting) {
        struct kcmd *c = k->waiting;
        k->waiting = c->next;
        answer(k, c, 0);
        cmd_free(c);
    }
    kube_watch_free(k->nodes_watch);
    kube_nodes_free(k->nodes);
    kmap_release(&k->jobs);
    kmap_release(&k->jobs_by_id);
    kmap_release(&k->pods);
    kmap_release(&k->objs);
    kmap_release(&k->namespaces);
    free(k->evjobs);
}

void *kube_loop(void *arg)
{
    struct kube *k = arg;
    kmap_init(&k->jobs);
    kmap_init(&k->jobs_by_id);
    kmap_init(&k->pods);
    kmap_init(&k->objs);
    kmap_init(&k->namespaces);
    k->nodes = kube_nodes_new();
    struct kube_watch_ops nodes = { k, node_upsert, node_remove, node_synced };
    k->nodes_watch = kube_watch_new(k->client, "/api/v1/nodes", NULL, &nodes);
    ensure_ns(k, k->cfg.namespace);
    struct kube_request r = { .method = "GET",
                              .path = "/openapi/v3/apis/trainer.kubeflow.org/v1alpha1" };
    kube_call_start(k->client, &r, NULL, on_trainer_openapi, k);
    for (;;) {
        bool stopping;
        struct kcmd *c = take_cmds(k, &stopping);
        if (stopping) {
            while (c) {
                struct kcmd *next = c->next;
                answer(k, c, 0);
                cmd_free(c);
                c = next;
            }
            break;
        }
        while (c) {
            struct kcmd *next = c->next;
            run_cmd(k, c);
            c = next;
        }
        int64_t now = clock_mono_ns();
        if (now - k->last_tick >= TICK_NS) {
            tick(k, now);
            k->last_tick = now;
        }
        flush_events(k);
        kube_client_run(k->client, 100);
    }
    loop_free(k);
    return NULL;
}
