/*
 * nodes: a cache of trimmed Node views keyed by name, and the GET /v1/nodes document built
 * from it and the executor's rank placements (see nodes.h). Condition polarity: `Ready` and the
 * EKS `*Ready` conditions are good when True; pressure and node-problem-detector conditions
 * are bad when True. SageMaker HyperPod's node-health-status label counts as a condition
 * (healthy only when Schedulable).
 */
#include "server/kube/nodes.h"

#include <stdlib.h>

#include "core/jsonx.h"
#include "core/xalloc.h"
#include "server/kube/kmap.h"

#define HYPERPOD_HEALTH "sagemaker.amazonaws.com/node-health-status"

struct kube_nodes {
    struct kmap byname; /* name -> json_t view */
};

static const char *label(const json_t *node, const char *key)
{
    return jsonx_str(json_object_get(json_object_get(node, "metadata"), "labels"), key);
}

static json_t *pick(const json_t *resources)
{
    static const char *const keys[] = { "nvidia.com/gpu", "vpc.amazonaws.com/efa", "cpu", "memory",
                                        "pods" };
    json_t *out = json_object();
    for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
        json_t *v = json_object_get(resources, keys[i]);
        const char *s = json_string_value(v);
        char *end = NULL;
        long long n = s ? strtoll(s, &end, 10) : 0;
        if (s && end && *end == '\0' && i < 2) /* counts of devices as numbers */
            json_object_set_new(out, keys[i], json_integer(n));
        else if (v)
            json_object_set(out, keys[i], v);
    }
    return out;
}

static bool condition_ok(const char *type, const char *status)
{
    size_t n = strlen(type);
    bool good_when_true = n >= 5 && !strcmp(type + n - 5, "Ready");
    return good_when_true ? !strcmp(status, "True") : strcmp(status, "True") != 0;
}

json_t *kube_node_view(const json_t *node)
{
    const json_t *meta = json_object_get(node, "metadata");
    const json_t *spec = json_object_get(node, "spec"), *st = json_object_get(node, "status");
    json_t *v = json_object();
    jsonx_set_str(v, "name", jsonx_str(meta, "name"));
    jsonx_set_str(v, "instance_type", label(node, "node.kubernetes.io/instance-type"));
    jsonx_set_str(v, "zone", label(node, "topology.kubernetes.io/zone"));
    jsonx_set_str(v, "capacity_type", label(node, "karpenter.sh/capacity-type"));
    jsonx_set_str(v, "nodepool", label(node, "karpenter.sh/nodepool"));
    jsonx_set_str(v, "gpu_product", label(node, "nvidia.com/gpu.product"));
    json_object_set_new(v, "capacity", pick(json_object_get(st, "capacity")));
    json_object_set_new(v, "allocatable", pick(json_object_get(st, "allocatable")));
    json_t *conds = json_array();
    bool ready = false, healthy = true;
    size_t i;
    json_t *c;
    json_array_foreach(json_object_get(st, "conditions"), i, c)
    {
        const char *type = jsonx_str(c, "type"), *status = jsonx_str(c, "status");
        if (!type || !status)
            continue;
        json_t *o = json_pack("{s:s,s:s}", "type", type, "status", status);
        jsonx_set_str(o, "reason", jsonx_str(c, "reason"));
        jsonx_set_str(o, "message", jsonx_str(c, "message"));
        jsonx_set_str(o, "last_transition", jsonx_str(c, "lastTransitionTime"));
        json_array_append_new(conds, o);
        if (!strcmp(type, "Ready"))
            ready = !strcmp(status, "True");
        healthy = healthy && condition_ok(type, status);
    }
    /* SageMaker HyperPod says what it thinks of a node in a label, not a condition; it is
     * listed (and counted) as one. Schedulable is its only healthy value. */
    const char *hp = label(node, HYPERPOD_HEALTH);
    if (hp) {
        bool good = !strcmp(hp, "Schedulable");
        json_array_append_new(conds,
                              json_pack("{s:s,s:s,s:s,s:s}", "type", HYPERPOD_HEALTH, "status",
                                        good ? "True" : "False", "reason", hp, "message",
                                        "SageMaker HyperPod's node health label"));
        healthy = healthy && good;
    }
    bool cordoned = jsonx_bool(spec, "unschedulable", false);
    json_object_set_new(v, "conditions", conds);
    json_object_set_new(v, "ready", json_boolean(ready));
    json_object_set_new(v, "cordoned", json_boolean(cordoned));
    json_object_set_new(v, "healthy", json_boolean(healthy && ready && !cordoned));
    json_t *taints = json_object_get(spec, "taints");
    json_object_set_new(v, "taints", json_is_array(taints) ? json_deep_copy(taints) : json_array());
    return v;
}

