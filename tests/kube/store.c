/*
 * store: objects keyed by "namespace/name" in one jansson object per resource, and a ring of
 * change events. It does not validate object schemas, run admission, or garbage-collect
 * dependents (admission.c and gc.c do); it only keeps metadata consistent. Lock: world lock.
 */
#include "tests/kube/store.h"

#include "core/clock.h"
#include "core/xalloc.h"
#include "core/crypto.h"
#include "core/jsonx.h"
#include "tests/kube/world.h"

struct store {
    json_t **objects; /* per resource: key -> object */
    int64_t rv;
    struct store_event *ring;
    size_t cap, head, len; /* ring[head] is the oldest retained event */
    int64_t compacted;     /* events with rv <= compacted are gone */
    store_write_fn on_write;
    void *on_write_ctx;
};

void store_on_write(struct store *s, store_write_fn fn, void *ctx)
{
    s->on_write = fn;
    s->on_write_ctx = ctx;
}

struct store *store_new(size_t history)
{
    struct store *s = XNEW(struct store);
    s->objects = xcalloc(resource_count, sizeof(json_t *));
    for (size_t i = 0; i < resource_count; i++)
        s->objects[i] = json_object();
    s->cap = history ? history : 1;
    s->ring = xcalloc(s->cap, sizeof(*s->ring));
    /* Start above 1 so that "0" (any version) and real RVs never collide. */
    s->rv = 1000;
    s->compacted = s->rv;
    return s;
}

static void event_clear(struct store_event *e)
{
    json_decref(e->obj);
    json_decref(e->prev);
    memset(e, 0, sizeof(*e));
}

void store_free(struct store *s)
{
    if (!s)
        return;
    for (size_t i = 0; i < s->len; i++)
        event_clear(&s->ring[(s->head + i) % s->cap]);
    for (size_t i = 0; i < resource_count; i++)
        json_decref(s->objects[i]);
    free(s->objects);
    free(s->ring);
    free(s);
}

int64_t store_rv(const struct store *s)
{
    return s->rv;
}

int64_t store_oldest_rv(const struct store *s)
{
    return s->compacted;
}

void store_compact(struct store *s)
{
    /* On a real cluster, writes elsewhere move the revision on between a client's last event and
     * a compaction; without this a client that had seen everything could resume unharmed, and
     * tests of the 410 path would depend on timing. */
    s->rv++;
    while (s->len) {
        event_clear(&s->ring[s->head]);
        s->head = (s->head + 1) % s->cap;
        s->len--;
    }
    s->compacted = s->rv;
}

const struct store_event *store_event_after(const struct store *s, int64_t rv)
{
    if (rv < s->compacted || rv >= s->rv)
        return NULL;
    size_t i = (size_t)(rv + 1 - (s->rv - (int64_t)s->len + 1)); /* offset from the oldest */
    return &s->ring[(s->head + i) % s->cap];
}

static void record(struct store *s, enum store_event_type type, const struct resource *res,
                   json_t *obj, json_t *prev)
{
    if (s->len == s->cap) {
        struct store_event *old = &s->ring[s->head];
        s->compacted = old->rv;
        event_clear(old);
        s->head = (s->head + 1) % s->cap;
        s->len--;
    }
    struct store_event *e = &s->ring[(s->head + s->len) % s->cap];
    e->rv = s->rv;
    e->type = type;
    e->res = res;
    e->obj = json_incref(obj);
    e->prev = json_incref(prev);
    s->len++;
}

static void key_of(const struct resource *res, const char *ns, const char *name, char *out,
                   size_t size)
{
    if (res->namespaced)
        snprintf(out, size, "%s/%s", ns ? ns : "", name);
    else
        snprintf(out, size, "%s", name);
}

static void set_rv(json_t *meta, int64_t rv)
{
    char text[32];
    snprintf(text, sizeof(text), "%lld", (long long)rv);
    json_object_set_new(meta, "resourceVersion", json_string(text));
}

json_t *store_get(struct store *s, const struct resource *res, const char *ns, const char *name)
{
    char key[600];
    key_of(res, ns, name, key, sizeof(key));
    return json_object_get(s->objects[resource_index(res)], key);
}

int store_not_found(struct err *err, const struct resource *res, const char *name)
{
    err_set(err, ERR_NOT_FOUND, "%s \"%s\" not found", res->qualified, name);
    snprintf(err->reason, sizeof(err->reason), "NotFound");
    return -1;
}

static void name_from_generate(json_t *meta)
{
    const char *prefix = kstr(meta, "generateName");
    char suffix[6];
    const char alphabet[] = "bcdfghjklmnpqrstvwxz2456789"; /* utilrand's alphanumerics */
    unsigned char rnd[5];
    crypto_random(rnd, sizeof(rnd));
    for (int i = 0; i < 5; i++)
        suffix[i] = alphabet[rnd[i] % (sizeof(alphabet) - 1)];
    suffix[5] = '\0';
    char *name = xasprintf("%s%s", prefix, suffix);
    json_object_set_new(meta, "name", json_string(name));
    free(name);
}

