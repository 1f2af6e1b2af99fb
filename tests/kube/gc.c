/*
 * gc: deletion, finalizers and owner references. Dependents are searched among pods and
 * services (the only kinds the simulated controllers create) in the owner's namespace.
 * Lock: world lock held by the caller.
 */
#include "tests/kube/gc.h"

#include "core/clock.h"
#include "core/crypto.h"
#include "core/jsonx.h"
#include "tests/kube/store.h"
#include "tests/kube/world.h"

char *gc_child_uid(const char *owner_uid, const char *name, char *out)
{
    char text[300], hex[SHA256_HEX_LEN];
    snprintf(text, sizeof(text), "%s/%s", owner_uid, name);
    crypto_sha256_hex(text, strlen(text), hex);
    snprintf(out, 37, "%.8s-%.4s-4%.3s-a%.3s-%.12s", hex, hex + 8, hex + 13, hex + 17, hex + 20);
    return out;
}

static bool owned_by(const json_t *obj, const char *uid, const char *child_uid)
{
    size_t i;
    json_t *ref;
    json_array_foreach (kpath(obj, "metadata.ownerReferences"), i, ref) {
        const char *u = kstr(ref, "uid");
        if (!strcmp(u, uid) || (child_uid && !strcmp(u, child_uid)))
            return true;
    }
    return false;
}

/* Calls fn on every dependent of owner; returns how many there are. */
static size_t
dependents(struct world *w, const json_t *owner, const struct resource *owner_res,
           void (*fn)(struct world *, const struct resource *, const json_t *, void *), void *ctx)
{
    const char *uid = kstr(json_object_get(owner, "metadata"), "uid");
    char child[40];
    const char *child_uid = NULL;
    if (!strcmp(owner_res->plural, "trainjobs")) {
        char name[300];
        snprintf(name, sizeof(name), "%s-node-0", kstr(json_object_get(owner, "metadata"), "name"));
        child_uid = gc_child_uid(uid, name, child);
    }
    const char *ns = kstr(json_object_get(owner, "metadata"), "namespace");
    const char *kinds[] = { "pods", "services" };
    size_t count = 0;
    for (size_t k = 0; k < 2; k++) {
        const struct resource *res = resource_lookup("", "v1", kinds[k]);
        size_t n;
        json_t **objs = store_list(w->store, res, ns, &n);
        for (size_t i = 0; i < n; i++) {
            if (!owned_by(objs[i], uid, child_uid))
                continue;
            count++;
            if (fn)
                fn(w, res, objs[i], ctx);
        }
        store_list_free(objs, n);
    }
    return count;
}

static void delete_dependent(struct world *w, const struct resource *res, const json_t *obj,
                             void *ctx)
{
    (void)ctx;
    if (kpath(obj, "metadata.deletionTimestamp"))
        return;
    const json_t *m = json_object_get(obj, "metadata");
    json_decref(gc_delete(w, res, kstr(m, "namespace"), kstr(m, "name"), "Background", -1, NULL));
}

static void orphan_dependent(struct world *w, const struct resource *res, const json_t *obj,
                             void *ctx)
{
    const char *uid = ctx;
    json_t *copy = json_deep_copy(obj);
    json_t *refs = kpath(copy, "metadata.ownerReferences");
    for (size_t i = json_array_size(refs); i-- > 0;)
        if (!strcmp(kstr(json_array_get(refs, i), "uid"), uid))
            json_array_remove(refs, i);
    if (!json_array_size(refs))
        json_object_del(kobj(copy, "metadata"), "ownerReferences");
    store_replace(w->store, res, copy, NULL);
}

bool gc_finalize(struct world *w, const struct resource *res, const json_t *obj)
{
    const json_t *m = json_object_get(obj, "metadata");
    if (!json_object_get(m, "deletionTimestamp") ||
        json_array_size(json_object_get(m, "finalizers")) > 0)
        return false;
    store_remove(w->store, res, kstr(m, "namespace"), kstr(m, "name"), NULL);
    return true;
}

