/*
 * mirror: entries per object ("plural/ns/name") remember the server's last version and the
 * write in flight; a queue of objects to write, one of deletions, and Events aggregated by
 * (object uid, reason, message) as client-go's recorder does. Resource versions are compared
 * as numbers to drop a watch event older than a write's answer: opaque to clients in general,
 * but etcd revisions on this server, and the simulator is a test tool.
 * Lock: the world lock guards everything here but the watches (loop thread only).
 */
#include "tests/kube/sim/mirror.h"

#include <stdlib.h>

#include "core/clock.h"
#include "core/jsonx.h"
#include "core/log.h"
#include "core/xalloc.h"
#include "server/kube/kmap.h"
#include "server/kube/watch.h"
#include "tests/kube/sim/mpatch.h"
#include "tests/kube/store.h"
#include "tests/kube/world.h"

#define MAX_WATCHES  16
#define MAX_EVENTS   200000 /* aggregation records kept; then forgotten (a new Event is made) */
#define MAX_INFLIGHT 128    /* requests at once; the rest wait here, not in libcurl's queue */
#define MAX_BACKLOG  5000   /* Events waiting; more are dropped, as client-go's broadcaster does */
#define RETRY_NS     (1000 * 1000 * 1000LL)
#define MAX_VERSIONS 6 /* of a job waiting to be written; more: the middle ones are folded */

struct entry {
    struct mirror *m;
    const struct resource *res;
    char ns[254], name[254];
    json_t *remote;    /* the server's last version; NULL: not there (yet) */
    int64_t remote_rv; /* only grows, also across a deletion */
    json_t *sent;      /* the last patch sent: not sent again if the server dropped it */
    bool dirty, queued, inflight, deleting;
    int64_t retry_at;  /* a write the server could not take now is sent again after this */
    char gone_uid[40]; /* deleted by us for good: later versions of it are not taken in */
    char *final_path, *final_body; /* the kubelet's last DELETE, sent once nothing is in flight */
    /* Causality: a pod's write carries a sequence number while it waits or is out (listed in
     * the mirror's pending pods); a job's write waits for every pod write queued before it. */
    uint64_t seq, after;
    struct entry *pprev, *pnext;
    bool pending;
    /* A job's versions as the operator wrote them, oldest first, each sent in turn (after the
     * pod writes it was decided on): a status that was Restarting for a moment must reach the
     * server as Restarting, not be folded into the Running that followed. */
    json_t *ver[MAX_VERSIONS];
    uint64_t ver_after[MAX_VERSIONS];
    int nver;
};

struct evrec {
    struct mirror *m;
    char *key;
    char ns[254], name[320];
    json_t *ev;     /* the Event as first made */
    int count;      /* occurrences so far */
    int sent_count; /* what the server has */
    bool created, inflight, queued;
};

struct delreq {
    struct entry *e;
    char *path, *body;
};

struct watched {
    struct mirror *m;
    const struct resource *res;
    struct kube_watch *watch;
};

struct mirror {
    struct world *w;
    struct kube_client *c;
    struct world_remote remote;
    struct watched watches[MAX_WATCHES];
    size_t nwatches;
    struct kmap entries; /* key -> struct entry */
    struct kmap events;  /* aggregation key -> struct evrec */
    struct entry **queue;
    size_t nqueue, capqueue;
    struct evrec **evqueue;
    size_t nevqueue, capevqueue;
    struct delreq *dels;
    size_t ndels, capdels;
    struct entry **retries; /* writes that met a timeout, 429 or 5xx */
    size_t nretries, capretries;
    struct entry *pods_head, *pods_tail; /* pod writes not done, oldest first */
    uint64_t pod_seq;
    size_t inflight;
    uint64_t requests, errors, conflicts, dropped_patches, retried, dropped_events;
};

static void send_entry(struct mirror *m, struct entry *e);
static void retry_later(struct mirror *m, struct entry *e);
static void send_event(struct mirror *m, struct evrec *r);

