/*
 * watch: LIST + WATCH of one collection (see watch.h). The set of objects seen (key
 * "namespace/name" -> uid) is kept so that a re-list can report what vanished meanwhile.
 * Callbacks must not free the watch.
 */
#include "server/kube/watch.h"

#include <stdlib.h>

#include "core/clock.h"
#include "core/jsonx.h"
#include "core/log.h"
#include "core/xalloc.h"
#include "server/kube/kmap.h"

#define PAGE_SIZE     500
#define BACKOFF_MIN   (500 * NS_PER_MS)
#define BACKOFF_MAX   (30 * NS_PER_SEC)
#define WATCH_SECONDS 300
#define ABSENT_RETRY  (60 * NS_PER_SEC)

enum phase { P_IDLE, P_LIST, P_WATCH, P_WAIT };

struct kube_watch {
    struct kube_client *c;
    char *path, *selector, *resource;
    struct kube_watch_ops ops;
    enum phase phase;
    bool need_list; /* the next start is a LIST (first time, or after 410) */
    bool synced;
    bool expired; /* a 410 ERROR event came on the stream */
    bool absent;  /* the collection is not served (404) */
    char last_err[256];
    struct kube_call *call;
    char *rv;
    char *cont; /* continue token of the list in progress */
    struct kmap seen;
    struct kmap listed; /* keys of the list in progress */
    struct buf line;
    int64_t next_try, backoff;
    struct kube_watch_stats stats;
};

void kube_query_escape(struct buf *out, const char *value)
{
    static const char hex[] = "0123456789ABCDEF";
    for (const unsigned char *p = (const unsigned char *)value; *p; p++) {
        if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
            *p == '-' || *p == '_' || *p == '.' || *p == '~')
            buf_putc(out, (char)*p);
        else
            buf_printf(out, "%%%c%c", hex[*p >> 4], hex[*p & 15]);
    }
}

static void key_of(const json_t *obj, char *out, size_t size)
{
    const json_t *m = json_object_get(obj, "metadata");
    const char *ns = jsonx_str(m, "namespace"), *name = jsonx_str(m, "name");
    snprintf(out, size, "%s/%s", ns ? ns : "", name ? name : "");
}

static void set_rv(struct kube_watch *w, const char *rv)
{
    if (!rv || !*rv)
        return;
    free(w->rv);
    w->rv = xstrdup(rv);
}

static void seen_put(struct kmap *m, const json_t *obj)
{
    char key[320];
    key_of(obj, key, sizeof(key));
    const char *uid = jsonx_str(json_object_get(obj, "metadata"), "uid");
    free(kmap_put(m, key, xstrdup(uid ? uid : "")));
}

static void seen_clear(struct kmap *m)
{
    for (struct kmap_iter it = kmap_first(m); it.e; kmap_next(m, &it))
        free(it.e->value);
    kmap_release(m);
    kmap_init(m);
}

static void fail(struct kube_watch *w, bool relist)
{
    w->call = NULL;
    w->phase = P_WAIT;
    w->need_list = w->need_list || relist;
    w->backoff = w->backoff ? w->backoff * 2 : BACKOFF_MIN;
    if (w->backoff > BACKOFF_MAX)
        w->backoff = BACKOFF_MAX;
    w->next_try = clock_mono_ns() + w->backoff;
}

static void start_list(struct kube_watch *w);
static void start_watch(struct kube_watch *w);

/* The objects of the old view that the new list did not have are gone. */
static void finish_list(struct kube_watch *w)
{
    for (struct kmap_iter it = kmap_first(&w->seen); it.e; kmap_next(&w->seen, &it)) {
        if (kmap_get(&w->listed, it.e->key))
            continue;
        const char *slash = strchr(it.e->key, '/');
        json_t *gone = json_pack("{s:{s:s%,s:s,s:s}}", "metadata", "namespace", it.e->key,
                                 (size_t)(slash - it.e->key), "name", slash + 1, "uid",
                                 (const char *)it.e->value);
        w->ops.remove(w->ops.ctx, gone);
        json_decref(gone);
    }
    seen_clear(&w->seen);
    struct kmap tmp = w->seen;
    w->seen = w->listed;
    w->listed = tmp;
    w->need_list = false;
    w->synced = true;
    w->absent = false;
    w->backoff = 0;
    if (w->ops.synced)
        w->ops.synced(w->ops.ctx);
    start_watch(w);
}

static void on_list(void *ctx, long status, const struct buf *body, struct err *err)
{
    struct kube_watch *w = ctx;
    w->call = NULL;
    if (err_is_set(err)) {
        free(w->cont);
        w->cont = NULL;
        seen_clear(&w->listed);
        fail(w, true);
        if (status == 404) { /* the resource is not served (its CRD is not installed) */
            if (!w->absent)
                log_info("kube: %s is not served by this cluster", w->path);
            w->absent = w->synced = true;
            w->backoff = w->next_try = 0;
            w->next_try = clock_mono_ns() + ABSENT_RETRY;
            if (w->ops.synced)
                w->ops.synced(w->ops.ctx);
            return;
        }
        if (strcmp(w->last_err, err->msg) != 0)
            log_warn("kube: listing %s: %s", w->path, err->msg);
        snprintf(w->last_err, sizeof(w->last_err), "%s", err->msg);
        return;
    }
    w->last_err[0] = '\0';
    json_t *doc = json_loadb(buf_cstr(body), body->len, 0, NULL);
    const json_t *meta = json_object_get(doc, "metadata");
    size_t i;
    json_t *item;
    json_array_foreach(json_object_get(doc, "items"), i, item)
    {
        seen_put(&w->listed, item);
        w->ops.upsert(w->ops.ctx, item);
    }
    const char *cont = jsonx_str(meta, "continue");
    free(w->cont);
    w->cont = cont && *cont ? xstrdup(cont) : NULL;
    if (!w->cont)
        set_rv(w, jsonx_str(meta, "resourceVersion"));
    json_decref(doc);
    if (w->cont)
        start_list(w);
    else
        finish_list(w);
}

