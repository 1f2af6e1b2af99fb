/*
 * policy: what a submitter may run (see policy.h). The local rules read the api's settings;
 * the cluster rules read the token's policy from the store (one indexed read, for non-admin
 * Kubernetes submissions only) and are otherwise pure: policy_grants.c matches names,
 * policy_pod.c walks manifests. Thread-safe.
 */
#include "api/policy.h"

#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "api/policy_grants.h"
#include "api/policy_pod.h"
#include "core/buf.h"
#include "core/jsonx.h"
#include "store/policies.h"

int policy_forbid(struct err *err, const char *pointer, const char *fmt, ...)
{
    char msg[ERR_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    err_set(err, ERR_FORBIDDEN, "%s: %s", pointer, msg);
    return err_field(err, pointer, "%s", msg);
}

/* Whether path is dir itself or lies under it, as text after normalising both ("a/./b",
 * "a//b" and ".." are refused by the spec already: names_abs_path). */
static bool under(const char *path, const char *dir, size_t dlen)
{
    while (dlen > 1 && dir[dlen - 1] == '/')
        dlen--;
    return strncmp(path, dir, dlen) == 0 && (path[dlen] == '\0' || path[dlen] == '/');
}

/* Whether path lies under one of the comma-separated roots. */
static bool under_any(const char *path, const char *roots)
{
    for (const char *p = roots; p && *p;) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        if (len > 0 && p[0] == '/' && under(path, p, len))
            return true;
        p = comma ? comma + 1 : NULL;
    }
    return false;
}

static int check_local(const struct api *api, enum scope scope, const struct spec_view *v,
                       struct err *err)
{
    bool admin = scope == SCOPE_ADMIN;
    if (api->local_sandbox_why && api->local_unsandboxed_refused && !admin)
        return policy_forbid(err, "/executor",
                             "local ranks cannot be sandboxed on this host (%s): only admin "
                             "tokens may run local jobs",
                             api->local_sandbox_why);
    const char *ckpt = jsonx_str(v->checkpoint, "path");
    if (!ckpt)
        return 0;
    char data[PATH_MAX];
    const char *dir = api->data_dir && realpath(api->data_dir, data) ? data : api->data_dir;
    if (dir && (under(ckpt, dir, strlen(dir)) || under(dir, ckpt, strlen(ckpt))))
        return policy_forbid(err, "/checkpoint/path",
                             "must not be the daemon's data directory or contain it");
    if (!admin && !under_any(ckpt, api->local_checkpoint_roots))
        return policy_forbid(err, "/checkpoint/path",
                             "only admin tokens choose a local checkpoint path outside "
                             "--local-checkpoint-roots (%s); leave it out to get the job's own",
                             api->local_checkpoint_roots && *api->local_checkpoint_roots
                                 ? api->local_checkpoint_roots
                                 : "none set");
    return 0;
}

/* A grant check of a native spec's field; 1 when refused. */
static int native(const struct policy_grants *g, enum policy_kind kind, const char *value,
                  const char *pointer, struct err *err)
{
    char why[ERR_MSG_MAX];
    if (!value || !policy_grants_refuse(g, kind, value, why, sizeof(why)))
        return 0;
    policy_forbid(err, pointer, "%s", why);
    return 1;
}

/* Where the job runs, as server/kube/render.c decides it (kube_render_namespace): the
 * manifest's metadata.namespace, else kubernetes.namespace, else the daemon's jobs namespace. */
static int check_namespace(const struct policy_grants *g, const struct spec_view *v, const char *at,
                           struct err *err)
{
    const json_t *m = json_object_get(v->kubernetes, "manifest");
    const char *ns = jsonx_str(json_object_get(m, "metadata"), "namespace");
    char ptr[300];
    if (ns && *ns) {
        snprintf(ptr, sizeof(ptr), "%s/metadata/namespace", at);
        return native(g, POLICY_NAMESPACE, ns, ptr, err);
    }
    ns = jsonx_str(v->kubernetes, "namespace");
    if (ns && *ns)
        return native(g, POLICY_NAMESPACE, ns, "/kubernetes/namespace", err);
    const char *def = g->cluster ? g->cluster->jobs_namespace : NULL;
    char why[ERR_MSG_MAX];
    if (!def || !*def) {
        policy_forbid(err, "/kubernetes/namespace",
                      "is required: this daemon's default namespace is not known");
        return 1;
    }
    if (!policy_grants_refuse(g, POLICY_NAMESPACE, def, why, sizeof(why)))
        return 0;
    policy_forbid(err, "/kubernetes/namespace",
                  "is not set, so the job would run in the daemon's default namespace: %s", why);
    return 1;
}