void mirror_path(const struct resource *res, const char *ns, const char *name, char *out,
                 size_t size)
{
    char base[200];
    if (!strcmp(res->api_version, "v1"))
        snprintf(base, sizeof(base), "/api/v1");
    else
        snprintf(base, sizeof(base), "/apis/%s", res->api_version);
    if (res->namespaced && ns && ns[0])
        snprintf(out, size, "%s/namespaces/%s/%s%s%s", base, ns, res->plural, name ? "/" : "",
                 name ? name : "");
    else
        snprintf(out, size, "%s/%s%s%s", base, res->plural, name ? "/" : "", name ? name : "");
}

static int64_t rv_of(const json_t *obj)
{
    const char *rv = kstr(json_object_get(obj, "metadata"), "resourceVersion");
    return rv[0] ? strtoll(rv, NULL, 10) : 0;
}

static const char *uid_of(const json_t *obj)
{
    return kstr(json_object_get(obj, "metadata"), "uid");
}

static struct entry *entry_for(struct mirror *m, const struct resource *res, const json_t *obj)
{
    const json_t *meta = json_object_get(obj, "metadata");
    const char *ns = res->namespaced ? kstr(meta, "namespace") : "";
    char key[700];
    snprintf(key, sizeof(key), "%s/%s/%s", res->plural, ns, kstr(meta, "name"));
    struct entry *e = kmap_get(&m->entries, key);
    if (!e) {
        e = XNEW(struct entry);
        e->m = m;
        e->res = res;
        snprintf(e->ns, sizeof(e->ns), "%s", ns);
        snprintf(e->name, sizeof(e->name), "%s", kstr(meta, "name"));
        kmap_put(&m->entries, key, e);
    }
    return e;
}

static bool is_pod(const struct entry *e)
{
    return e->res->table == TABLE_POD;
}

/* A pod write begins to wait: it goes to the end of the pending pods. */
static void pod_pending(struct mirror *m, struct entry *e)
{
    if (e->pending)
        return;
    e->pending = true;
    e->seq = ++m->pod_seq;
    e->pprev = m->pods_tail;
    e->pnext = NULL;
    if (m->pods_tail)
        m->pods_tail->pnext = e;
    else
        m->pods_head = e;
    m->pods_tail = e;
}

/* Nothing of the pod's is waiting or out any more. */
static void pod_settled(struct mirror *m, struct entry *e)
{
    if (!e->pending || e->queued || e->inflight || e->retry_at || e->final_path)
        return;
    e->pending = false;
    if (e->pprev)
        e->pprev->pnext = e->pnext;
    else
        m->pods_head = e->pnext;
    if (e->pnext)
        e->pnext->pprev = e->pprev;
    else
        m->pods_tail = e->pprev;
}

/* A job's status is written after the pod writes it was decided on: on a cluster the operator
 * only sees a pod fail once the kubelet's write is on the server, and whoever reads the job's
 * Failed then finds the failed pod there too. */
static bool may_send(const struct mirror *m, const struct entry *e)
{
    uint64_t after = e->nver ? e->ver_after[0] : e->after;
    return e->res->table != TABLE_JOB || !m->pods_head || m->pods_head->seq > after;
}

static void version_push(struct mirror *m, struct entry *e, const json_t *obj)
{
    if (e->nver == MAX_VERSIONS) { /* fold the second oldest into the ones after it */
        json_decref(e->ver[1]);
        memmove(e->ver + 1, e->ver + 2, (MAX_VERSIONS - 2) * sizeof(*e->ver));
        memmove(e->ver_after + 1, e->ver_after + 2, (MAX_VERSIONS - 2) * sizeof(*e->ver_after));
        e->nver--;
    }
    e->ver[e->nver] = json_incref((json_t *)obj); /* stored objects are never changed */
    e->ver_after[e->nver++] = m->pod_seq;
}

