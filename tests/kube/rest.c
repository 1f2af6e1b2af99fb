/*
 * rest: resource verbs. Each handler takes the world lock for its whole read-check-write, so
 * a request sees and changes one consistent state; the lock is never held while writing to the
 * network (replies are built in memory, streams are pulled later by http.c).
 * Not here: watch (watch.c), pods/log (logs.c), deletion semantics (gc.c), admission rules
 * (admission.c), patch formats (patch.c), tables (table.c).
 */
#include "tests/kube/rest.h"

#include "core/clock.h"
#include "core/crypto.h"
#include "core/jsonx.h"
#include "core/parse.h"
#include "core/xalloc.h"
#include "core/yamljson.h"
#include "tests/kube/admission.h"
#include "tests/kube/eventsv1.h"
#include "tests/kube/gc.h"
#include "tests/kube/list.h"
#include "tests/kube/logs.h"
#include "tests/kube/patch.h"
#include "tests/kube/status.h"
#include "tests/kube/store.h"
#include "tests/kube/table.h"
#include "tests/kube/watch.h"
#include "tests/kube/world.h"

void rest_error(struct reply *rep, const struct target *t, const struct err *err)
{
    rep->retry_after = err->retry_after;
    reply_json(rep, status_code(err),
               status_from_err(err, t ? t->res : NULL, t && t->name[0] ? t->name : NULL));
}

json_t *rest_present(const struct target *t, json_t *obj)
{
    return t->res->view_of ? eventsv1_from_core(obj) : json_incref(obj);
}

/* Replies with obj (steals it) as a Table or as the resource presents it. */
static void reply_object(struct request *req, struct reply *rep, const struct target *t, int code,
                         json_t *obj)
{
    if (table_wanted(request_header(req, "Accept"))) {
        json_t *const objs[] = { obj };
        json_t *table = table_render(t->store_res, objs, 1, request_query(req, "includeObject"),
                                     clock_now_ns());
        json_object_set_new(kobj(table, "metadata"), "resourceVersion",
                            json_incref(kpath(obj, "metadata.resourceVersion")));
        reply_json(rep, code, table);
        json_decref(obj);
        return;
    }
    reply_json(rep, code, rest_present(t, obj));
    json_decref(obj);
}

/* Decodes a JSON (or YAML, for server-side apply) body; ERR_INVALID (400) when malformed. */
static json_t *decode_body(struct request *req, struct err *err)
{
    const char *ct = request_header(req, "Content-Type");
    if (!req->body_len)
        return status_set(err, ERR_INVALID, "BadRequest", "the body of the request was empty"),
               NULL;
    json_t *v = ct && strstr(ct, "yaml") ? yamljson_load(req->body, req->body_len, 64, 1 << 24, err)
                                         : jsonx_loadb(req->body, req->body_len, 64, err);
    if (v && !json_is_object(v) && !json_is_array(v)) {
        json_decref(v);
        v = NULL;
        err_set(err, ERR_INVALID, "the body of the request was not a JSON object");
    }
    if (!v && err)
        snprintf(err->reason, sizeof(err->reason), "BadRequest");
    return v;
}

/* Fills in or checks apiVersion, kind and namespace of a decoded object. */
static int check_identity(json_t *obj, const struct target *t, struct err *err)
{
    const char *av = kstr(obj, "apiVersion"), *kind = kstr(obj, "kind");
    if ((av[0] && strcmp(av, t->res->api_version)) || (kind[0] && strcmp(kind, t->res->kind)))
        return status_set(err, ERR_INVALID, "BadRequest",
                          "the API version in the data (%s) does not match the expected API "
                          "version (%s)",
                          av, t->res->api_version);
    json_t *meta = kobj(obj, "metadata");
    const char *ns = kstr(meta, "namespace");
    if (t->res->namespaced && ns[0] && strcmp(ns, t->ns))
        return status_set(err, ERR_INVALID, "BadRequest",
                          "the namespace of the provided object does not match the namespace "
                          "sent on the request");
    if (t->res->namespaced)
        json_object_set_new(meta, "namespace", json_string(t->ns));
    if (t->name[0] && strcmp(kstr(meta, "name"), t->name))
        return status_set(err, ERR_INVALID, "BadRequest",
                          "the name of the object (%s) does not match the name on the URL (%s)",
                          kstr(meta, "name"), t->name);
    return 0;
}