struct kube_nodes *kube_nodes_new(void)
{
    struct kube_nodes *n = XNEW(struct kube_nodes);
    kmap_init(&n->byname);
    return n;
}

void kube_nodes_free(struct kube_nodes *n)
{
    if (!n)
        return;
    for (struct kmap_iter it = kmap_first(&n->byname); it.e; kmap_next(&n->byname, &it))
        json_decref(it.e->value);
    kmap_release(&n->byname);
    free(n);
}

void kube_nodes_upsert(struct kube_nodes *n, const json_t *node)
{
    const char *name = jsonx_str(json_object_get(node, "metadata"), "name");
    if (name)
        json_decref(kmap_put(&n->byname, name, kube_node_view(node)));
}

void kube_nodes_remove(struct kube_nodes *n, const json_t *node)
{
    const char *name = jsonx_str(json_object_get(node, "metadata"), "name");
    if (name)
        json_decref(kmap_del(&n->byname, name));
}

const json_t *kube_nodes_get(const struct kube_nodes *n, const char *name)
{
    return n && name ? kmap_get(&n->byname, name) : NULL;
}

bool kube_nodes_ready(const struct kube_nodes *n, const char *name)
{
    const json_t *v = kmap_get(&n->byname, name);
    return v && json_is_true(json_object_get(v, "ready"));
}

static int by_name(const void *a, const void *b)
{
    const char *x = jsonx_str(*(json_t *const *)a, "name"),
               *y = jsonx_str(*(json_t *const *)b, "name");
    return strcmp(x ? x : "", y ? y : "");
}

/* Adds rank to the node view's job entry for job_id (created on first use). */
static void place(json_t *view, const struct kube_placement *p)
{
    json_t *jobs = json_object_get(view, "jobs");
    size_t i;
    json_t *j, *found = NULL;
    json_array_foreach(jobs, i, j) if (!strcmp(jsonx_str(j, "id"), p->job_id)) found = j;
    if (!found) {
        found = json_pack("{s:s,s:s,s:[]}", "id", p->job_id, "name", p->job_name, "ranks");
        json_array_append_new(jobs, found);
    }
    json_array_append_new(json_object_get(found, "ranks"), json_integer(p->rank));
}

json_t *kube_nodes_json(const struct kube_nodes *n, const struct kube_placement *p, size_t np)
{
    size_t count = n->byname.n, k = 0;
    json_t **views = xcalloc(count ? count : 1, sizeof(json_t *));
    for (struct kmap_iter it = kmap_first(&n->byname); it.e; kmap_next(&n->byname, &it)) {
        views[k] = json_deep_copy(it.e->value);
        json_object_set_new(views[k++], "jobs", json_array());
    }
    qsort(views, count, sizeof(json_t *), by_name);
    for (size_t i = 0; i < np; i++) {
        json_t *key = json_pack("{s:s}", "name", p[i].node);
        json_t **hit = bsearch(&key, views, count, sizeof(json_t *), by_name);
        json_decref(key);
        if (hit)
            place(*hit, &p[i]);
    }
    json_t *items = json_array();
    for (size_t i = 0; i < count; i++)
        json_array_append_new(items, views[i]);
    free(views);
    return json_pack("{s:o}", "items", items);
}