static void version_pop(struct entry *e)
{
    if (!e->nver)
        return;
    json_decref(e->ver[0]);
    memmove(e->ver, e->ver + 1, (size_t)(e->nver - 1) * sizeof(*e->ver));
    memmove(e->ver_after, e->ver_after + 1, (size_t)(e->nver - 1) * sizeof(*e->ver_after));
    e->nver--;
}

static void versions_clear(struct entry *e)
{
    while (e->nver)
        version_pop(e);
}

static void enqueue(struct mirror *m, struct entry *e)
{
    if (is_pod(e))
        pod_pending(m, e);
    else /* it may carry a decision made on the latest pod writes */
        e->after = m->pod_seq;
    if (e->queued)
        return;
    if (m->nqueue == m->capqueue) {
        m->capqueue = m->capqueue ? m->capqueue * 2 : 256;
        m->queue = xrealloc(m->queue, m->capqueue * sizeof(*m->queue));
    }
    m->queue[m->nqueue++] = e;
    e->queued = true;
    kube_client_wakeup(m->c);
}

/* ---- what the server says ------------------------------------------------------------ */

/* A newer version of the object from the server: the store gets it with our changes not yet
 * acknowledged on top. force: take the server's word whole (a create that met an existing
 * object, a write refused for good). */
static void take_remote(struct mirror *m, struct entry *e, const json_t *obj, bool force)
{
    int64_t rv = rv_of(obj);
    if (!force && rv && rv <= e->remote_rv)
        return; /* older than what a write's answer already told us */
    struct store *s = m->w->store;
    json_t *local = store_get(s, e->res, e->ns, e->name);
    bool based = local && e->remote && !strcmp(uid_of(local), uid_of(e->remote));
    json_t *mine = based && !force ? mpatch_diff(e->remote, local) : NULL;
    json_decref(e->remote);
    e->remote = json_deep_copy(obj);
    if (rv > e->remote_rv)
        e->remote_rv = rv;
    if (e->gone_uid[0] && !strcmp(e->gone_uid, uid_of(obj))) {
        json_decref(mine);
        return; /* we deleted it for good: it stays out of the store */
    }
    json_t *next = json_deep_copy(obj);
    if (mine)
        mpatch_apply(next, mine);
    /* Our own creation acknowledged: a status the server does not take on create (a Node's)
     * is ours to send next. */
    const json_t *lst = json_object_get(local, "status");
    if (local && !based && !force && json_object_size(lst) &&
        !json_object_size(json_object_get(next, "status")))
        json_object_set_new(next, "status", json_deep_copy(lst));
    json_t *del = kpath(local, "metadata.deletionTimestamp");
    if (e->deleting && del && !kpath(next, "metadata.deletionTimestamp"))
        json_object_set(kobj(next, "metadata"), "deletionTimestamp", del);
    bool pending = !json_equal(next, obj);
    json_decref(mine);
    if (local && json_equal(local, next))
        json_decref(next);
    else
        store_apply(s, e->res, next);
    if (pending && !force) { /* our changes still differ from the server's: send them */
        e->dirty = true;
        if (!e->inflight)
            enqueue(m, e);
    }
}

static void taken_away(struct mirror *m, struct entry *e, const json_t *obj)
{
    int64_t rv = rv_of(obj);
    if (rv > e->remote_rv)
        e->remote_rv = rv;
    if (e->remote && strcmp(uid_of(e->remote), uid_of(obj)))
        return; /* the DELETED of an older incarnation */
    json_decref(e->remote);
    e->remote = NULL;
    e->deleting = false;
    json_t *local = store_get(m->w->store, e->res, e->ns, e->name);
    if (local && !strcmp(uid_of(local), uid_of(obj)))
        store_drop(m->w->store, e->res, e->ns, e->name);
    e->gone_uid[0] = '\0';
}

static void on_upsert(void *ctx, const json_t *obj)
{
    struct watched *wd = ctx;
    struct mirror *m = wd->m;
    world_lock(m->w);
    struct entry *e = entry_for(m, wd->res, obj);
    take_remote(m, e, obj, false);
    world_changed(m->w);
    world_unlock(m->w);
}

