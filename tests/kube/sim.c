/*
 * sim: ticks every TICK_MS of real time. The controllers run first, but only for the jobs that
 * changed (or whose pods changed) since their last run, read from the store's history the way
 * an informer's work queue is fed, plus a full pass once a second for their clocks; then the
 * kubelets advance. Streams are woken only when the store or a log changed.
 * Ownership: struct sim owns the kubelet simulation; the thread only runs between sim_start()
 * and sim_stop().
 */
#include "tests/kube/sim.h"

#include <pthread.h>

#include "core/clock.h"
#include "core/xalloc.h"
#include "tests/kube/gc.h"
#include "tests/kube/jobs.h"
#include "tests/kube/kubelet.h"
#include "tests/kube/podlog.h"
#include "tests/kube/store.h"
#include "tests/kube/world.h"

#define TICK_MS       20
#define CREATE_BUDGET 500 /* pods created per tick at most */

struct sim {
    struct kubelet *kubelet;
    pthread_t thread;
    bool running;
    int64_t last_mono;
    int64_t reconciled_rv;   /* the store's resourceVersion after the controllers last ran */
    int64_t reconciled_mono; /* and when */
};

struct sim *sim_new(void)
{
    struct sim *s = XNEW(struct sim);
    s->kubelet = kubelet_new();
    return s;
}

void sim_free(struct sim *s)
{
    if (!s)
        return;
    kubelet_free(s->kubelet);
    free(s);
}

struct kubelet *sim_kubelet(struct world *w)
{
    return w->sim->kubelet;
}

static void seed_runtime(struct world *w)
{
    json_t *rt = json_pack(
        "{s:{s:s, s:{s:s}}, s:{s:{s:i, s:{}}, s:{s:{s:[{s:s, s:{s:{s:{s:s}}, s:{s:{s:{s:[{s:s, "
        "s:s}]}}}}}]}}}}",
        "metadata", "name", "torch-distributed", "labels", "trainer.kubeflow.org/framework",
        "torch", "spec", "mlPolicy", "numNodes", 1, "torch", "template", "spec", "replicatedJobs",
        "name", "node", "template", "metadata", "labels",
        "trainer.kubeflow.org/trainjob-ancestor-step", "trainer", "spec", "template", "spec",
        "containers", "name", "node", "image", "pytorch/pytorch:2.7.1-cuda12.8-cudnn9-runtime");
    store_create(w->store,
                 resource_lookup("trainer.kubeflow.org", "v1alpha1", "clustertrainingruntimes"), rt,
                 NULL);
}

void sim_seed(struct world *w, const struct fleet_options *fleet)
{
    if (!w->sim)
        w->sim = sim_new();
    const char *namespaces[] = { "default", "kube-system", "kube-public", "kube-node-lease",
                                 "kubeflow" };
    for (size_t i = 0; i < sizeof(namespaces) / sizeof(namespaces[0]); i++)
        store_create(w->store, resource_lookup("", "v1", "namespaces"),
                     json_pack("{s:{s:s, s:{s:s}}, s:{s:s}}", "metadata", "name", namespaces[i],
                               "labels", "kubernetes.io/metadata.name", namespaces[i], "status",
                               "phase", "Active"),
                     NULL);
    nodes_seed(w, fleet);
    seed_runtime(w);
}

/* The jobs to reconcile ("plural/ns/name" -> true): those that changed, and those whose pods
 * changed, since rv, read from the store's history like an informer's work queue. NULL when
 * the history no longer reaches back (then every job is reconciled). New reference. */