/* What the server sets on create besides metadata (pods start Pending, namespaces Active). */
static void prepare_create(const struct target *t, json_t *obj)
{
    if (resource_word_in(t->res->subresources, "status") && t->res->table != TABLE_NODE)
        json_object_del(obj, "status");
    if (t->res->table == TABLE_POD)
        json_object_set_new(obj, "status",
                            json_pack("{s:s, s:s}", "phase", "Pending", "qosClass", "BestEffort"));
    if (t->res->table == TABLE_NAMESPACE)
        json_object_set_new(obj, "status", json_pack("{s:s}", "phase", "Active"));
}

static bool dry_run(struct request *req)
{
    const char *d = request_query(req, "dryRun");
    return d && !strcmp(d, "All");
}

static void do_create(struct request *req, const struct target *t, struct reply *rep)
{
    struct err err;
    err_init(&err);
    struct target named = *t; /* a create's Status names the object from the body */
    json_t *stored = NULL, *obj = decode_body(req, &err);
    if (obj) {
        snprintf(named.name, sizeof(named.name), "%s", kstr(kpath(obj, "metadata"), "name"));
        if (check_identity(obj, t, &err) == 0) {
            prepare_create(t, obj);
            world_lock(req->w);
            if (admission_review(req->w, t->res, obj, NULL, &err) == 0) {
                if (dry_run(req)) {
                    char uid[40];
                    json_object_set_new(kobj(obj, "metadata"), "uid", json_string(kuuid(uid)));
                    stored = json_incref(obj);
                } else if ((stored = store_create(req->w->store, t->res, json_incref(obj), &err))) {
                    json_incref(stored);
                    world_changed(req->w);
                }
            }
            world_unlock(req->w);
        }
        json_decref(obj);
    }
    if (stored)
        reply_object(req, rep, t, 201, stored);
    else
        rest_error(rep, &named, &err);
    err_release(&err);
}

/* The common end of PUT and PATCH (lock held): resourceVersion precondition, subresource
 * rules, admission, store. Steals next. Returns the stored object (new reference) or NULL. */
static json_t *write_object(struct request *req, const struct target *t, const json_t *cur,
                            json_t *next, struct err *err)
{
    json_t *meta = kobj(next, "metadata"), *cmeta = json_object_get(cur, "metadata");
    const char *rv = kstr(meta, "resourceVersion");
    json_t *result = NULL;
    if (rv[0] && strcmp(rv, kstr(cmeta, "resourceVersion"))) {
        status_set(err, ERR_CONFLICT, "Conflict",
                   "Operation cannot be fulfilled on %s \"%s\": the object has been modified; "
                   "please apply your changes to the latest version and try again",
                   t->res->qualified, t->name);
        goto out;
    }
    if (!strcmp(t->sub, "status")) { /* only status changes through /status */
        json_t *st = json_incref(json_object_get(next, "status"));
        json_decref(next);
        next = json_deep_copy(cur);
        if (st)
            json_object_set_new(next, "status", st);
        meta = kobj(next, "metadata");
    } else if (resource_word_in(t->res->subresources, "status")) {
        json_t *st = json_object_get(cur, "status");
        if (st)
            json_object_set(next, "status", st);
        else
            json_object_del(next, "status");
    }
    json_object_set(meta, "resourceVersion", json_object_get(cmeta, "resourceVersion"));
    json_t *dt = json_object_get(cmeta, "deletionTimestamp");
    if (dt)
        json_object_set(meta, "deletionTimestamp", dt);
    if (!t->sub[0] && admission_review(req->w, t->res, next, cur, err) < 0)
        goto out;
    if (json_equal(next, cur)) { /* a no-op write keeps the resourceVersion, as the server does */
        result = json_incref((json_t *)cur);
        goto out;
    }
    if (dry_run(req)) {
        result = json_incref(next);
        goto out;
    }
    json_t *stored = store_replace(req->w->store, t->res, json_incref(next), err);
    if (stored) {
        result = json_incref(stored);
        gc_finalize(req->w, t->res, stored);
        world_changed(req->w);
    }
out:
    json_decref(next);
    return result;
}