static void on_remove(void *ctx, const json_t *obj)
{
    struct watched *wd = ctx;
    struct mirror *m = wd->m;
    world_lock(m->w);
    taken_away(m, entry_for(m, wd->res, obj), obj);
    world_changed(m->w);
    world_unlock(m->w);
}

void mirror_watch(struct mirror *m, const struct resource *res, const char *selector)
{
    if (m->nwatches == MAX_WATCHES)
        return;
    struct watched *wd = &m->watches[m->nwatches++];
    wd->m = m;
    wd->res = res;
    char path[300];
    mirror_path(res, NULL, NULL, path, sizeof(path));
    struct kube_watch_ops ops = { wd, on_upsert, on_remove, NULL };
    wd->watch = kube_watch_new(m->c, path, selector, &ops);
}

bool mirror_synced(struct mirror *m)
{
    for (size_t i = 0; i < m->nwatches; i++)
        if (!kube_watch_synced(m->watches[i].watch))
            return false;
    return true;
}

/* ---- what the simulation writes ------------------------------------------------------ */

static void on_write(void *ctx, const struct resource *res, const json_t *obj, bool removed)
{
    struct mirror *m = ctx;
    struct entry *e = entry_for(m, res, obj);
    if (!removed) {
        if (res->table == TABLE_JOB && e->remote)
            version_push(m, e, obj);
        e->dirty = true;
        enqueue(m, e);
        return;
    }
    /* A kubelet removing a pod it has stopped: the last DELETE, for this very pod only. */
    char path[800];
    mirror_path(res, e->ns, e->name, path, sizeof(path));
    free(e->final_path);
    free(e->final_body);
    e->final_path = xstrdup(path);
    e->final_body = xasprintf("{\"kind\":\"DeleteOptions\",\"apiVersion\":\"v1\","
                              "\"gracePeriodSeconds\":0,\"preconditions\":{\"uid\":\"%s\"}}",
                              uid_of(obj));
    snprintf(e->gone_uid, sizeof(e->gone_uid), "%s", uid_of(obj));
    e->dirty = false;
    enqueue(m, e);
}

static void on_deleted(void *ctx, long status, const struct buf *body, struct err *err)
{
    struct entry *e = ctx;
    struct mirror *m = e->m;
    world_lock(m->w);
    m->inflight--;
    if (is_pod(e))
        pod_settled(m, e);
    if (err_is_set(err) && status != 404 && status != 409) { /* 409: precondition, a newer pod */
        m->errors++;
        log_warn("kubesim: DELETE %s/%s: %s", e->ns, e->name, err->msg);
    } else if (!err_is_set(err) && body->len) {
        json_t *obj = json_loadb(buf_cstr(body), body->len, 0, NULL);
        if (strcmp(kstr(obj, "kind"), "Status") && json_object_get(obj, "metadata"))
            take_remote(m, e, obj, false); /* deletionTimestamp, or gone at once */
        json_decref(obj);
    }
    world_unlock(m->w);
}

static void send_delete(struct mirror *m, struct entry *e, const char *path, const char *body)
{
    struct kube_request r = { .method = "DELETE", .path = path, .body = body };
    m->requests++;
    m->inflight++;
    kube_call_start(m->c, &r, NULL, on_deleted, e);
}

static void remote_delete(void *ctx, const struct resource *res, const json_t *obj,
                          const char *propagation, int64_t grace, bool final)
{
    struct mirror *m = ctx;
    if (final) {
        on_write(m, res, obj, true);
        return;
    }
    struct entry *e = entry_for(m, res, obj);
    char path[800], body[300], g[48] = "";
    mirror_path(res, e->ns, e->name, path, sizeof(path));
    if (grace >= 0)
        snprintf(g, sizeof(g), ",\"gracePeriodSeconds\":%lld", (long long)grace);
    snprintf(body, sizeof(body),
             "{\"kind\":\"DeleteOptions\",\"apiVersion\":\"v1\",\"propagationPolicy\":\"%s\"%s}",
             propagation && propagation[0] ? propagation : "Background", g);
    e->deleting = true;
    if (m->ndels == m->capdels) {
        m->capdels = m->capdels ? m->capdels * 2 : 64;
        m->dels = xrealloc(m->dels, m->capdels * sizeof(*m->dels));
    }
    m->dels[m->ndels++] = (struct delreq){ e, xstrdup(path), xstrdup(body) };
    kube_client_wakeup(m->c); /* sent from the loop thread (mirror_tick) */
}

