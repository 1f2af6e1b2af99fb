/*
 * loop: the Kubernetes executor's thread. It owns the caches (jobs, objects, pods (pods.c),
 * nodes), the watches per namespace, the log followers, and every API call; commands from the
 * controller arrive through a queue (executor.c) and are carried out here.
 */
#include "core/clock.h"
#include "core/jsonx.h"
#include "core/log.h"
#include "core/parse.h"
#include "core/xalloc.h"
#include "server/kube/internal.h"

#define TICK_NS    (100 * NS_PER_MS)
#define PUBLISH_NS (500 * NS_PER_MS)
#define HELD_CHECK (2 * NS_PER_SEC)

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

struct kns *kube_ns_ensure(struct kube *k, const char *ns)
{
    struct kns *n = kmap_get(&k->namespaces, ns);
    if (n)
        return n;
    n = XNEW(struct kns);
    n->name = xstrdup(ns);
    kmap_put(&k->namespaces, ns, n);
    struct kube_watch_ops objs = { k, obj_upsert, obj_remove, NULL };
    struct kube_watch_ops pods = { k, kube_pod_on_upsert, kube_pod_on_remove, NULL };
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
    struct kube_watch_ops pods = { k, kube_pod_on_upsert, kube_pod_on_remove, NULL };
    char path[400];
    snprintf(path, sizeof(path), "/api/v1/namespaces/%s/pods", n->name);
    n->jobset_pods = kube_watch_new(k->client, path, KUBE_LABEL_JOBSET, &pods);
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

bool kube_ns_synced(const struct kns *n)
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
struct kjob *kube_job_register(struct kube *k, const struct kjob_meta *m, int attempt,
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
    struct kns *n = kube_ns_ensure(k, m->ns);
    if (!strcmp(m->kind, "TrainJob"))
        ensure_jobset_pods(k, n);
    kube_pods_attach(k, j);
    atomic_store(&k->jobs_tracked, k->jobs.n);
    return j;
}

void kube_job_free(struct kube *k, struct kjob *j)
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
    json_t *doc = kube_nodes_json(k->nodes, pl, n);
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
        kube_job_free(k, j);
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
        if (kube_ns_synced(n))
            ensure_events(k, n);
    }
    struct kns *def = kmap_get(&k->namespaces, k->cfg.namespace);
    if (def && kube_ns_synced(def) && !k->synced) {
        pthread_mutex_lock(&k->lock);
        k->synced = true;
        pthread_cond_broadcast(&k->cond);
        pthread_mutex_unlock(&k->lock);
    }
    for (struct kmap_iter it = kmap_first(&k->jobs); it.e; kmap_next(&k->jobs, &it))
        kube_obj_tick(k, it.e->value, now);
    kube_pods_tick(k, now);
    if (k->waiting)
        kube_cmds_resume(k);
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
        kube_job_free(k, it.e->value);
    for (struct kmap_iter it = kmap_first(&k->pods); it.e; kmap_next(&k->pods, &it))
        kube_pod_free(it.e->value, false);
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
        kube_cmd_drop(k, c);
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
    pthread_setname_np(pthread_self(), "ty-kube");
    struct kube *k = arg;
    kmap_init(&k->jobs);
    kmap_init(&k->jobs_by_id);
    kmap_init(&k->pods);
    kmap_init(&k->objs);
    kmap_init(&k->namespaces);
    k->nodes = kube_nodes_new();
    struct kube_watch_ops nodes = { k, node_upsert, node_remove, node_synced };
    k->nodes_watch = kube_watch_new(k->client, "/api/v1/nodes", NULL, &nodes);
    kube_ns_ensure(k, k->cfg.namespace);
    struct kube_request r = { .method = "GET",
                              .path = "/openapi/v3/apis/trainer.kubeflow.org/v1alpha1" };
    kube_call_start(k->client, &r, NULL, on_trainer_openapi, k);
    for (;;) {
        bool stopping;
        struct kcmd *c = take_cmds(k, &stopping);
        if (stopping) {
            while (c) {
                struct kcmd *next = c->next;
                kube_cmd_drop(k, c);
                c = next;
            }
            break;
        }
        while (c) {
            struct kcmd *next = c->next;
            kube_cmd_run(k, c);
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