static json_t *changed_jobs(struct world *w, int64_t rv)
{
    if (rv < store_oldest_rv(w->store))
        return NULL;
    json_t *dirty = json_object();
    const struct store_event *ev;
    char key[800];
    for (; (ev = store_event_after(w->store, rv)); rv = ev->rv) {
        const json_t *m = json_object_get(ev->obj, "metadata");
        const char *ns = kstr(m, "namespace");
        if (ev->res->table == TABLE_JOB) {
            snprintf(key, sizeof(key), "%s/%s/%s", ev->res->plural, ns, kstr(m, "name"));
            json_object_set_new(dirty, key, json_true());
        } else if (ev->res->table == TABLE_POD) {
            const json_t *l = json_object_get(m, "labels");
            const char *v1 = kstr(l, "training.kubeflow.org/job-name");
            const char *v2 = kstr(l, "jobset.sigs.k8s.io/jobset-name");
            snprintf(key, sizeof(key), "%s/%s/%s", v1[0] ? "pytorchjobs" : "trainjobs", ns,
                     v1[0] ? v1 : v2);
            if (v1[0] || v2[0])
                json_object_set_new(dirty, key, json_true());
        }
    }
    return dirty;
}

/* Runs fn on every job of plural in dirty (all of them when dirty is NULL). */
static void reconcile(struct world *w, const char *group, const char *version, const char *plural,
                      void (*fn)(struct world *, const json_t *, json_t **), const json_t *dirty)
{
    size_t n;
    json_t **jobs = store_list(w->store, resource_lookup(group, version, plural), NULL, &n);
    json_t *index = NULL;
    for (size_t i = 0; i < n; i++) {
        const json_t *m = json_object_get(jobs[i], "metadata");
        char key[800];
        snprintf(key, sizeof(key), "%s/%s/%s", plural, kstr(m, "namespace"), kstr(m, "name"));
        if (dirty && !json_object_get(dirty, key))
            continue;
        fn(w, jobs[i], &index);
    }
    json_decref(index);
    store_list_free(jobs, n);
}

void sim_tick(struct world *w)
{
    struct sim *s = w->sim;
    int64_t before = store_rv(w->store), lines = podlogs_seq(w->logs), now = clock_mono_ns();
    /* Controllers are level-triggered, but like real ones they only look at what changed, plus
     * everything once a second for their clocks (active deadline, TTL after finishing). */
    if (before != s->reconciled_rv || now - s->reconciled_mono >= NS_PER_SEC) {
        bool all = now - s->reconciled_mono >= NS_PER_SEC;
        json_t *dirty = all ? NULL : changed_jobs(w, s->reconciled_rv);
        w->create_budget = CREATE_BUDGET;
        reconcile(w, "kubeflow.org", "v1", "pytorchjobs", pytorchjob_reconcile, dirty);
        reconcile(w, "trainer.kubeflow.org", "v1alpha1", "trainjobs", trainjob_reconcile, dirty);
        json_decref(dirty);
        gc_tick(w);
        s->reconciled_rv = before; /* what we wrote ourselves is looked at next tick */
        if (all)
            s->reconciled_mono = now;
        if (w->create_budget <= 0) /* some jobs still lack pods: look at all of them next tick */
            s->reconciled_mono = 0;
    }
    kubelet_tick(w, s->kubelet);
    /* wake watches and log followers only when there is something new for them */
    if (store_rv(w->store) != before || podlogs_seq(w->logs) != lines)
        world_changed(w);
}

static void *loop(void *arg)
{
    struct world *w = arg;
    world_lock(w);
    w->sim->last_mono = clock_mono_ns();
    while (!w->stopping) {
        int64_t now = clock_mono_ns();
        w->sim_ns += (int64_t)((double)(now - w->sim->last_mono) * w->speed);
        w->sim->last_mono = now;
        sim_tick(w);
        world_unlock(w);
        clock_sleep_ms(TICK_MS);
        world_lock(w);
    }
    world_unlock(w);
    return NULL;
}

int sim_start(struct world *w, struct err *err)
{
    if (!w->sim)
        w->sim = sim_new();
    if (pthread_create(&w->sim->thread, NULL, loop, w) != 0)
        return err_set(err, ERR_INTERNAL, "cannot start the simulation thread");
    w->sim->running = true;
    return 0;
}

void sim_stop(struct world *w)
{
    if (!w->sim || !w->sim->running)
        return;
    world_lock(w);
    w->stopping = true;
    world_changed(w);
    world_unlock(w);
    pthread_join(w->sim->thread, NULL);
    w->sim->running = false;
}