/* ---- writes to the server ------------------------------------------------------------ */

static void finish_write(struct mirror *m, struct entry *e)
{
    e->inflight = false;
    m->inflight--;
    if ((e->dirty || e->final_path) && !e->retry_at)
        enqueue(m, e);
    if (is_pod(e))
        pod_settled(m, e);
}

static void refetched(void *ctx, long status, const struct buf *body, struct err *err)
{
    struct entry *e = ctx;
    struct mirror *m = e->m;
    world_lock(m->w);
    json_t *obj = err_is_set(err) ? NULL : json_loadb(buf_cstr(body), body->len, 0, NULL);
    if (obj) {
        take_remote(m, e, obj, true);
        e->dirty = false;
        versions_clear(e);
    } else if (status == 404) { /* not there (a create that never made it, or deleted) */
        if (store_get(m->w->store, e->res, e->ns, e->name))
            store_drop(m->w->store, e->res, e->ns, e->name);
        json_decref(e->remote);
        e->remote = NULL;
        e->dirty = false;
    } else {
        retry_later(m, e);
    }
    json_decref(obj);
    finish_write(m, e);
    world_changed(m->w);
    world_unlock(m->w);
}

static void retry_later(struct mirror *m, struct entry *e)
{
    m->retried++;
    e->dirty = true;
    json_decref(e->sent); /* the same patch is to be sent again */
    e->sent = NULL;
    e->retry_at = clock_mono_ns() + RETRY_NS;
    if (m->nretries == m->capretries) {
        m->capretries = m->capretries ? m->capretries * 2 : 64;
        m->retries = xrealloc(m->retries, m->capretries * sizeof(*m->retries));
    }
    m->retries[m->nretries++] = e;
}

/* The server refused a write: read its version and take it whole (the simulation then acts
 * on what is really there, e.g. an older pod still terminating under the same name). */
static void refetch(struct mirror *m, struct entry *e)
{
    char path[800];
    mirror_path(e->res, e->ns, e->name, path, sizeof(path));
    struct kube_request r = { .method = "GET", .path = path };
    m->requests++;
    kube_call_start(m->c, &r, NULL, refetched, e);
}

static void written(void *ctx, long status, const struct buf *body, struct err *err)
{
    struct entry *e = ctx;
    struct mirror *m = e->m;
    world_lock(m->w);
    if (err_is_set(err) && (status == 0 || status == 429 || status >= 500)) {
        retry_later(m, e); /* the same write again: the server was busy, not against it */
    } else if (err_is_set(err)) {
        m->errors++;
        m->conflicts += status == 409;
        if (status != 409)
            log_warn("kubesim: writing %s %s/%s: %s", e->res->plural, e->ns, e->name, err->msg);
        if (status == 404 && !e->remote) { /* its namespace is gone: forget it */
            store_drop(m->w->store, e->res, e->ns, e->name);
            e->dirty = false;
        } else {
            refetch(m, e); /* finish_write() once it answers */
            world_unlock(m->w);
            return;
        }
    } else {
        json_t *obj = json_loadb(buf_cstr(body), body->len, 0, NULL);
        if (json_is_object(obj))
            take_remote(m, e, obj, false);
        json_decref(obj);
        version_pop(e); /* that version is on the server */
        if (e->nver)
            e->dirty = true;
    }
    finish_write(m, e);
    world_changed(m->w);
    world_unlock(m->w);
}

