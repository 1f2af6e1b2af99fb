/*
 * objects: creating, adopting and deleting a job's objects (loop thread).
 *
 * Creation is a short sequence, each step retried with backoff on 5xx, 429 and network errors
 * and ended by any other error (which becomes the job's failure with the Status reason):
 *   1. the worker-token Secret (POST; when it exists: PATCH its token)
 *   2. the PyTorchJob/TrainJob (POST; AlreadyExists: GET it and adopt it if it carries this
 *      job's trainyard.io/job-id label, else fail: the name belongs to someone else)
 *   3. the Secret's ownerReference to the job object, so that Kubernetes deletes it with the job
 * A daemon killed anywhere in between finds the objects by name when it starts again.
 */
#include "core/clock.h"
#include "core/jsonx.h"
#include "core/log.h"
#include "core/xalloc.h"
#include "server/kube/internal.h"

enum step { S_SECRET, S_SECRET_PATCH, S_OBJECT, S_GET, S_OWNER, S_DONE };

#define BACKOFF_MIN (500 * NS_PER_MS)
#define BACKOFF_MAX (30 * NS_PER_SEC)

static void run_step(struct kube *k, struct kjob *j);

static bool retryable(long status, const struct err *err)
{
    return status == 0 || status == 429 || status >= 500 || err->code == ERR_TIMEOUT;
}

static void object_path(const struct kjob *j, const char *kind, bool item, char *out, size_t n)
{
    char base[300];
    kube_render_path(kind, j->m.ns, base, sizeof(base));
    if (!item) {
        snprintf(out, n, "%s", base);
    } else if (!strcmp(kind, "Secret")) {
        char name[300];
        kube_render_secret_name(j->m.obj, name, sizeof(name));
        snprintf(out, n, "%s/%s", base, name);
    } else {
        snprintf(out, n, "%s/%s", base, j->m.obj);
    }
}

/* The object exists: its creation latency and the timeline entry (before the token Secret's
 * owner reference, which only matters to the garbage collector). */
static void created(struct kube *k, struct kjob *j, bool adopted)
{
    if (j->created_reported)
        return;
    j->created_reported = true;
    int64_t took = clock_mono_ns() - j->start_mono;
    atomic_fetch_add(&k->create_ns_total, (unsigned long long)(took > 0 ? took : 0));
    atomic_fetch_add(&k->create_count, 1);
    atomic_fetch_add(adopted ? &k->adopted_existing : &k->created, 1);
    char msg[400];
    snprintf(msg, sizeof(msg), "%s %s/%s %s", j->m.kind, j->m.ns, j->m.obj,
             adopted ? "already existed (created before a daemon restart): adopted" : "created");
    kube_report_event(k, j, "kubernetes", adopted ? "Adopted" : "Created", msg);
}

static void live(struct kube *k, struct kjob *j, bool adopted)
{
    created(k, j, adopted);
    j->phase = KJ_LIVE;
    j->step = S_DONE;
    json_decref(j->object);
    json_decref(j->secret);
    j->object = j->secret = NULL;
    kube_status_object(k, j); /* the watch may have seen it first */
}

static void give_up(struct kube *k, struct kjob *j, const struct err *err)
{
    atomic_fetch_add(&k->create_errors, 1);
    j->phase = KJ_GONE;
    const char *reason = err->reason[0] ? err->reason : "StartFailed";
    log_warn("kube: creating %s %s/%s for job %s: %s", j->m.kind, j->m.ns, j->m.obj, j->m.id,
             err->msg);
    kube_report_job(k, j, JOB_FAILED, reason, err->msg);
    kube_status_stopped(k, j, "the job's object could not be created");
}

static void next(struct kube *k, struct kjob *j, int step)
{
    j->step = step;
    j->backoff = 0;
    if (step == S_DONE)
        live(k, j, j->adopted);
    else
        run_step(k, j);
}

/* Runs step again after a backoff (doubling from BACKOFF_MIN to BACKOFF_MAX), saying why on
 * the job's timeline. */