static void do_update(struct request *req, const struct target *t, struct reply *rep)
{
    struct err err;
    err_init(&err);
    json_t *result = NULL, *obj = decode_body(req, &err);
    if (!obj || check_identity(obj, t, &err) < 0) {
        json_decref(obj);
        goto out;
    }
    world_lock(req->w);
    json_t *cur = store_get(req->w->store, t->res, t->ns, t->name);
    if (!cur) {
        store_not_found(&err, t->res, t->name);
        json_decref(obj);
    } else if (t->res->custom && !t->sub[0] &&
               !kstr(json_object_get(obj, "metadata"), "resourceVersion")[0]) {
        err_field(&err, "metadata.resourceVersion",
                  "Invalid value: 0x0: must be specified for an update");
        json_decref(obj);
    } else {
        result = write_object(req, t, cur, obj, &err);
    }
    world_unlock(req->w);
out:
    if (result)
        reply_object(req, rep, t, 200, result);
    else
        rest_error(rep, t, &err);
    err_release(&err);
}

/* Applies the request's patch to a copy of cur; NULL with err on a bad patch. */
static json_t *apply_patch(struct request *req, const struct target *t, const json_t *cur,
                           const json_t *patch, struct err *err)
{
    const char *ct = request_header(req, "Content-Type");
    ct = ct ? ct : "";
    json_t *next = json_deep_copy(cur);
    if (!strncmp(ct, "application/json-patch+json", 27)) {
        if (patch_json(&next, patch, err) < 0) {
            json_decref(next);
            return NULL;
        }
    } else if (!strncmp(ct, "application/merge-patch+json", 28) ||
               !strncmp(ct, "application/apply-patch+yaml", 28) ||
               (!strncmp(ct, "application/strategic-merge-patch+json", 38) && !t->res->custom)) {
        patch_merge(&next, patch);
    } else {
        json_decref(next);
        status_set(err, ERR_UNSUPPORTED, "UnsupportedMediaType",
                   "the body of the request was in an unknown format - accepted media types "
                   "include: application/json-patch+json, application/merge-patch+json, "
                   "application/apply-patch+yaml%s",
                   t->res->custom ? "" : ", application/strategic-merge-patch+json");
        return NULL;
    }
    return next;
}

static void do_patch(struct request *req, const struct target *t, struct reply *rep)
{
    struct err err;
    err_init(&err);
    json_t *result = NULL, *patch = decode_body(req, &err);
    const char *ct = request_header(req, "Content-Type");
    bool apply = ct && !strncmp(ct, "application/apply-patch+yaml", 28), created = false;
    if (!patch)
        goto out;
    world_lock(req->w);
    json_t *cur = store_get(req->w->store, t->res, t->ns, t->name);
    if (!cur && apply && !t->sub[0]) { /* server-side apply creates */
        json_t *obj = json_deep_copy(patch);
        if (check_identity(obj, t, &err) == 0) {
            prepare_create(t, obj);
            if (admission_review(req->w, t->res, obj, NULL, &err) == 0 &&
                (result = store_create(req->w->store, t->res, json_incref(obj), &err))) {
                json_incref(result);
                created = true;
                world_changed(req->w);
            }
        }
        json_decref(obj);
    } else if (!cur) {
        store_not_found(&err, t->res, t->name);
    } else {
        json_t *next = apply_patch(req, t, cur, patch, &err);
        if (next && check_identity(next, t, &err) < 0) { /* a patch may not rename or retype */
            json_decref(next);
            next = NULL;
        }
        if (next)
            result = write_object(req, t, cur, next, &err);
    }
    world_unlock(req->w);
out:
    json_decref(patch);
    if (result)
        reply_object(req, rep, t, created ? 201 : 200, result);
    else
        rest_error(rep, t, &err);
    err_release(&err);
}

/* DeleteOptions from the body (kubectl) or the query (curl, client-go for collections). */
struct delete_opts {
    char propagation[32];
    int64_t grace;
    char uid[64], rv[32];
};