static json_t *creatable(const json_t *local)
{
    json_t *obj = json_deep_copy(local);
    json_t *meta = kobj(obj, "metadata");
    const char *drop[] = { "uid",        "resourceVersion",   "creationTimestamp",
                           "generation", "deletionTimestamp", "managedFields",
                           "selfLink" };
    for (size_t i = 0; i < sizeof(drop) / sizeof(drop[0]); i++)
        json_object_del(meta, drop[i]);
    return obj;
}

/* One request for e: its creation, its status, the rest of it, or its final deletion. */
static void send_entry(struct mirror *m, struct entry *e)
{
    json_t *local = e->dirty ? store_get(m->w->store, e->res, e->ns, e->name) : NULL;
    if (local && e->nver && e->remote)
        local = e->ver[0]; /* a job: its oldest version not on the server yet */
    char path[900];
    struct kube_request r = { .method = "POST", .path = path };
    json_t *body = NULL;
    e->dirty = false;
    if (local && !e->remote) {
        mirror_path(e->res, e->ns, NULL, path, sizeof(path));
        body = creatable(local);
    } else if (local) {
        json_t *d = mpatch_diff(e->remote, local);
        json_t *st = json_incref(json_object_get(d, "status"));
        json_object_del(d, "status");
        bool has_status = resource_word_in(e->res->subresources, "status");
        if (st && json_object_size(d) && has_status)
            e->dirty = true; /* the rest of the object next */
        if (st && has_status) {
            body = json_pack("{s:O}", "status", st);
            json_decref(d);
        } else {
            if (st)
                json_object_set(d, "status", st);
            body = d;
        }
        json_decref(st);
        if (!mpatch_empty(body) && e->sent && json_equal(body, e->sent)) {
            /* The server did not keep what it was sent last time (a field its version does
             * not have): take its version rather than sending the same again. */
            m->dropped_patches++;
            json_decref(body);
            body = NULL;
            e->dirty = false;
            versions_clear(e);
            json_t *srv = json_incref(e->remote);
            take_remote(m, e, srv, true);
            json_decref(srv);
        } else if (mpatch_empty(body)) {
            json_decref(body);
            body = NULL;
            version_pop(e); /* that version says nothing new: the next one may */
            if (e->nver) {
                e->dirty = true;
                enqueue(m, e);
            }
        } else {
            mirror_path(e->res, e->ns, e->name, path, sizeof(path));
            if (has_status && json_object_get(body, "status"))
                strncat(path, "/status", sizeof(path) - strlen(path) - 1);
            r.method = "PATCH";
            r.content_type = "application/merge-patch+json";
            json_decref(e->sent);
            e->sent = json_incref(body);
        }
    }
    if (body) {
        char *text = jsonx_dumps(body);
        r.body = text;
        e->inflight = true;
        m->inflight++;
        m->requests++;
        kube_call_start(m->c, &r, NULL, written, e);
        free(text);
        json_decref(body);
        return;
    }
    if (e->final_path) {
        send_delete(m, e, e->final_path, e->final_body);
        free(e->final_path);
        free(e->final_body);
        e->final_path = e->final_body = NULL;
    }
}

/* ---- Events -------------------------------------------------------------------------- */

static void event_done(void *ctx, long status, const struct buf *body, struct err *err)
{
    struct evrec *r = ctx;
    struct mirror *m = r->m;
    (void)body;
    world_lock(m->w);
    r->inflight = false;
    m->inflight--;
    if (err_is_set(err)) {
        m->errors++;
        if (status != 404 && status != 403) /* a namespace going away */
            log_warn("kubesim: Event %s/%s: %s", r->ns, r->name, err->msg);
    } else if (!r->created) { /* from now on only count and lastTimestamp are sent */
        r->created = true;
        json_t *last = json_pack("{s:O}", "lastTimestamp", json_object_get(r->ev, "lastTimestamp"));
        json_decref(r->ev);
        r->ev = last;
    }
    if (r->created && r->sent_count != r->count)
        send_event(m, r);
    world_unlock(m->w);
}