static void retry_later(struct kube *k, struct kjob *j, int step, const char *reason,
                        const char *message)
{
    j->step = step;
    j->backoff = j->backoff ? j->backoff * 2 : BACKOFF_MIN;
    if (j->backoff > BACKOFF_MAX)
        j->backoff = BACKOFF_MAX;
    j->next_try = clock_mono_ns() + j->backoff;
    if (j->backoff == BACKOFF_MIN) /* once on the timeline, not once per try */
        kube_report_event(k, j, "kubernetes_warning", reason, message);
}

/* The object exists already: ours when it carries our job id. */
static void on_get(struct kube *k, struct kjob *j, const struct buf *body, struct err *err)
{
    json_t *o = json_loadb(buf_cstr(body), body->len, 0, NULL);
    const json_t *meta = json_object_get(o, "metadata");
    const char *id = jsonx_str(json_object_get(meta, "labels"), KUBE_LABEL_JOB_ID);
    if (id && !strcmp(id, j->m.id) && jsonx_str(meta, "deletionTimestamp")) {
        /* An earlier attempt's object (suspended, requeued) still being deleted while its pods
         * end: adopting it would follow a job about to vanish. Create ours once it is gone. */
        json_decref(o);
        retry_later(k, j, S_OBJECT, "Waiting",
                    "the previous attempt's object is still being deleted; creating it again "
                    "once it is gone");
        return;
    }
    if (id && !strcmp(id, j->m.id)) {
        snprintf(j->uid, sizeof(j->uid), "%s",
                 jsonx_str(meta, "uid") ? jsonx_str(meta, "uid") : "");
        json_decref(o);
        j->adopted = true;
        created(k, j, true);
        next(k, j, j->m.token ? S_OWNER : S_DONE);
        return;
    }
    json_decref(o);
    err_set(err, ERR_CONFLICT, "a %s named %s already exists in namespace %s and belongs to %s",
            j->m.kind, j->m.obj, j->m.ns, id ? "another trainyard job" : "someone else");
    snprintf(err->reason, sizeof(err->reason), "AlreadyExists");
    give_up(k, j, err);
}

static void on_step(void *ctx, long status, const struct buf *body, struct err *err)
{
    struct kjob *j = ctx;
    struct kube *k = j->k;
    j->call = NULL;
    bool ok = !err_is_set(err);
    if (!ok && j->step == S_OWNER) { /* the Secret is deleted with the job anyway */
        log_warn("kube: owner reference of %s's token: %s", j->m.obj, err->msg);
        ok = true;
    }
    if (!ok && status == 409 && j->step == S_SECRET) {
        next(k, j, S_SECRET_PATCH);
        return;
    }
    if (!ok && status == 409 && j->step == S_OBJECT) { /* backoff kept: see retry_later */
        j->step = S_GET;
        run_step(k, j);
        return;
    }
    if (!ok && retryable(status, err)) {
        j->backoff = j->backoff ? j->backoff * 2 : BACKOFF_MIN;
        if (j->backoff > BACKOFF_MAX || err->retry_after * NS_PER_SEC > j->backoff)
            j->backoff = err->retry_after ? err->retry_after * NS_PER_SEC : BACKOFF_MAX;
        j->next_try = clock_mono_ns() + j->backoff;
        kube_report_event(k, j, "kubernetes_warning", err->reason[0] ? err->reason : "Retrying",
                          err->msg);
        return;
    }
    if (!ok) {
        give_up(k, j, err);
        return;
    }
    if (j->step == S_GET) {
        on_get(k, j, body, err);
        return;
    }
    if (j->step == S_OBJECT) {
        json_t *o = json_loadb(buf_cstr(body), body->len, 0, NULL);
        const char *uid = jsonx_str(json_object_get(o, "metadata"), "uid");
        snprintf(j->uid, sizeof(j->uid), "%s", uid ? uid : "");
        json_decref(o);
        created(k, j, false);
    }
    int after[] = { [S_SECRET] = S_OBJECT,
                    [S_SECRET_PATCH] = S_OBJECT,
                    [S_OBJECT] = j->m.token ? S_OWNER : S_DONE,
                    [S_GET] = S_DONE,
                    [S_OWNER] = S_DONE };
    next(k, j, after[j->step]);
}

