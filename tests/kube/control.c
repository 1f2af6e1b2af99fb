/*
 * control: decodes the JSON body, takes the world lock, and calls the module that owns the
 * state (kubelet, nodes, store, auth). Errors are Kubernetes Status objects too, so a test can
 * read them with the same jq as everything else.
 */
#include "tests/kube/control.h"

#include "core/clock.h"
#include "core/jsonx.h"
#include "tests/kube/auth.h"
#include "tests/kube/kubelet.h"
#include "tests/kube/kubelet_script.h"
#include "tests/kube/nodes.h"
#include "tests/kube/sim.h"
#include "tests/kube/status.h"
#include "tests/kube/store.h"
#include "tests/kube/world.h"

/* Resolves {"pod": name} or {"job": name, "rank": r} to a pod name (out >= 254 bytes) and,
 * when ns is "" (no "namespace" given), the namespace of the first pod that matches (ns_out
 * >= 254 bytes). */
static int resolve_pod(struct world *w, const json_t *body, const char *ns, char *out, char *ns_out,
                       struct err *err)
{
    const char *pod = kstr(body, "pod"), *job = kstr(body, "job");
    const struct resource *pods_res = resource_lookup("", "v1", "pods");
    snprintf(ns_out, 254, "%s", ns[0] ? ns : "default");
    if (pod[0] && !ns[0]) {
        size_t n;
        json_t **all = store_list(w->store, pods_res, NULL, &n);
        for (size_t i = 0; i < n; i++)
            if (!strcmp(kstr(json_object_get(all[i], "metadata"), "name"), pod)) {
                snprintf(ns_out, 254, "%s", kstr(json_object_get(all[i], "metadata"), "namespace"));
                break;
            }
        store_list_free(all, n);
    }
    if (pod[0]) {
        snprintf(out, 254, "%s", pod);
        return 0;
    }
    json_int_t rank = jsonx_int(body, "rank", -1);
    if (!job[0] || rank < 0)
        return status_set(err, ERR_INVALID, "BadRequest", "give \"pod\", or \"job\" and \"rank\"");
    size_t n;
    json_t **pods = store_list(w->store, pods_res, ns[0] ? ns : NULL, &n);
    int rc = -1;
    for (size_t i = 0; i < n && rc < 0; i++) {
        const json_t *labels = kpath(pods[i], "metadata.labels");
        bool mine = !strcmp(kstr(labels, "training.kubeflow.org/job-name"), job) ||
                    !strcmp(kstr(labels, "jobset.sigs.k8s.io/jobset-name"), job);
        const char *phase = kstr(kpath(pods[i], "status"), "phase");
        if (!mine || kpath(pods[i], "metadata.deletionTimestamp") || !strcmp(phase, "Failed"))
            continue;
        if (script_rank(pods[i], json_array_get(kpath(pods[i], "spec.containers"), 0)) == rank) {
            snprintf(out, 254, "%s", kstr(kpath(pods[i], "metadata"), "name"));
            snprintf(ns_out, 254, "%s", kstr(kpath(pods[i], "metadata"), "namespace"));
            rc = 0;
        }
    }
    store_list_free(pods, n);
    if (rc < 0)
        status_set(err, ERR_NOT_FOUND, "NotFound", "no running pod of job %s has rank %lld", job,
                   (long long)rank);
    return rc;
}

static int pod_op(struct world *w, const char *op, const json_t *body, struct err *err)
{
    const char *ctr = kstr(body, "container");
    char pod[254], ns[254];
    if (resolve_pod(w, body, kstr(body, "namespace"), pod, ns, err) < 0)
        return -1;
    struct kubelet *k = sim_kubelet(w);
    struct kubelet_exit how = { .code = (int)jsonx_int(body, "exitCode", 1),
                                .reason = kstr(body, "reason")[0] ? kstr(body, "reason") : NULL };
    if (!strcmp(op, "exit")) {
        how.restart = jsonx_bool(body, "restart", false);
        return kubelet_exit(w, k, ns, pod, ctr, &how, err);
    }
    if (!strcmp(op, "oomkill")) {
        how.oom = true;
        return kubelet_exit(w, k, ns, pod, ctr, &how, err);
    }
    if (!strcmp(op, "restart")) {
        how.code = (int)jsonx_int(body, "exitCode", 137);
        how.restart = true;
        return kubelet_exit(w, k, ns, pod, ctr, &how, err);
    }
    if (!strcmp(op, "print"))
        return kubelet_print(w, k, ns, pod, ctr, json_object_get(body, "lines"), err);
    return status_set(err, ERR_NOT_FOUND, "NotFound", "unknown pod operation %s", op);
}

static int node_op(struct world *w, const char *op, const json_t *body, struct err *err)
{
    const char *node = kstr(body, "node");
    const struct resource *res = resource_lookup("", "v1", "nodes");
    if (!strcmp(op, "lose")) {
        if (nodes_lose(w, node, err) < 0)
            return -1;
        kubelet_node_lost(w, sim_kubelet(w), node, false);
        return 0;
    }
    if (!strcmp(op, "delete")) {
        if (!store_remove(w->store, res, NULL, node, err))
            return -1;
        kubelet_node_lost(w, sim_kubelet(w), node, true);
        return 0;
    }
    if (!strcmp(op, "recover"))
        return nodes_recover(w, node, err);
    if (!strcmp(op, "condition"))
        return nodes_set_condition(w, node, json_object_get(body, "condition"), err);
    return status_set(err, ERR_NOT_FOUND, "NotFound", "unknown node operation %s", op);
}