static void send_event(struct mirror *m, struct evrec *r)
{
    char path[900];
    const struct resource *res = resource_lookup("", "v1", "events");
    struct kube_request q = { .method = "POST", .path = path };
    json_t *body;
    if (!r->created) {
        mirror_path(res, r->ns, NULL, path, sizeof(path));
        body = json_incref(r->ev);
    } else {
        mirror_path(res, r->ns, r->name, path, sizeof(path));
        body = json_pack("{s:i,s:O}", "count", r->count, "lastTimestamp",
                         json_object_get(r->ev, "lastTimestamp"));
        q.method = "PATCH";
        q.content_type = "application/merge-patch+json";
    }
    char *text = jsonx_dumps(body);
    q.body = text;
    r->sent_count = r->count;
    r->inflight = true;
    m->inflight++;
    m->requests++;
    kube_call_start(m->c, &q, NULL, event_done, r);
    free(text);
    json_decref(body);
}

static void evrec_free(struct evrec *r)
{
    json_decref(r->ev);
    free(r->key);
    free(r);
}

static void remote_event(void *ctx, const char *key, json_t *ev)
{
    struct mirror *m = ctx;
    struct evrec *r = kmap_get(&m->events, key);
    if (r) {
        r->count++;
        json_object_set(r->ev, "lastTimestamp", json_object_get(ev, "lastTimestamp"));
        json_decref(ev);
    } else if (m->nevqueue >= MAX_BACKLOG) { /* the server cannot keep up: this one is lost */
        m->dropped_events++;
        json_decref(ev);
        return;
    } else {
        if (m->events.n >= MAX_EVENTS) { /* forget the old ones (in flight: kept alive) */
            for (struct kmap_iter it = kmap_first(&m->events); it.e;) {
                struct evrec *old = it.e->value;
                kmap_next(&m->events, &it);
                if (!old->inflight && !old->queued) {
                    kmap_del(&m->events, old->key);
                    evrec_free(old);
                }
            }
        }
        r = XNEW(struct evrec);
        r->m = m;
        r->key = xstrdup(key);
        r->ev = ev;
        r->count = 1;
        const json_t *meta = json_object_get(ev, "metadata");
        snprintf(r->ns, sizeof(r->ns), "%s", kstr(meta, "namespace"));
        snprintf(r->name, sizeof(r->name), "%s", kstr(meta, "name"));
        kmap_put(&m->events, key, r);
    }
    if (r->inflight)
        return; /* event_done() sends the new count */
    if (m->nevqueue == m->capevqueue) {
        m->capevqueue = m->capevqueue ? m->capevqueue * 2 : 256;
        m->evqueue = xrealloc(m->evqueue, m->capevqueue * sizeof(*m->evqueue));
    }
    if (r->queued)
        return;
    if (m->nevqueue >= MAX_BACKLOG) { /* a repeat: its count goes with its next one */
        m->dropped_events++;
        return;
    }
    r->queued = true;
    m->evqueue[m->nevqueue++] = r;
    kube_client_wakeup(m->c);
}

/* ---- the loop ------------------------------------------------------------------------ */

/* Sends what is queued, objects first (pods, jobs, nodes: the state everyone acts on), then
 * deletions, then Events, while fewer than MAX_INFLIGHT requests are out. */