static void delete_options(struct request *req, struct delete_opts *o)
{
    memset(o, 0, sizeof(*o));
    o->grace = -1;
    json_t *body = req->body_len ? jsonx_loadb(req->body, req->body_len, 16, NULL) : NULL;
    const char *pp = request_query(req, "propagationPolicy");
    const char *gp = request_query(req, "gracePeriodSeconds");
    if (body) {
        pp = kstr(body, "propagationPolicy")[0] ? kstr(body, "propagationPolicy") : pp;
        if (json_is_true(json_object_get(body, "orphanDependents"))) /* deprecated form */
            pp = "Orphan";
        o->grace = jsonx_int(body, "gracePeriodSeconds", -1);
        snprintf(o->uid, sizeof(o->uid), "%s", kstr(kpath(body, "preconditions"), "uid"));
        snprintf(o->rv, sizeof(o->rv), "%s", kstr(kpath(body, "preconditions"), "resourceVersion"));
    }
    snprintf(o->propagation, sizeof(o->propagation), "%s", pp ? pp : "");
    if (gp && o->grace < 0 && parse_int64(gp, 0, INT32_MAX, &o->grace) < 0)
        o->grace = -1;
    json_decref(body);
}

static void do_delete(struct request *req, const struct target *t, struct reply *rep)
{
    struct err err;
    err_init(&err);
    struct delete_opts o;
    delete_options(req, &o);
    json_t *result = NULL;
    world_lock(req->w);
    json_t *cur = store_get(req->w->store, t->res, t->ns, t->name);
    const json_t *m = json_object_get(cur, "metadata");
    if (!cur) {
        store_not_found(&err, t->res, t->name);
    } else if ((o.uid[0] && strcmp(o.uid, kstr(m, "uid"))) ||
               (o.rv[0] && strcmp(o.rv, kstr(m, "resourceVersion")))) {
        status_set(&err, ERR_CONFLICT, "Conflict",
                   "Operation cannot be fulfilled on %s \"%s\": Precondition failed: UID in "
                   "precondition: %s, UID in object meta: %s",
                   t->res->qualified, t->name, o.uid, kstr(m, "uid"));
    } else if (dry_run(req)) {
        result = json_incref(cur);
    } else {
        result = gc_delete(req->w, t->res, t->ns, t->name, o.propagation, o.grace, &err);
        if (t->res->table == TABLE_NAMESPACE)
            list_delete_namespace(req->w, t->name);
        world_changed(req->w);
    }
    world_unlock(req->w);
    if (result)
        reply_object(req, rep, t, 200, result);
    else
        rest_error(rep, t, &err);
    err_release(&err);
}

void rest_handle(struct request *req, const struct target *t, struct reply *rep)
{
    const char *v = t->verb;
    if (!strcmp(t->sub, "log")) {
        if (strcmp(v, "get"))
            reply_json(rep, 405,
                       status_new(405, "MethodNotAllowed",
                                  "the server does not allow this method on the "
                                  "requested resource"));
        else
            logs_handle(req, t, rep);
        return;
    }
    if (!strcmp(v, "get")) {
        struct err err;
        err_init(&err);
        world_lock(req->w);
        json_t *obj = json_incref(store_get(req->w->store, t->store_res, t->ns, t->name));
        if (!obj)
            store_not_found(&err, t->res, t->name);
        world_unlock(req->w);
        if (obj)
            reply_object(req, rep, t, 200, obj);
        else
            rest_error(rep, t, &err);
        err_release(&err);
    } else if (!strcmp(v, "list")) {
        list_handle(req, t, rep);
    } else if (!strcmp(v, "watch")) {
        watch_handle(req, t, rep);
    } else if (t->res->view_of) {
        reply_json(rep, 405,
                   status_new(405, "MethodNotAllowed",
                              "the test API server serves events.k8s.io/v1 read-only"));
    } else if (!strcmp(v, "deletecollection")) {
        list_handle(req, t, rep);
    } else if (!strcmp(v, "create") && !t->sub[0]) {
        do_create(req, t, rep);
    } else if (!strcmp(v, "update")) {
        do_update(req, t, rep);
    } else if (!strcmp(v, "patch")) {
        do_patch(req, t, rep);
    } else if (!strcmp(v, "delete") && !t->sub[0]) {
        do_delete(req, t, rep);
    } else {
        reply_json(rep, 405,
                   status_new(405, "MethodNotAllowed",
                              "the server does not allow this method on the requested "
                              "resource"));
    }
}