static int set_fault(struct world *w, const json_t *body, struct err *err)
{
    struct fault *f = &w->fault;
    int code = (int)jsonx_int(body, "code", 500);
    if (code < 400 || code > 599)
        return status_set(err, ERR_INVALID, "BadRequest", "code must be a 4xx or 5xx status");
    memset(f, 0, sizeof(*f));
    f->count = (int)jsonx_int(body, "count", 1);
    f->code = code;
    f->retry_after = (int)jsonx_int(body, "retryAfterSeconds", code == 429 ? 1 : 0);
    const char *reason = kstr(body, "reason");
    if (!reason[0])
        reason = code == 429   ? "TooManyRequests"
                 : code == 403 ? "Forbidden"
                 : code == 401 ? "Unauthorized"
                 : code == 503 ? "ServiceUnavailable"
                 : code == 504 ? "Timeout"
                               : "InternalError";
    snprintf(f->reason, sizeof(f->reason), "%s", reason);
    const char *msg = kstr(body, "message");
    snprintf(f->message, sizeof(f->message), "%s",
             msg[0]        ? msg
             : code == 429 ? "Too many requests, please try again later."
                           : "injected by the test API server's control API");
    snprintf(f->verb, sizeof(f->verb), "%s", kstr(body, "verb"));
    snprintf(f->resource, sizeof(f->resource), "%s", kstr(body, "resource"));
    return 0;
}

static json_t *state(struct world *w)
{
    json_t *counts = json_object();
    for (size_t i = 0; i < resource_count; i++)
        json_object_set_new(counts, resource_table[i].plural,
                            json_integer((json_int_t)store_count(w->store, &resource_table[i])));
    return json_pack("{s:I, s:I, s:I, s:I, s:f, s:I, s:o}", "resourceVersion", store_rv(w->store),
                     "oldestResourceVersion", store_oldest_rv(w->store), "requests", w->requests,
                     "watchesOpen", w->watches_open, "speed", w->speed, "faultsPending",
                     (json_int_t)w->fault.count, "objects", counts);
}

/* Runs one control call with the lock held; fills *result for calls that return data. */
static int dispatch(struct world *w, const char *what, const json_t *body, json_t **result,
                    struct err *err)
{
    if (w->remote &&
        (!strcmp(what, "faults") || !strncmp(what, "watches/", 8) || !strncmp(what, "tokens/", 7)))
        return status_set(err, ERR_INVALID, "BadRequest",
                          "/_test/%s is the test API server's: a real API server is in front of "
                          "this simulator",
                          what);
    if (!strncmp(what, "pods/", 5))
        return pod_op(w, what + 5, body, err);
    if (!strncmp(what, "nodes/", 6))
        return node_op(w, what + 6, body, err);
    if (!strcmp(what, "watches/expire")) {
        store_compact(w->store);
        w->watch_epoch++;
        return 0;
    }
    if (!strcmp(what, "faults"))
        return set_fault(w, body, err);
    if (!strcmp(what, "speed")) {
        double s = json_number_value(json_object_get(body, "speed"));
        if (s <= 0)
            return status_set(err, ERR_INVALID, "BadRequest", "speed must be > 0");
        w->speed = s;
        return 0;
    }
    if (!strcmp(what, "tokens/revoke")) {
        auth_revoke(w->auth);
        return 0;
    }
    if (!strcmp(what, "tokens/mint")) {
        char token[160];
        *result = json_pack("{s:s}", "token",
                            auth_mint(w->auth, jsonx_int(body, "ttlSeconds", -1), token));
        return 0;
    }
    return status_set(err, ERR_NOT_FOUND, "NotFound", "unknown control call /_test/%s", what);
}

void control_handle(struct request *req, struct reply *rep)
{
    struct err err;
    err_init(&err);
    const char *what = req->path + 7;
    json_t *body = NULL, *result = NULL;
    if (!strcmp(req->method, "GET") && !strcmp(what, "state")) {
        world_lock(req->w);
        reply_json(rep, 200, state(req->w));
        world_unlock(req->w);
        return;
    }
    if (strcmp(req->method, "POST")) {
        reply_json(rep, 405, status_new(405, "MethodNotAllowed", "control calls are POSTs"));
        return;
    }
    body = req->body_len ? jsonx_loadb(req->body, req->body_len, 16, &err) : json_object();
    if (body) {
        world_lock(req->w);
        if (dispatch(req->w, what, body, &result, &err) == 0)
            world_changed(req->w);
        world_unlock(req->w);
    }
    if (err_is_set(&err))
        reply_json(rep, status_code(&err), status_from_err(&err, NULL, NULL));
    else
        reply_json(rep, 200, result ? result : json_pack("{s:s}", "status", "ok"));
    json_decref(body);
    err_release(&err);
}
