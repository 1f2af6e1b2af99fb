/*
 * leases: one Lease per node, created on first renewal (POST, then merge PATCHes of
 * spec.renewTime). Renewal calls run on the loop thread; the clean-up is blocking and runs
 * before the loop starts or after it ended.
 */
#include "tests/kube/sim/leases.h"

#include "core/clock.h"
#include "core/jsonx.h"
#include "core/log.h"
#include "core/xalloc.h"
#include "server/kube/kmap.h"
#include "server/kube/watch.h"
#include "tests/kube/nodes.h"
#include "tests/kube/store.h"
#include "tests/kube/world.h"

#define RENEW_NS  (10 * NS_PER_SEC)
#define LEASE_NS  "kube-node-lease"
#define LEASE_API "/apis/coordination.k8s.io/v1/namespaces/" LEASE_NS "/leases"

struct lease {
    struct leases *l;
    char node[254];
    int64_t renewed;
    bool created, inflight;
};

struct leases {
    struct world *w;
    struct kube_client *c;
    struct kmap by_node;
};

struct leases *leases_new(struct world *w, struct kube_client *c)
{
    struct leases *l = XNEW(struct leases);
    l->w = w;
    l->c = c;
    kmap_init(&l->by_node);
    return l;
}

void leases_free(struct leases *l)
{
    if (!l)
        return;
    for (struct kmap_iter it = kmap_first(&l->by_node); it.e; kmap_next(&l->by_node, &it))
        free(it.e->value);
    kmap_release(&l->by_node);
    free(l);
}

static char *micro_time(int64_t ns, char *out, size_t size)
{
    char sec[32];
    ktime(ns, sec); /* 2026-11-27T09:54:07Z */
    snprintf(out, size, "%.19s.%06lldZ", sec, (long long)(ns % NS_PER_SEC / 1000));
    return out;
}

static void send_renewal(struct lease *le);

static void renewed(void *ctx, long status, const struct buf *body, struct err *err)
{
    struct lease *le = ctx;
    (void)body;
    le->inflight = false;
    if (!err_is_set(err)) {
        le->created = true;
        return;
    }
    if (status == 404 && le->created) { /* deleted meanwhile: make it again */
        le->created = false;
        send_renewal(le);
        return;
    }
    if (status == 409) { /* left by an earlier simulator: renew that one */
        le->created = true;
        send_renewal(le);
        return;
    }
    le->renewed = 0; /* retried on the next tick */
    log_warn("kubesim: lease of node %s: %s", le->node, err->msg);
}

static void send_renewal(struct lease *le)
{
    char now[48], path[400];
    micro_time(clock_now_ns(), now, sizeof(now));
    json_t *body;
    struct kube_request r = { .path = path };
    if (le->created) {
        snprintf(path, sizeof(path), "%s/%s", LEASE_API, le->node);
        body = json_pack("{s:{s:s}}", "spec", "renewTime", now);
        r.method = "PATCH";
        r.content_type = "application/merge-patch+json";
    } else {
        snprintf(path, sizeof(path), "%s", LEASE_API);
        body = json_pack("{s:s,s:s,s:{s:s,s:s},s:{s:s,s:i,s:s,s:s}}", "apiVersion",
                         "coordination.k8s.io/v1", "kind", "Lease", "metadata", "name", le->node,
                         "namespace", LEASE_NS, "spec", "holderIdentity", le->node,
                         "leaseDurationSeconds", 40, "renewTime", now, "acquireTime", now);
        r.method = "POST";
    }
    char *text = jsonx_dumps(body);
    r.body = text;
    le->inflight = true;
    kube_call_start(le->l->c, &r, NULL, renewed, le);
    free(text);
    json_decref(body);
}

static bool ready(const json_t *node)
{
    size_t i;
    json_t *c;
    json_array_foreach (kpath(node, "status.conditions"), i, c)
        if (!strcmp(kstr(c, "type"), "Ready"))
            return !strcmp(kstr(c, "status"), "True");
    return false;
}

void leases_tick(struct leases *l, int64_t now)
{
    world_lock(l->w);
    size_t n;
    json_t **nodes = store_list(l->w->store, resource_lookup("", "v1", "nodes"), NULL, &n);
    for (size_t i = 0; i < n; i++) {
        const char *name = kstr(json_object_get(nodes[i], "metadata"), "name");
        struct lease *le = kmap_get(&l->by_node, name);
        if (!le) {
            le = XNEW(struct lease);
            le->l = l;
            snprintf(le->node, sizeof(le->node), "%s", name);
            kmap_put(&l->by_node, name, le);
        }
        /* a node that is not Ready (lost) has a silent kubelet: no renewal */
        if (!le->inflight && ready(nodes[i]) && now - le->renewed >= RENEW_NS) {
            le->renewed = now;
            send_renewal(le);
        }
    }
    store_list_free(nodes, n);
    world_unlock(l->w);
}

static int delete_path(struct kube_client *c, const char *path, struct err *err)
{
    struct kube_request r = { .method = "DELETE",
                              .path = path,
                              .body = "{\"kind\":\"DeleteOptions\",\"apiVersion\":\"v1\","
                                      "\"gracePeriodSeconds\":0}" };
    struct err e;
    err_init(&e);
    int rc = kube_client_do(c, &r, NULL, &e);
    if (rc < 0 && e.code != ERR_NOT_FOUND) {
        err_set(err, e.code, "%s", e.msg);
    } else {
        rc = 0;
    }
    err_release(&e);
    return rc;
}

static json_t *get_list(struct kube_client *c, const char *path, struct err *err)
{
    struct buf out = BUF_INIT;
    struct kube_request r = { .method = "GET", .path = path };
    json_t *doc = NULL;
    if (kube_client_do(c, &r, &out, err) == 0)
        doc = json_loadb(buf_cstr(&out), out.len, 0, NULL);
    buf_release(&out);
    return doc;
}

int leases_clean_nodes(struct kube_client *c, struct err *err)
{
    struct buf q = BUF_INIT;
    buf_puts(&q, "/api/v1/nodes?labelSelector=");
    kube_query_escape(&q, NODES_SIM_LABEL);
    json_t *nodes = get_list(c, buf_cstr(&q), err);
    buf_release(&q);
    if (!nodes)
        return -1;
    size_t i;
    json_t *node;
    int count = 0;
    json_array_foreach (json_object_get(nodes, "items"), i, node) {
        char path[400];
        snprintf(path, sizeof(path), "/api/v1/nodes/%s",
                 kstr(json_object_get(node, "metadata"), "name"));
        if (delete_path(c, path, err) == 0)
            count++;
    }
    json_decref(nodes);
    return err_is_set(err) ? -1 : count;
}
