/*
 * watch: each stream keeps a cursor (the last resourceVersion it has passed) and pulls the
 * store's events after it, under the world lock, when the HTTP thread asks for bytes. It waits
 * on the world's condition variable when there is nothing to send, so it wakes on any change,
 * on a bookmark tick, at its deadline, at shutdown, or when the control API expires watches.
 * Ownership: struct watch is owned by the reply stream and freed by watch_free().
 */
#include "tests/kube/watch.h"

#include "core/clock.h"
#include "core/jsonx.h"
#include "core/parse.h"
#include "core/xalloc.h"
#include "tests/kube/list.h"
#include "tests/kube/status.h"
#include "tests/kube/store.h"
#include "tests/kube/table.h"
#include "tests/kube/world.h"

#define BATCH_BYTES (64 * 1024)

struct watch {
    struct world *w;
    struct target t;
    struct list_query q;
    int64_t cursor;
    int64_t epoch;
    int64_t deadline;      /* monotonic */
    int64_t next_bookmark; /* monotonic, 0 = no bookmarks */
    bool initial, initial_bookmark, table, ending;
    char include[24];
    struct buf out;
    size_t sent;
};

static void emit(struct watch *wa, const char *type, json_t *obj)
{
    json_t *o = obj;
    if (wa->table && strcmp(type, "ERROR") && strcmp(type, "BOOKMARK")) {
        json_t *const objs[] = { obj };
        o = table_render(wa->t.store_res, objs, 1, wa->include, clock_now_ns());
        json_object_set(kobj(o, "metadata"), "resourceVersion",
                        kpath(obj, "metadata.resourceVersion"));
    } else if (strcmp(type, "ERROR") && strcmp(type, "BOOKMARK")) {
        o = rest_present(&wa->t, obj);
    } else {
        json_incref(o);
    }
    json_t *ev = json_pack("{s:s, s:o}", "type", type, "object", o);
    jsonx_dump(&wa->out, ev);
    buf_putc(&wa->out, '\n');
    json_decref(ev);
}

static void emit_bookmark(struct watch *wa, int64_t rv, bool initial_end)
{
    char text[32];
    snprintf(text, sizeof(text), "%lld", (long long)rv);
    json_t *o = json_pack("{s:s, s:s, s:{s:s}}", "kind", wa->t.res->kind, "apiVersion",
                          wa->t.res->api_version, "metadata", "resourceVersion", text);
    if (initial_end)
        json_object_set_new(kobj(o, "metadata"), "annotations",
                            json_pack("{s:s}", "k8s.io/initial-events-end", "true"));
    emit(wa, "BOOKMARK", o);
    json_decref(o);
}

static void emit_initial(struct watch *wa)
{
    size_t n;
    json_t **objs = store_list(wa->w->store, wa->t.store_res, wa->t.ns, &n);
    for (size_t i = 0; i < n; i++)
        if (list_query_match(&wa->q, &wa->t, objs[i]))
            emit(wa, "ADDED", objs[i]);
    store_list_free(objs, n);
    wa->cursor = store_rv(wa->w->store);
    if (wa->initial_bookmark)
        emit_bookmark(wa, wa->cursor, true);
    wa->initial = false;
}

/* Turns one store event into what this watch's selection sees. */
static void emit_event(struct watch *wa, const struct store_event *ev)
{
    bool now = ev->type != STORE_DELETED && list_query_match(&wa->q, &wa->t, ev->obj);
    bool before = ev->prev && list_query_match(&wa->q, &wa->t, ev->prev);
    if (ev->type == STORE_DELETED) {
        if (before)
            emit(wa, "DELETED", ev->obj);
    } else if (now) {
        emit(wa, before ? "MODIFIED" : "ADDED", ev->obj);
    } else if (before) { /* left the selection: DELETED with the previous object, new RV */
        json_t *gone = json_deep_copy(ev->prev);
        json_object_set(kobj(gone, "metadata"), "resourceVersion",
                        kpath(ev->obj, "metadata.resourceVersion"));
        emit(wa, "DELETED", gone);
        json_decref(gone);
    }
}