static char *owner_patch(const struct kjob *j)
{
    const char *api =
        !strcmp(j->m.kind, "TrainJob") ? "trainer.kubeflow.org/v1alpha1" : "kubeflow.org/v1";
    json_t *p =
        json_pack("{s:{s:[{s:s,s:s,s:s,s:s,s:b}]}}", "metadata", "ownerReferences", "apiVersion",
                  api, "kind", j->m.kind, "name", j->m.obj, "uid", j->uid, "blockOwnerDeletion", 0);
    char *text = jsonx_dumps(p);
    json_decref(p);
    return text;
}

static void run_step(struct kube *k, struct kjob *j)
{
    char path[600];
    char *body = NULL;
    struct kube_request r = { .method = "POST", .path = path };
    switch (j->step) {
    case S_SECRET:
        object_path(j, "Secret", false, path, sizeof(path));
        body = jsonx_dumps(j->secret);
        break;
    case S_SECRET_PATCH:
        object_path(j, "Secret", true, path, sizeof(path));
        {
            json_t *patch = json_pack("{s:O}", "data", json_object_get(j->secret, "data"));
            body = jsonx_dumps(patch);
            json_decref(patch);
        }
        r.method = "PATCH";
        r.content_type = "application/merge-patch+json";
        break;
    case S_OBJECT:
        object_path(j, j->m.kind, false, path, sizeof(path));
        body = jsonx_dumps(j->object);
        break;
    case S_GET:
        object_path(j, j->m.kind, true, path, sizeof(path));
        r.method = "GET";
        break;
    case S_OWNER:
        object_path(j, "Secret", true, path, sizeof(path));
        body = owner_patch(j);
        r.method = "PATCH";
        r.content_type = "application/merge-patch+json";
        break;
    default:
        return;
    }
    r.body = body;
    j->next_try = 0;
    j->call = kube_call_start(k->client, &r, NULL, on_step, j);
    free(body);
}

void kube_obj_create(struct kube *k, struct kjob *j)
{
    j->phase = KJ_CREATING;
    j->backoff = 0;
    j->step = j->m.token && j->secret ? S_SECRET : S_OBJECT;
    run_step(k, j);
}

void kube_obj_tick(struct kube *k, struct kjob *j, int64_t now)
{
    if (j->phase == KJ_CREATING && !j->call && j->next_try > 0 && now >= j->next_try)
        run_step(k, j);
}

static void on_deleted(void *ctx, long status, const struct buf *body, struct err *err)
{
    struct kjob *j = ctx;
    struct kube *k = j->k;
    (void)body;
    j->call = NULL;
    if (status == 404 || (!err_is_set(err) && j->phase != KJ_DELETING))
        kube_status_object_gone(k, j);
    else if (err_is_set(err))
        log_warn("kube: deleting %s/%s: %s (retried on the next stop)", j->m.ns, j->m.obj,
                 err->msg);
    /* otherwise the watch reports the object gone once its pods are */
}

void kube_obj_delete(struct kube *k, struct kjob *j, const char *propagation)
{
    kube_call_cancel(k->client, j->call);
    j->call = NULL;
    j->phase = KJ_DELETING;
    char path[600], body[160];
    snprintf(body, sizeof(body),
             "{\"kind\":\"DeleteOptions\",\"apiVersion\":\"v1\",\"propagationPolicy\":\"%s\"}",
             propagation);
    object_path(j, j->m.kind, true, path, sizeof(path));
    struct kube_request r = { .method = "DELETE", .path = path, .body = body };
    j->call = kube_call_start(k->client, &r, NULL, on_deleted, j);
    if (j->m.token) { /* also covered by its owner reference, unless that step never ran */
        object_path(j, "Secret", true, path, sizeof(path));
        struct kube_request s = { .method = "DELETE", .path = path };
        kube_call_start(k->client, &s, NULL, NULL, NULL);
    }
}