json_t *store_create(struct store *s, const struct resource *res, json_t *obj, struct err *err)
{
    json_t *meta = kobj(obj, "metadata");
    if (!kstr(meta, "name")[0] && kstr(meta, "generateName")[0])
        name_from_generate(meta);
    const char *name = kstr(meta, "name");
    if (!name[0]) {
        err_field(err, "metadata.name", "name or generateName is required");
        json_decref(obj);
        return NULL;
    }
    if (!res->namespaced)
        json_object_del(meta, "namespace");
    char key[600];
    key_of(res, kstr(meta, "namespace"), name, key, sizeof(key));
    json_t *bucket = s->objects[resource_index(res)];
    if (json_object_get(bucket, key)) {
        err_set(err, ERR_CONFLICT, "%s \"%s\" already exists", res->qualified, name);
        snprintf(err->reason, sizeof(err->reason), "AlreadyExists");
        json_decref(obj);
        return NULL;
    }
    char uid[40];
    json_object_set_new(meta, "uid", json_string(kuuid(uid)));
    ktime_set(meta, "creationTimestamp", clock_now_ns());
    if (res->custom)
        json_object_set_new(meta, "generation", json_integer(1));
    json_object_del(meta, "deletionTimestamp");
    s->rv++;
    set_rv(meta, s->rv);
    json_object_set_new(obj, "apiVersion", json_string(res->api_version));
    json_object_set_new(obj, "kind", json_string(res->kind));
    json_object_set_new(bucket, key, obj);
    record(s, STORE_ADDED, res, obj, NULL);
    if (s->on_write)
        s->on_write(s->on_write_ctx, res, obj, false);
    return obj;
}

json_t *store_replace(struct store *s, const struct resource *res, json_t *obj, struct err *err)
{
    json_t *meta = kobj(obj, "metadata");
    const char *name = kstr(meta, "name");
    char key[600];
    key_of(res, kstr(meta, "namespace"), name, key, sizeof(key));
    json_t *bucket = s->objects[resource_index(res)];
    json_t *prev = json_object_get(bucket, key);
    if (!prev) {
        store_not_found(err, res, name);
        json_decref(obj);
        return NULL;
    }
    json_t *pmeta = json_object_get(prev, "metadata");
    /* Fields the server owns cannot be changed by an update. */
    json_object_set(meta, "uid", json_object_get(pmeta, "uid"));
    json_object_set(meta, "creationTimestamp", json_object_get(pmeta, "creationTimestamp"));
    int64_t gen = jsonx_int(pmeta, "generation", 0);
    if (gen && !json_equal(json_object_get(obj, "spec"), json_object_get(prev, "spec")))
        gen++;
    if (gen)
        json_object_set_new(meta, "generation", json_integer(gen));
    s->rv++;
    set_rv(meta, s->rv);
    json_object_set_new(obj, "apiVersion", json_string(res->api_version));
    json_object_set_new(obj, "kind", json_string(res->kind));
    json_incref(prev);
    json_object_set_new(bucket, key, obj);
    record(s, STORE_MODIFIED, res, obj, prev);
    json_decref(prev);
    if (s->on_write)
        s->on_write(s->on_write_ctx, res, obj, false);
    return obj;
}

json_t *store_remove(struct store *s, const struct resource *res, const char *ns, const char *name,
                     struct err *err)
{
    char key[600];
    key_of(res, ns, name, key, sizeof(key));
    json_t *bucket = s->objects[resource_index(res)];
    json_t *prev = json_object_get(bucket, key);
    if (!prev) {
        store_not_found(err, res, name);
        return NULL;
    }
    json_t *last = json_deep_copy(prev);
    s->rv++;
    set_rv(kobj(last, "metadata"), s->rv);
    record(s, STORE_DELETED, res, last, prev);
    json_object_del(bucket, key);
    json_decref(last); /* the ring holds it */
    if (s->on_write)
        s->on_write(s->on_write_ctx, res, last, true);
    return last;
}

json_t *store_apply(struct store *s, const struct resource *res, json_t *obj)
{
    json_t *meta = kobj(obj, "metadata");
    char key[600];
    key_of(res, kstr(meta, "namespace"), kstr(meta, "name"), key, sizeof(key));
    json_t *bucket = s->objects[resource_index(res)];
    json_t *prev = json_incref(json_object_get(bucket, key));
    s->rv++;
    json_object_set_new(bucket, key, obj);
    record(s, prev ? STORE_MODIFIED : STORE_ADDED, res, obj, prev);
    json_decref(prev);
    return obj;
}

void store_drop(struct store *s, const struct resource *res, const char *ns, const char *name)
{
    char key[600];
    key_of(res, ns, name, key, sizeof(key));
    json_t *bucket = s->objects[resource_index(res)];
    json_t *prev = json_object_get(bucket, key);
    if (!prev)
        return;
    s->rv++;
    record(s, STORE_DELETED, res, prev, prev);
    json_object_del(bucket, key);
}

static int cmp_key(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

json_t **store_list(struct store *s, const struct resource *res, const char *ns, size_t *n)
{
    json_t *bucket = s->objects[resource_index(res)];
    size_t total = json_object_size(bucket), count = 0;
    const char **keys = xcalloc(total + 1, sizeof(char *));
    size_t nslen = ns ? strlen(ns) : 0;
    const char *key;
    json_t *v;
    json_object_foreach (bucket, key, v) {
        if (res->namespaced && nslen && (strncmp(key, ns, nslen) || key[nslen] != '/'))
            continue;
        keys[count++] = key;
    }
    qsort(keys, count, sizeof(char *), cmp_key);
    json_t **out = xcalloc(count + 1, sizeof(json_t *));
    for (size_t i = 0; i < count; i++)
        out[i] = json_incref(json_object_get(bucket, keys[i]));
    free(keys);
    *n = count;
    return out;
}

size_t store_count(struct store *s, const struct resource *res)
{
    return json_object_size(s->objects[resource_index(res)]);
}

void store_list_free(json_t **objs, size_t n)
{
    for (size_t i = 0; i < n; i++)
        json_decref(objs[i]);
    free(objs);
}
