/*
 * list: collection reads. Items come sorted by namespace/name like etcd keys; a continue token
 * is base64 of {"v":"meta.k8s.io/v1","rv":N,"start":"ns/name\u0000"} as in
 * apimachinery/pkg/storage, and later pages are served from the current state (we keep no
 * snapshots), which differs from etcd only when objects change between pages.
 * Lock: taken per request.
 */
#include "tests/kube/list.h"

#include "core/clock.h"
#include "core/crypto.h"
#include "core/jsonx.h"
#include "core/parse.h"
#include "core/xalloc.h"
#include "tests/kube/eventsv1.h"
#include "tests/kube/gc.h"
#include "tests/kube/status.h"
#include "tests/kube/store.h"
#include "tests/kube/table.h"
#include "tests/kube/world.h"

int list_query_parse(struct request *req, const struct target *t, struct list_query *q,
                     struct err *err)
{
    selector_init(&q->labels);
    selector_init(&q->fields);
    if (selector_parse_labels(&q->labels, request_query(req, "labelSelector"), err) < 0 ||
        selector_parse_fields(&q->fields, request_query(req, "fieldSelector"), err) < 0)
        goto fail;
    const char *bad = selector_fields_allowed(&q->fields, t->res->fields);
    if (bad) {
        err_set(err, ERR_INVALID, "field label not supported: %s", bad);
        goto fail;
    }
    if (t->res->view_of)
        eventsv1_map_fields(&q->fields);
    return 0;
fail:
    if (err)
        snprintf(err->reason, sizeof(err->reason), "BadRequest");
    list_query_release(q);
    return -1;
}

void list_query_release(struct list_query *q)
{
    selector_release(&q->labels);
    selector_release(&q->fields);
}

bool list_query_match(const struct list_query *q, const struct target *t, const json_t *obj)
{
    const json_t *m = json_object_get(obj, "metadata");
    if (t->res->namespaced && t->ns[0] && strcmp(kstr(m, "namespace"), t->ns))
        return false;
    return selector_match_labels(&q->labels, json_object_get(m, "labels")) &&
           selector_match_fields(&q->fields, obj);
}

static void key_of(const json_t *obj, char *out, size_t size)
{
    const json_t *m = json_object_get(obj, "metadata");
    snprintf(out, size, "%s/%s", kstr(m, "namespace"), kstr(m, "name"));
}

static char *encode_continue(int64_t rv, const char *start_key)
{
    char *start = xasprintf("%s", start_key);
    json_t *tok = json_pack("{s:s, s:I, s:s#}", "v", "meta.k8s.io/v1", "rv", (json_int_t)rv,
                            "start", start, strlen(start) + 1); /* "\0": start after the key */
    char *text = jsonx_dumps(tok);
    struct buf b = BUF_INIT;
    crypto_base64_encode(&b, text, strlen(text));
    for (size_t i = 0; i < b.len; i++) /* base64.RawURLEncoding, as apimachinery encodes it */
        b.data[i] = b.data[i] == '+' ? '-' : b.data[i] == '/' ? '_' : b.data[i];
    while (b.len && b.data[b.len - 1] == '=')
        b.data[--b.len] = '\0';
    free(text);
    free(start);
    json_decref(tok);
    return buf_detach(&b, NULL);
}

/* Decodes a continue token into its RV and start key (caller frees *start). */
static int decode_continue(const char *token, int64_t *rv, char **start, struct err *err)
{
    struct buf b = BUF_INIT, std = BUF_INIT;
    json_t *tok = NULL;
    int rc = -1;
    for (const char *p = token; *p; p++)
        buf_putc(&std, *p == '-' ? '+' : *p == '_' ? '/' : *p);
    if (crypto_base64_decode(&b, std.data ? std.data : "", std.len) < 0 ||
        !(tok = jsonx_loadb(b.data ? b.data : "", b.len, 4, NULL)) ||
        !json_is_integer(json_object_get(tok, "rv"))) {
        status_set(err, ERR_INVALID, "BadRequest",
                   "continue key is not valid: incorrect encoded "
                   "start resourceVersion (version meta.k8s.io/v1)");
        goto out;
    }
    *rv = json_integer_value(json_object_get(tok, "rv"));
    *start = xstrdup(kstr(tok, "start"));
    rc = 0;
out:
    json_decref(tok);
    buf_release(&b);
    buf_release(&std);
    return rc;
}

