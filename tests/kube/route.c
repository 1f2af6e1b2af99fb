/*
 * route: turns a request path into a target (resource, namespace, name, subresource, verb),
 * counts it, applies a fault injected through the control API, and dispatches to discovery,
 * the control API or the resource handlers. Paths follow kube-apiserver's installer:
 *   /api/v1/<res>[/<name>[/<sub>]]            cluster-scoped, or namespaced across namespaces
 *   /api/v1/namespaces/<ns>/<res>[/<name>[/<sub>]]
 *   /apis/<group>/<version>/...               the same under a group
 * Unknown paths get kube-apiserver's plain "404 page not found".
 */
#include "tests/kube/control.h"
#include "tests/kube/discovery.h"
#include "tests/kube/rest.h"
#include "tests/kube/status.h"
#include "tests/kube/world.h"

static void not_found(struct reply *rep)
{
    reply_text(rep, 404, "404 page not found\n", 19);
}

static int split(const char *path, char seg[8][254])
{
    int n = 0;
    for (const char *p = path; *p && n < 8;) {
        while (*p == '/')
            p++;
        if (!*p)
            break;
        size_t len = strcspn(p, "/");
        if (len >= 254)
            return -1;
        snprintf(seg[n++], 254, "%.*s", (int)len, p);
        p += len;
    }
    return n;
}

static const char *verb_of(const struct request *req, const struct target *t)
{
    const char *m = req->method;
    const char *watch = request_query(req, "watch");
    if (!strcmp(m, "GET")) {
        if (t->name[0])
            return "get";
        return watch && (!strcmp(watch, "true") || !strcmp(watch, "1")) ? "watch" : "list";
    }
    if (!strcmp(m, "POST"))
        return "create";
    if (!strcmp(m, "PUT"))
        return "update";
    if (!strcmp(m, "PATCH"))
        return "patch";
    if (!strcmp(m, "DELETE"))
        return t->name[0] ? "delete" : "deletecollection";
    return NULL;
}

/* Fills t from the segments after the group/version; -1 when the path names nothing. */
static int parse_target(char (*seg)[254], int n, const char *group, const char *version,
                        struct target *t)
{
    int i = 0;
    if (n >= 3 && !strcmp(seg[0], "namespaces")) {
        snprintf(t->ns, sizeof(t->ns), "%s", seg[1]);
        i = 2;
    }
    t->res = resource_lookup(group, version, seg[i]);
    if (!t->res || n - i > 3)
        return -1;
    t->store_res = t->res->view_of ? resource_lookup("", "v1", t->res->view_of) : t->res;
    if (i == 2 && !t->res->namespaced)
        return -1;
    if (n - i >= 2)
        snprintf(t->name, sizeof(t->name), "%s", seg[i + 1]);
    if (n - i == 3) {
        if (!resource_word_in(t->res->subresources, seg[i + 2]))
            return -1;
        snprintf(t->sub, sizeof(t->sub), "%s", seg[i + 2]);
    }
    return 0;
}

/* A fault from /_test/faults applies to the next matching requests (lock held). */
static bool take_fault(struct world *w, const struct target *t, struct reply *rep)
{
    struct fault *f = &w->fault;
    if (f->count <= 0 || (f->verb[0] && strcmp(f->verb, t->verb)) ||
        (f->resource[0] && strcmp(f->resource, t->res->plural)))
        return false;
    f->count--;
    json_t *st = status_new(f->code, f->reason, f->message);
    if (f->retry_after > 0) {
        json_object_set_new(st, "details", json_pack("{s:i}", "retryAfterSeconds", f->retry_after));
        rep->retry_after = f->retry_after;
    }
    reply_json(rep, f->code, st);
    return true;
}

void route_request(struct request *req, struct reply *rep)
{
    const char *p = req->path;
    if (!strncmp(p, "/_test/", 7)) {
        control_handle(req, rep);
        return;
    }
    world_lock(req->w);
    req->w->requests++;
    world_unlock(req->w);
    if (!strcmp(p, "/healthz") || !strcmp(p, "/livez") || !strcmp(p, "/readyz")) {
        reply_text(rep, 200, "ok", 2);
        return;
    }
    char seg[8][254];
    int n = split(p, seg);
    struct target t = { 0 };
    int base = 0;
    const char *group = "", *version = "";
    if (n >= 2 && !strcmp(seg[0], "api"))
        version = seg[1], base = 2;
    else if (n >= 3 && !strcmp(seg[0], "apis"))
        group = seg[1], version = seg[2], base = 3;
    if (base && n == base && resource_group_version(group, version)) {
        reply_json(rep, 200, discovery_resource_list(group, version));
        return;
    }
    if (!base || n == base) {
        if (!discovery_handle(req, rep))
            not_found(rep);
        return;
    }
    if (parse_target(seg + base, n - base, group, version, &t) < 0 ||
        !(t.verb = verb_of(req, &t))) {
        not_found(rep);
        return;
    }
    world_lock(req->w);
    bool faulted = take_fault(req->w, &t, rep);
    world_unlock(req->w);
    if (!faulted)
        rest_handle(req, &t, rep);
}