/* The node labels a native spec selects (server/kube/render.c's node_selector). */
static int check_nodes(const struct policy_grants *g, const struct spec_view *v, struct err *err)
{
    static const char *const placement[][2] = {
        { "instance_type", "node.kubernetes.io/instance-type" },
        { "zone", "topology.kubernetes.io/zone" },
        { "capacity_type", "karpenter.sh/capacity-type" },
    };
    char why[ERR_MSG_MAX];
    int refused = 0;
    for (size_t i = 0; i < sizeof(placement) / sizeof(placement[0]); i++) {
        const char *val = jsonx_str(v->placement, placement[i][0]);
        char ptr[64];
        snprintf(ptr, sizeof(ptr), "/placement/%s", placement[i][0]);
        if (val && policy_grants_refuse_node(g, placement[i][1], val, why, sizeof(why))) {
            policy_forbid(err, ptr, "%s", why);
            refused++;
        }
    }
    const char *k;
    json_t *val;
    json_object_foreach(json_object_get(v->kubernetes, "node_selector"), k, val)
    {
        if (!policy_grants_refuse_node(g, k, json_string_value(val), why, sizeof(why)))
            continue;
        struct buf ptr = BUF_INIT;
        buf_puts(&ptr, "/kubernetes/node_selector/");
        jsonx_pointer_append(&ptr, k);
        policy_forbid(err, buf_cstr(&ptr), "%s", why);
        buf_release(&ptr);
        refused++;
    }
    return refused;
}

int policy_kube_check(const struct policy_grants *g, const struct spec_view *v, const char *at,
                      struct err *err)
{
    const json_t *manifest = json_object_get(v->kubernetes, "manifest");
    int refused = check_namespace(g, v, at, err);
    if (!manifest) /* a manifest's own image is the one run, and checked in it */
        refused += native(g, POLICY_IMAGE, v->image, "/image", err);
    refused += native(g, POLICY_SERVICE_ACCOUNT, jsonx_str(v->kubernetes, "service_account"),
                      "/kubernetes/service_account", err);
    refused += native(g, POLICY_VOLUME_CLAIM, jsonx_str(v->checkpoint, "volume_claim"),
                      "/checkpoint/volume_claim", err);
    refused += check_nodes(g, v, err);
    refused += policy_pod_annotations(json_object_get(v->kubernetes, "annotations"),
                                      "/kubernetes/annotations", err);
    if (manifest)
        refused += policy_pod_check(g, manifest, at, err);
    return refused ? -1 : 0;
}

/* The token's policy: its own, else the stored "default", else the built-in one. */
static int check_token(const struct api *api, const char *token_id, const struct spec_view *v,
                       const char *at, struct err *err)
{
    struct err read;
    err_init(&read);
    struct policy_def *def =
        api->store ? store_policy_for_token(api->store, token_id, &read) : NULL;
    if (err_is_set(&read)) {
        err_set(err, ERR_UNAVAILABLE, "cannot read the token's cluster policy now (%s); try again",
                read.msg);
        err_release(&read);
        return -1;
    }
    err_release(&read);
    json_t *doc = def ? json_loads(def->grants, 0, NULL) : policy_grants_default(&api->cluster);
    struct policy_grants g = { .name = def ? def->name : "default (built-in)",
                               .doc = doc,
                               .cluster = &api->cluster };
    int rc = policy_kube_check(&g, v, at, err);
    json_decref(doc);
    policy_def_free(def);
    return rc;
}

int policy_check(const struct api *api, const struct policy_request *who, const struct spec_view *v,
                 struct err *err)
{
    if (strcmp(v->executor, "local") == 0)
        return check_local(api, who->scope, v, err);
    if (who->scope == SCOPE_ADMIN)
        return 0;
    struct err quiet; /* refusals are counted, so a caller without err is refused too */
    err_init(&quiet);
    int rc = check_token(api, who->token_id, v,
                         who->manifest_at ? who->manifest_at : "/kubernetes/manifest",
                         err ? err : &quiet);
    err_release(&quiet);
    return rc;
}