static void on_pods(void *ctx, long status, const struct buf *body, struct err *err)
{
    struct kjob *j = ctx;
    struct kube *k = j->k;
    (void)status;
    j->list_call = NULL;
    json_t *doc = err_is_set(err) ? NULL : json_loadb(buf_cstr(body), body->len, 0, NULL);
    size_t i;
    json_t *pod;
    json_array_foreach(json_object_get(doc, "items"), i, pod) kube_pod_upsert(k, pod);
    json_decref(doc);
    j->fail_listed = true;
    kube_status_object(k, j);
}

void kube_obj_list_pods(struct kube *k, struct kjob *j)
{
    if (j->list_call)
        return;
    char path[700];
    bool tj = !strcmp(j->m.kind, "TrainJob");
    snprintf(path, sizeof(path), "/api/v1/namespaces/%s/pods?labelSelector=%s%%3D%s", j->m.ns,
             tj ? "jobset.sigs.k8s.io%2Fjobset-name" : "training.kubeflow.org%2Fjob-name",
             j->m.obj);
    struct kube_request r = { .method = "GET", .path = path };
    j->list_call = kube_call_start(k->client, &r, NULL, on_pods, j);
}

static bool pod_ended(const struct kpod *p)
{
    const char *phase = jsonx_str(json_object_get(p->last, "status"), "phase");
    return phase && (!strcmp(phase, "Succeeded") || !strcmp(phase, "Failed"));
}

static void on_reaped(void *ctx, long status, const struct buf *body, struct err *err)
{
    struct kube *k = ctx;
    (void)body;
    if (err_is_set(err) && status != 404 && status != 409) /* 409: a newer pod of that name */
        log_warn("kube: deleting a pod of a failed job: %s", err->msg);
    else if (!err_is_set(err))
        atomic_fetch_add(&k->pods_reaped, 1);
}

void kube_obj_reap_pod(struct kube *k, struct kpod *p)
{
    if (p->gone || p->deleting || p->reaped || pod_ended(p))
        return;
    p->reaped = true;
    char path[700], body[200];
    snprintf(path, sizeof(path), "/api/v1/namespaces/%s/pods/%s", p->ns, p->name);
    snprintf(body, sizeof(body),
             "{\"kind\":\"DeleteOptions\",\"apiVersion\":\"v1\",\"propagationPolicy\":"
             "\"Background\",\"preconditions\":{\"uid\":\"%s\"}}",
             p->uid);
    struct kube_request r = { .method = "DELETE", .path = path, .body = body };
    kube_call_start(k->client, &r, NULL, on_reaped, k);
}

void kube_obj_reap(struct kube *k, struct kjob *j)
{
    for (struct kmap_iter it = kmap_first(&k->pods); it.e; kmap_next(&k->pods, &it)) {
        struct kpod *p = it.e->value;
        if (p->job == j)
            kube_obj_reap_pod(k, p);
    }
}

void kube_obj_delete_detached(struct kube *k, const char *kind, const char *ns, const char *obj,
                              bool token)
{
    char path[700], base[300];
    kube_render_path(kind, ns, base, sizeof(base));
    snprintf(path, sizeof(path), "%s/%s", base, obj);
    struct kube_request r = { .method = "DELETE",
                              .path = path,
                              .body = "{\"kind\":\"DeleteOptions\",\"apiVersion\":\"v1\","
                                      "\"propagationPolicy\":\"Background\"}" };
    kube_call_start(k->client, &r, NULL, NULL, NULL);
    if (token) {
        kube_render_path("Secret", ns, base, sizeof(base));
        snprintf(path, sizeof(path), "%s/%s-token", base, obj);
        struct kube_request s = { .method = "DELETE", .path = path };
        kube_call_start(k->client, &s, NULL, NULL, NULL);
    }
}