void mirror_tick(struct mirror *m, int64_t now)
{
    for (size_t i = 0; i < m->nwatches; i++)
        kube_watch_tick(m->watches[i].watch, now);
    world_lock(m->w);
    for (size_t i = 0; i < m->nretries;) {
        struct entry *e = m->retries[i];
        if (now < e->retry_at) {
            i++;
            continue;
        }
        e->retry_at = 0;
        m->retries[i] = m->retries[--m->nretries];
        if (!e->inflight)
            enqueue(m, e);
    }
    size_t done = 0, kept = 0;
    for (; done < m->nqueue && m->inflight < MAX_INFLIGHT; done++) {
        struct entry *e = m->queue[done];
        if (!may_send(m, e)) {
            m->queue[kept++] = e; /* after the pod writes it waits for */
            continue;
        }
        e->queued = false;
        if (!e->inflight)
            send_entry(m, e);
        if (is_pod(e))
            pod_settled(m, e);
    }
    if (m->nqueue > done)
        memmove(m->queue + kept, m->queue + done, (m->nqueue - done) * sizeof(*m->queue));
    m->nqueue = kept + m->nqueue - done;
    size_t d = 0;
    for (; d < m->ndels && m->inflight < MAX_INFLIGHT; d++) {
        send_delete(m, m->dels[d].e, m->dels[d].path, m->dels[d].body);
        free(m->dels[d].path);
        free(m->dels[d].body);
    }
    if (m->ndels > d)
        memmove(m->dels, m->dels + d, (m->ndels - d) * sizeof(*m->dels));
    m->ndels -= d;
    size_t ev = 0;
    for (; ev < m->nevqueue && m->inflight < MAX_INFLIGHT; ev++) {
        m->evqueue[ev]->queued = false;
        if (!m->evqueue[ev]->inflight)
            send_event(m, m->evqueue[ev]);
    }
    if (m->nevqueue > ev)
        memmove(m->evqueue, m->evqueue + ev, (m->nevqueue - ev) * sizeof(*m->evqueue));
    m->nevqueue -= ev;
    world_unlock(m->w);
}

size_t mirror_pending(struct mirror *m)
{
    world_lock(m->w);
    size_t n = m->inflight + m->nqueue + m->nevqueue + m->ndels + m->nretries;
    world_unlock(m->w);
    return n;
}

void mirror_stats(struct mirror *m, struct buf *out)
{
    buf_printf(out,
               "\"requests\":%llu,\"errors\":%llu,\"conflicts\":%llu,\"droppedPatches\":%llu,"
               "\"retried\":%llu,\"droppedEvents\":%llu,\"inflight\":%zu,\"queued\":%zu",
               (unsigned long long)m->requests, (unsigned long long)m->errors,
               (unsigned long long)m->conflicts, (unsigned long long)m->dropped_patches,
               (unsigned long long)m->retried, (unsigned long long)m->dropped_events, m->inflight,
               m->nqueue + m->nevqueue + m->ndels);
}

struct mirror *mirror_new(struct world *w, struct kube_client *c, int kubelet_port)
{
    struct mirror *m = XNEW(struct mirror);
    m->w = w;
    m->c = c;
    kmap_init(&m->entries);
    kmap_init(&m->events);
    m->remote = (struct world_remote){
        .ctx = m, .del = remote_delete, .event = remote_event, .kubelet_port = kubelet_port
    };
    w->remote = &m->remote;
    store_on_write(w->store, on_write, m);
    return m;
}

void mirror_free(struct mirror *m)
{
    if (!m)
        return;
    for (size_t i = 0; i < m->nwatches; i++)
        kube_watch_free(m->watches[i].watch);
    store_on_write(m->w->store, NULL, NULL);
    m->w->remote = NULL;
    for (struct kmap_iter it = kmap_first(&m->entries); it.e; kmap_next(&m->entries, &it)) {
        struct entry *e = it.e->value;
        json_decref(e->remote);
        json_decref(e->sent);
        versions_clear(e);
        free(e->final_path);
        free(e->final_body);
        free(e);
    }
    for (struct kmap_iter it = kmap_first(&m->events); it.e; kmap_next(&m->events, &it))
        evrec_free(it.e->value);
    kmap_release(&m->entries);
    kmap_release(&m->events);
    for (size_t i = 0; i < m->ndels; i++) {
        free(m->dels[i].path);
        free(m->dels[i].body);
    }
    free(m->dels);
    free(m->retries);
    free(m->queue);
    free(m->evqueue);
    free(m);
}