/* Collects the page; sets *next to a continue token when more items remain. */
static json_t *collect(struct world *w, const struct target *t, const struct list_query *q,
                       int64_t limit, const char *start, int64_t rv, char **next,
                       int64_t *remaining)
{
    size_t n;
    json_t **objs = store_list(w->store, t->store_res, t->ns, &n);
    json_t *items = json_array();
    char key[600], last[600] = "";
    *remaining = 0;
    for (size_t i = 0; i < n; i++) {
        key_of(objs[i], key, sizeof(key));
        if (start && strcmp(key, start) <= 0)
            continue;
        if (!list_query_match(q, t, objs[i]))
            continue;
        if (limit > 0 && (int64_t)json_array_size(items) >= limit) {
            (*remaining)++;
            continue;
        }
        json_array_append(items, objs[i]);
        snprintf(last, sizeof(last), "%s", key);
    }
    store_list_free(objs, n);
    *next = *remaining ? encode_continue(rv, last) : NULL;
    return items;
}

static void list_reply(struct request *req, const struct target *t, struct reply *rep,
                       json_t *items, const char *rv, const char *next, int64_t remaining,
                       bool selected)
{
    json_t *list;
    if (table_wanted(request_header(req, "Accept"))) {
        json_t **objs = xcalloc(json_array_size(items) + 1, sizeof(json_t *));
        for (size_t i = 0; i < json_array_size(items); i++)
            objs[i] = json_array_get(items, i);
        list = table_render(t->store_res, objs, json_array_size(items),
                            request_query(req, "includeObject"), clock_now_ns());
        free(objs);
        json_decref(items);
    } else {
        char kind[96];
        snprintf(kind, sizeof(kind), "%sList", t->res->kind);
        for (size_t i = 0; i < json_array_size(items); i++)
            json_array_set_new(items, i, rest_present(t, json_array_get(items, i)));
        list = json_pack("{s:s, s:s, s:{}, s:o}", "kind", kind, "apiVersion", t->res->api_version,
                         "metadata", "items", items);
    }
    json_t *meta = kobj(list, "metadata");
    json_object_set_new(meta, "resourceVersion", json_string(rv));
    if (next) {
        json_object_set_new(meta, "continue", json_string(next));
        if (!selected) /* the server only counts when no selector filters */
            json_object_set_new(meta, "remainingItemCount", json_integer(remaining));
    }
    reply_json(rep, 200, list);
}

static void delete_items(struct world *w, const struct target *t, json_t *items)
{
    size_t i;
    json_t *obj;
    json_array_foreach (items, i, obj) {
        const json_t *m = json_object_get(obj, "metadata");
        json_t *last = gc_delete(w, t->res, kstr(m, "namespace"), kstr(m, "name"), NULL, -1, NULL);
        if (last)
            json_array_set_new(items, i, last);
    }
    world_changed(w);
}

void list_handle(struct request *req, const struct target *t, struct reply *rep)
{
    struct err err;
    err_init(&err);
    struct list_query q;
    int64_t limit = 0, rv = 0, remaining = 0;
    char *start = NULL, *next = NULL;
    const char *lim = request_query(req, "limit"), *cont = request_query(req, "continue");
    if (list_query_parse(req, t, &q, &err) < 0)
        goto out;
    if (lim && parse_int64(lim, 0, INT64_MAX, &limit) < 0)
        limit = 0;
    world_lock(req->w);
    rv = store_rv(req->w->store);
    if (cont && cont[0] && decode_continue(cont, &rv, &start, &err) == 0 &&
        rv < store_oldest_rv(req->w->store)) {
        status_set(&err, ERR_GONE, "Expired",
                   "The provided continue parameter is too old to display a consistent list "
                   "result. You can start a new list without the continue parameter, or use the "
                   "continue token in this response to retrieve the remainder of the results. "
                   "Continuing with the provided token results in an inconsistent list - objects "
                   "that were created, modified, or deleted between the time the first chunk was "
                   "returned and now may show up in the list.");
    }
    json_t *items = NULL;
    if (!err_is_set(&err)) {
        items = collect(req->w, t, &q, !strcmp(t->verb, "list") ? limit : 0, start, rv, &next,
                        &remaining);
        if (!strcmp(t->verb, "deletecollection"))
            delete_items(req->w, t, items);
    }
    world_unlock(req->w);
    if (items) {
        char rvtext[32];
        snprintf(rvtext, sizeof(rvtext), "%lld", (long long)rv);
        list_reply(req, t, rep, items, rvtext, next, remaining, q.labels.n || q.fields.n);
    }
    list_query_release(&q);
out:
    if (err_is_set(&err))
        rest_error(rep, t, &err);
    free(start);
    free(next);
    err_release(&err);
}

void list_delete_namespace(struct world *w, const char *ns)
{
    for (size_t r = 0; r < resource_count; r++) {
        const struct resource *res = &resource_table[r];
        if (!res->namespaced)
            continue;
        size_t n;
        json_t **objs = store_list(w->store, res, ns, &n);
        for (size_t i = 0; i < n; i++)
            json_decref(gc_delete(w, res, ns, kstr(json_object_get(objs[i], "metadata"), "name"),
                                  "Background", 0, NULL));
        store_list_free(objs, n);
    }
}