static void start_list(struct kube_watch *w)
{
    struct buf q = BUF_INIT;
    buf_printf(&q, "%s?limit=%d", w->path, PAGE_SIZE);
    if (w->selector) {
        buf_puts(&q, "&labelSelector=");
        kube_query_escape(&q, w->selector);
    }
    if (w->cont) {
        buf_puts(&q, "&continue=");
        kube_query_escape(&q, w->cont);
    } else {
        seen_clear(&w->listed);
        w->stats.lists++;
    }
    struct kube_request r = { .method = "GET", .path = buf_cstr(&q), .timeout_ms = 120000 };
    w->phase = P_LIST;
    w->call = kube_call_start(w->c, &r, NULL, on_list, w);
    buf_release(&q);
}

static void handle_event(struct kube_watch *w, const json_t *ev)
{
    const char *type = jsonx_str(ev, "type");
    const json_t *obj = json_object_get(ev, "object");
    if (!type || !json_is_object(obj) || w->expired)
        return;
    if (!strcmp(type, "ERROR")) {
        long code = (long)jsonx_int(obj, "code", 0);
        if (code == 410)
            w->expired = true;
        else
            log_warn("kube: watch of %s: %s", w->path, jsonx_str(obj, "message"));
        return;
    }
    set_rv(w, jsonx_str(json_object_get(obj, "metadata"), "resourceVersion"));
    w->stats.events++;
    if (!strcmp(type, "ADDED") || !strcmp(type, "MODIFIED")) {
        seen_put(&w->seen, obj);
        w->ops.upsert(w->ops.ctx, obj);
    } else if (!strcmp(type, "DELETED")) {
        char key[320];
        key_of(obj, key, sizeof(key));
        free(kmap_del(&w->seen, key));
        w->ops.remove(w->ops.ctx, obj);
    }
}

static void on_watch_data(void *ctx, const char *data, size_t len)
{
    struct kube_watch *w = ctx;
    buf_append(&w->line, data, len);
    size_t start = 0;
    for (size_t i = 0; i < w->line.len; i++) {
        if (w->line.data[i] != '\n')
            continue;
        json_t *ev = json_loadb(w->line.data + start, i - start, 0, NULL);
        if (ev)
            handle_event(w, ev);
        json_decref(ev);
        start = i + 1;
    }
    buf_consume(&w->line, start);
}

static void on_watch_done(void *ctx, long status, const struct buf *body, struct err *err)
{
    struct kube_watch *w = ctx;
    (void)body;
    w->call = NULL;
    buf_reset(&w->line);
    if (w->expired || status == 410) {
        w->stats.restarts_expired++;
        log_info("kube: watch of %s expired (410): listing again", w->path);
        w->need_list = true;
        w->backoff = 0;
        start_list(w);
    } else if (err_is_set(err)) {
        w->stats.restarts_error++;
        log_warn("kube: watch of %s ended: %s", w->path, err->msg);
        fail(w, false);
    } else {
        w->stats.restarts_closed++;
        start_watch(w); /* the server ends watches now and then: resume from the last RV */
    }
}

static void start_watch(struct kube_watch *w)
{
    struct buf q = BUF_INIT;
    int secs = WATCH_SECONDS + (int)(random() % WATCH_SECONDS);
    buf_printf(&q,
               "%s?watch=true&allowWatchBookmarks=true&timeoutSeconds=%d&resourceVersion=", w->path,
               secs);
    kube_query_escape(&q, w->rv ? w->rv : "0");
    if (w->selector) {
        buf_puts(&q, "&labelSelector=");
        kube_query_escape(&q, w->selector);
    }
    struct kube_request r = { .method = "GET",
                              .path = buf_cstr(&q),
                              .timeout_ms = (secs + 60) * 1000L };
    w->phase = P_WATCH;
    w->expired = false;
    w->call = kube_call_start(w->c, &r, on_watch_data, on_watch_done, w);
    buf_release(&q);
}

struct kube_watch *kube_watch_new(struct kube_client *c, const char *path, const char *selector,
                                  const struct kube_watch_ops *ops)
{
    struct kube_watch *w = XNEW(struct kube_watch);
    w->c = c;
    w->path = xstrdup(path);
    w->selector = selector ? xstrdup(selector) : NULL;
    const char *slash = strrchr(path, '/');
    w->resource = xstrdup(slash ? slash + 1 : path);
    w->ops = *ops;
    kmap_init(&w->seen);
    kmap_init(&w->listed);
    w->need_list = true;
    start_list(w);
    return w;
}

void kube_watch_free(struct kube_watch *w)
{
    if (!w)
        return;
    kube_call_cancel(w->c, w->call);
    seen_clear(&w->seen);
    seen_clear(&w->listed);
    kmap_release(&w->seen);
    kmap_release(&w->listed);
    buf_release(&w->line);
    free(w->path);
    free(w->selector);
    free(w->resource);
    free(w->rv);
    free(w->cont);
    free(w);
}

void kube_watch_tick(struct kube_watch *w, int64_t now_mono)
{
    if (w->phase != P_WAIT || now_mono < w->next_try)
        return;
    if (w->need_list)
        start_list(w);
    else
        start_watch(w);
}

bool kube_watch_synced(const struct kube_watch *w)
{
    return w->synced;
}

void kube_watch_stats(const struct kube_watch *w, struct kube_watch_stats *out)
{
    *out = w->stats;
}

const char *kube_watch_error(const struct kube_watch *w)
{
    return w->last_err;
}