static bool pod_needs_grace(const json_t *pod, int64_t grace)
{
    const char *phase = kstr(kpath(pod, "status"), "phase");
    return grace > 0 && kstr(kpath(pod, "spec"), "nodeName")[0] && strcmp(phase, "Succeeded") &&
           strcmp(phase, "Failed");
}

/* Marks obj deleted (a new version); returns a new reference to it. */
static json_t *mark_deleted(struct world *w, const struct resource *res, const json_t *obj,
                            int64_t grace, bool foreground)
{
    json_t *copy = json_deep_copy(obj);
    json_t *m = kobj(copy, "metadata");
    if (!json_object_get(m, "deletionTimestamp")) {
        ktime_set(m, "deletionTimestamp", clock_now_ns() + grace * NS_PER_SEC);
        json_object_set_new(m, "deletionGracePeriodSeconds", json_integer(grace));
    }
    if (foreground) {
        json_t *fins = json_object_get(m, "finalizers");
        if (!fins)
            json_object_set_new(m, "finalizers", fins = json_array());
        json_array_append_new(fins, json_string("foregroundDeletion"));
    }
    return json_incref(store_replace(w->store, res, copy, NULL));
}

json_t *gc_delete(struct world *w, const struct resource *res, const char *ns, const char *name,
                  const char *propagation, int64_t grace, struct err *err)
{
    json_t *obj = store_get(w->store, res, ns, name);
    if (!obj) {
        store_not_found(err, res, name);
        return NULL;
    }
    if (w->remote) { /* the real API server and garbage collector do the rest */
        w->remote->del(w->remote->ctx, res, obj, propagation, grace, false);
        json_t *copy = json_deep_copy(obj);
        json_t *m = kobj(copy, "metadata");
        if (!json_object_get(m, "deletionTimestamp"))
            ktime_set(m, "deletionTimestamp", clock_now_ns());
        return json_incref(store_apply(w->store, res, copy));
    }
    const char *policy = propagation && propagation[0] ? propagation : "Background";
    bool is_pod = res->table == TABLE_POD;
    if (is_pod && grace < 0)
        grace = jsonx_int(kpath(obj, "spec"), "terminationGracePeriodSeconds", 30);
    if (!strcmp(policy, "Orphan")) {
        dependents(w, obj, res, orphan_dependent, (void *)kstr(kpath(obj, "metadata"), "uid"));
    } else if (!strcmp(policy, "Foreground") && dependents(w, obj, res, NULL, NULL)) {
        json_t *marked = mark_deleted(w, res, obj, 0, true);
        dependents(w, marked, res, delete_dependent, NULL);
        return marked;
    } else {
        dependents(w, obj, res, delete_dependent, NULL);
    }
    obj = store_get(w->store, res, ns, name);
    if (json_array_size(kpath(obj, "metadata.finalizers")) > 0 ||
        (is_pod && pod_needs_grace(obj, grace)))
        return mark_deleted(w, res, obj, is_pod ? grace : 0, false);
    return json_incref(store_remove(w->store, res, ns, name, err));
}

static void finish_foreground(struct world *w, const struct resource *res, const json_t *obj)
{
    json_t *fins = kpath(obj, "metadata.finalizers");
    size_t i;
    json_t *f;
    json_array_foreach (fins, i, f) {
        if (strcmp(json_string_value(f), "foregroundDeletion"))
            continue;
        if (dependents(w, obj, res, NULL, NULL))
            return;
        json_t *copy = json_deep_copy(obj);
        json_array_remove(kpath(copy, "metadata.finalizers"), i);
        json_t *stored = store_replace(w->store, res, copy, NULL);
        gc_finalize(w, res, stored);
        return;
    }
}

void gc_tick(struct world *w)
{
    if (w->remote)
        return;
    for (size_t r = 0; r < resource_count; r++) {
        const struct resource *res = &resource_table[r];
        if (!res->custom)
            continue;
        size_t n;
        json_t **objs = store_list(w->store, res, NULL, &n);
        for (size_t i = 0; i < n; i++)
            if (kpath(objs[i], "metadata.deletionTimestamp"))
                finish_foreground(w, res, objs[i]);
        store_list_free(objs, n);
    }
}
