/*
 * pods: the Kubernetes executor's cache of the pods of trainyard's jobs, from the pod watches:
 * which job and rank slot each pod is (PyTorchJob replica type and index, TrainJob completion
 * index), its container's state handed to status.c, and its log follower (logs.c). Loop thread
 * only (see loop.c); a pod is freed once it is gone and its logs are read.
 */
#include "core/jsonx.h"
#include "core/parse.h"
#include "core/xalloc.h"
#include "server/kube/internal.h"

#define LABEL_PTJ "training.kubeflow.org/job-name"

static const char *label(const json_t *obj, const char *key)
{
    return jsonx_str(json_object_get(json_object_get(obj, "metadata"), "labels"), key);
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
        owner = label(pod, KUBE_LABEL_JOBSET);
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
    p->deleting = json_object_get(json_object_get(pod, "metadata"), "deletionTimestamp") != NULL;
    if (!p->job && (p->job = job_of_pod(k, p)))
        p->slot = pod_slot(p->job, p->labels);
    if (!p->job)
        return;
    kube_status_pod(k, p);
    if (p->job->reported == JOB_FAILED) /* made or still running after its job failed */
        kube_obj_reap_pod(k, p);
    follow(k, p);
    k->nodes_dirty = true;
}

void kube_pod_on_remove(void *ctx, const json_t *pod)
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

void kube_pod_on_upsert(void *ctx, const json_t *pod)
{
    kube_pod_upsert(ctx, pod);
}

void kube_pod_free(struct kpod *p, bool force)
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
void kube_pods_tick(struct kube *k, int64_t now)
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
            kube_pod_free(p, false);
        }
    }
    atomic_store(&k->streams_open, streams);
    atomic_store(&k->streams_waiting, waiting);
    atomic_store(&k->pods_tracked, k->pods.n);
}

void kube_pods_attach(struct kube *k, struct kjob *j)
{
    for (struct kmap_iter it = kmap_first(&k->pods); it.e; kmap_next(&k->pods, &it)) {
        struct kpod *p = it.e->value;
        if (p->job || p->gone || job_of_pod(k, p) != j)
            continue;
        p->job = j;
        p->slot = pod_slot(j, p->labels);
        kube_status_pod(k, p);
        if (j->reported == JOB_FAILED)
            kube_obj_reap_pod(k, p);
        follow(k, p);
    }
}