/* Fills wa->out with whatever is due; lock held. */
static void pump(struct watch *wa)
{
    struct world *w = wa->w;
    for (;;) {
        if (w->stopping || w->watch_epoch != wa->epoch) {
            wa->ending = true;
            return;
        }
        if (wa->initial)
            emit_initial(wa);
        if (wa->cursor < store_oldest_rv(w->store)) {
            char msg[128];
            snprintf(msg, sizeof(msg), "too old resource version: %lld (%lld)",
                     (long long)wa->cursor, (long long)store_oldest_rv(w->store) + 1);
            json_t *st = status_new(410, "Expired", msg);
            emit(wa, "ERROR", st);
            json_decref(st);
            wa->ending = true;
            return;
        }
        const struct store_event *ev;
        while (wa->out.len < BATCH_BYTES && (ev = store_event_after(w->store, wa->cursor))) {
            wa->cursor = ev->rv;
            if (ev->res == wa->t.store_res)
                emit_event(wa, ev);
        }
        if (wa->out.len)
            return;
        int64_t now = clock_mono_ns();
        if (now >= wa->deadline) {
            wa->ending = true;
            return;
        }
        if (wa->next_bookmark && now >= wa->next_bookmark) {
            emit_bookmark(wa, store_rv(w->store), false);
            wa->next_bookmark = now + w->bookmark_ns;
            return;
        }
        int64_t until = wa->deadline;
        if (wa->next_bookmark && wa->next_bookmark < until)
            until = wa->next_bookmark;
        world_wait(w, until);
    }
}

static ssize_t watch_read(void *ctx, char *out, size_t max)
{
    struct watch *wa = ctx;
    if (wa->sent == wa->out.len) {
        buf_reset(&wa->out);
        wa->sent = 0;
        if (wa->ending)
            return -1;
        world_lock(wa->w);
        pump(wa);
        world_unlock(wa->w);
        if (!wa->out.len)
            return -1;
    }
    size_t n = wa->out.len - wa->sent;
    if (n > max)
        n = max;
    memcpy(out, wa->out.data + wa->sent, n);
    wa->sent += n;
    return (ssize_t)n;
}

static void watch_free(void *ctx)
{
    struct watch *wa = ctx;
    world_lock(wa->w);
    wa->w->watches_open--;
    world_unlock(wa->w);
    list_query_release(&wa->q);
    buf_release(&wa->out);
    free(wa);
}

static bool flag(struct request *req, const char *key)
{
    const char *v = request_query(req, key);
    return v && (!strcmp(v, "true") || !strcmp(v, "1"));
}

void watch_handle(struct request *req, const struct target *t, struct reply *rep)
{
    struct err err;
    err_init(&err);
    struct watch *wa = XNEW(struct watch);
    wa->w = req->w;
    wa->t = *t;
    const char *rv = request_query(req, "resourceVersion");
    const char *timeout = request_query(req, "timeoutSeconds");
    const char *include = request_query(req, "includeObject");
    int64_t secs = 0;
    int64_t parsed;
    if (rv && rv[0] && parse_int64(rv, 0, INT64_MAX, &parsed) < 0)
        status_set(&err, ERR_INVALID, "BadRequest",
                   "invalid resource version: strconv.ParseUint: parsing \"%s\": invalid syntax",
                   rv);
    if (err_is_set(&err) || list_query_parse(req, t, &wa->q, &err) < 0) {
        rest_error(rep, t, &err);
        free(wa);
        err_release(&err);
        return;
    }
    wa->initial = !rv || !rv[0] || !strcmp(rv, "0") || flag(req, "sendInitialEvents");
    wa->initial_bookmark = flag(req, "sendInitialEvents") && flag(req, "allowWatchBookmarks");
    if (rv && rv[0])
        parse_int64(rv, 0, INT64_MAX, &wa->cursor);
    wa->table = table_wanted(request_header(req, "Accept"));
    snprintf(wa->include, sizeof(wa->include), "%s", include ? include : "");
    world_lock(req->w);
    int64_t max = req->w->max_watch_ns;
    if (timeout && parse_int64(timeout, 0, INT32_MAX, &secs) == 0 && secs > 0 &&
        secs * NS_PER_SEC < max)
        max = secs * NS_PER_SEC;
    wa->deadline = clock_mono_ns() + max;
    if (flag(req, "allowWatchBookmarks"))
        wa->next_bookmark = clock_mono_ns() + req->w->bookmark_ns;
    wa->epoch = req->w->watch_epoch;
    req->w->watches_open++;
    world_unlock(req->w);
    rep->code = 200;
    rep->content_type = "application/json";
    rep->stream = watch_read;
    rep->stream_free = watch_free;
    rep->stream_ctx = wa;
    err_release(&err);
}
