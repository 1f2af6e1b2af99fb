/*
 * nodes: fleet and scheduler. The fleet looks like an EKS managed GPU node group behind
 * Karpenter: instance type, zone and region labels, NVIDIA GPU feature discovery labels, EFA and
 * GPU capacity, and the Ready/pressure conditions plus the EKS node monitoring agent's. The
 * scheduler filters nodes like kube-scheduler's predicates and picks the one with the most free
 * GPUs; it has no preemption and no other scoring.
 */
#include "tests/kube/nodes.h"

#include "core/buf.h"
#include "core/clock.h"
#include "core/jsonx.h"
#include "core/parse.h"
#include "core/xalloc.h"
#include "tests/kube/status.h"
#include "tests/kube/store.h"
#include "tests/kube/world.h"

static const struct resource *node_res(void)
{
    return resource_lookup("", "v1", "nodes");
}

static json_t *condition(const char *type, const char *status, const char *reason,
                         const char *message)
{
    json_t *c = json_pack("{s:s, s:s, s:s, s:s}", "type", type, "status", status, "reason", reason,
                          "message", message);
    ktime_set(c, "lastHeartbeatTime", clock_now_ns());
    ktime_set(c, "lastTransitionTime", clock_now_ns());
    return c;
}

static json_t *node_conditions(void)
{
    return json_pack("[o,o,o,o,o,o,o,o]",
                     condition("MemoryPressure", "False", "KubeletHasSufficientMemory",
                               "kubelet has sufficient memory available"),
                     condition("DiskPressure", "False", "KubeletHasNoDiskPressure",
                               "kubelet has no disk pressure"),
                     condition("PIDPressure", "False", "KubeletHasSufficientPID",
                               "kubelet has sufficient PID available"),
                     condition("Ready", "True", "KubeletReady", "kubelet is posting ready status"),
                     condition("KernelReady", "True", "KernelIsReady",
                               "Monitoring for the Kernel system is active"),
                     condition("NetworkingReady", "True", "NetworkingIsReady",
                               "Monitoring for the Networking system is active"),
                     condition("StorageReady", "True", "DiskIsReady",
                               "Monitoring for the Disk system is active"),
                     condition("AcceleratedHardwareReady", "True",
                               "NvidiaAcceleratedHardwareIsReady",
                               "Monitoring for the Nvidia AcceleratedHardware system is active"));
}

static json_t *resources(int gpus)
{
    char g[16];
    snprintf(g, sizeof(g), "%d", gpus);
    return json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:s}", "cpu", "96", "memory", "1176929568Ki",
                     "ephemeral-storage", "1048576000Ki", "pods", "250", "nvidia.com/gpu", g,
                     "vpc.amazonaws.com/efa", "4", "hugepages-2Mi", "0");
}

static void add_node(struct world *w, int i, const struct fleet_options *o)
{
    const char *zones[] = { "us-east-1a", "us-east-1b" };
    char name[64], ip[32], gpus[16];
    snprintf(ip, sizeof(ip), "10.0.%d.%d", i % 2 + 1, 10 + i);
    snprintf(name, sizeof(name), "ip-10-0-%d-%d.ec2.internal", i % 2 + 1, 10 + i);
    snprintf(gpus, sizeof(gpus), "%d", o->gpus);
    json_t *labels = json_pack(
        "{s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s}",
        "kubernetes.io/hostname", name, "kubernetes.io/os", "linux", "kubernetes.io/arch", "amd64",
        "node.kubernetes.io/instance-type", o->instance_type, "topology.kubernetes.io/zone",
        zones[i % 2], "topology.kubernetes.io/region", "us-east-1", "karpenter.sh/capacity-type",
        i % 4 == 3 ? "spot" : "on-demand", "karpenter.sh/nodepool", "gpu", "nvidia.com/gpu.product",
        "NVIDIA-A100-SXM4-40GB", "nvidia.com/gpu.count", gpus, "nvidia.com/gpu.memory", "40960",
        "nvidia.com/cuda.driver.major", "550", "vpc.amazonaws.com/efa.present", "true");
    char pid[128];
    snprintf(pid, sizeof(pid), "aws:///%s/i-0%015d", zones[i % 2], 1234567 + i);
    json_t *node = json_pack(
        "{s:{s:s, s:o}, s:{s:s, s:[]}, s:{s:o, s:o, s:o, s:[{s:s, s:s}, {s:s, s:s}], "
        "s:{s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s}}}",
        "metadata", "name", name, "labels", labels, "spec", "providerID", pid, "taints", "status",
        "capacity", resources(o->gpus), "allocatable", resources(o->gpus), "conditions",
        node_conditions(), "addresses", "type", "InternalIP", "address", ip, "type", "Hostname",
        "address", name, "nodeInfo", "kubeletVersion", "v1.32.3-eks-473151a", "kubeProxyVersion",
        "v1.32.3-eks-473151a", "osImage", "Amazon Linux 2023.7.20250512", "kernelVersion",
        "6.1.134-152.225.amzn2023.x86_64", "containerRuntimeVersion", "containerd://1.7.27",
        "operatingSystem", "linux", "architecture", "amd64", "machineID", name);
    if (w->remote) {
        /* Behind a real API server: the kubelet endpoint it proxies logs to is this process on
         * loopback, and a label marks the nodes a simulator owns. */
        json_t *addr = json_array_get(kpath(node, "status.addresses"), 0);
        json_object_set_new(addr, "address", json_string("127.0.0.1"));
        json_object_set_new(
            kobj(node, "status"), "daemonEndpoints",
            json_pack("{s:{s:i}}", "kubeletEndpoint", "Port", w->remote->kubelet_port));
        json_object_set_new(labels, NODES_SIM_LABEL, json_string("true"));
    }
    store_create(w->store, node_res(), node, NULL);
}

void nodes_seed(struct world *w, const struct fleet_options *o)
{
    for (int i = 0; i < o->count; i++)
        add_node(w, i, o);
}

/* ---- scheduling ---- */

static int64_t quantity(const json_t *map, const char *key)
{
    int64_t milli = 0;
    const char *v = json_string_value(json_object_get(map, key));
    if (v && parse_quantity(v, &milli) == 0)
        return milli;
    if (json_is_integer(json_object_get(map, key)))
        return json_integer_value(json_object_get(map, key)) * 1000;
    return 0;
}

static const char *const scheduled_resources[] = { "nvidia.com/gpu", "vpc.amazonaws.com/efa", "cpu",
                                                   "memory" };
#define NRES 4

static void pod_requests(const json_t *pod, int64_t req[NRES])
{
    size_t i;
    json_t *c;
    memset(req, 0, NRES * sizeof(int64_t));
    json_array_foreach (kpath(pod, "spec.containers"), i, c) {
        json_t *r = kpath(c, "resources.requests"), *l = kpath(c, "resources.limits");
        for (int k = 0; k < NRES; k++)
            req[k] += json_object_get(r, scheduled_resources[k])
                          ? quantity(r, scheduled_resources[k])
                          : quantity(l, scheduled_resources[k]);
    }
}

static bool terminal(const json_t *pod)
{
    const char *phase = kstr(kpath(pod, "status"), "phase");
    return !strcmp(phase, "Succeeded") || !strcmp(phase, "Failed");
}

static bool expr_match(const json_t *labels, const json_t *e)
{
    const char *v = json_string_value(json_object_get(labels, kstr(e, "key")));
    const char *op = kstr(e, "operator");
    bool in = false;
    size_t i;
    json_t *val;
    json_array_foreach (json_object_get(e, "values"), i, val)
        in |= v && !strcmp(v, json_string_value(val) ? json_string_value(val) : "");
    if (!strcmp(op, "In"))
        return in;
    if (!strcmp(op, "NotIn"))
        return !in;
    if (!strcmp(op, "Exists"))
        return v != NULL;
    if (!strcmp(op, "DoesNotExist"))
        return v == NULL;
    return false;
}

/* nodeSelector AND required node affinity (terms ORed, expressions ANDed). */
static bool node_fits_selectors(const json_t *pod, const json_t *node)
{
    const json_t *labels = kpath(node, "metadata.labels");
    const char *k;
    json_t *v;
    json_object_foreach (kpath(pod, "spec.nodeSelector"), k, v)
        if (!json_equal(json_object_get(labels, k), v))
            return false;
    json_t *terms = kpath(pod, "spec.affinity.nodeAffinity."
                               "requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms");
    if (!json_array_size(terms))
        return true;
    size_t i, j;
    json_t *term, *e;
    json_array_foreach (terms, i, term) {
        bool all = true;
        json_array_foreach (json_object_get(term, "matchExpressions"), j, e)
            all &= expr_match(labels, e);
        if (all)
            return true;
    }
    return false;
}

static bool tolerated(const json_t *pod, const json_t *taint)
{
    size_t i;
    json_t *t;
    json_array_foreach (kpath(pod, "spec.tolerations"), i, t) {
        const char *key = kstr(t, "key");
        if ((!key[0] && !strcmp(kstr(t, "operator"), "Exists")) || !strcmp(key, kstr(taint, "key")))
            return true;
    }
    return false;
}

static bool node_schedulable(const json_t *pod, const json_t *node)
{
    if (json_is_true(kpath(node, "spec.unschedulable")))
        return false;
    size_t i;
    json_t *t;
    json_array_foreach (kpath(node, "spec.taints"), i, t)
        if (strcmp(kstr(t, "effect"), "PreferNoSchedule") && !tolerated(pod, t))
            return false;
    return true;
}

/* The requests of the pods bound to each node, in one pass over the pods:
 * node name -> [gpu, efa, cpu, memory] (milli-units). New reference. */
static bool ready_condition(const json_t *node)
{
    size_t i;
    json_t *c;
    json_array_foreach (kpath(node, "status.conditions"), i, c)
        if (!strcmp(kstr(c, "type"), "Ready"))
            return !strcmp(kstr(c, "status"), "True");
    return false;
}

/* One node as the scheduler sees it during a tick. */
struct sched_node {
    json_t *node; /* own reference */
    const char *name;
    bool usable;         /* Ready and schedulable */
    bool tainted;        /* has taints a pod must tolerate */
    int64_t free_[NRES]; /* allocatable minus what is bound to it */
};

void nodes_cache_release(struct sched_cache *c)
{
    for (size_t i = 0; i < c->n; i++)
        json_decref(c->nodes[i].node);
    free(c->nodes);
    memset(c, 0, sizeof(*c));
}

static void cache_fill(struct world *w, struct sched_cache *c)
{
    size_t nn, np;
    json_t **nodes = store_list(w->store, node_res(), NULL, &nn);
    json_t *by_name = json_object();
    c->nodes = xcalloc(nn + 1, sizeof(*c->nodes));
    for (size_t i = 0; i < nn; i++) {
        struct sched_node *sn = &c->nodes[c->n++];
        sn->node = nodes[i]; /* takes the list's reference */
        sn->name = kstr(json_object_get(nodes[i], "metadata"), "name");
        sn->usable =
            ready_condition(nodes[i]) && !json_is_true(kpath(nodes[i], "spec.unschedulable"));
        sn->tainted = json_array_size(kpath(nodes[i], "spec.taints")) > 0;
        for (int k = 0; k < NRES; k++)
            sn->free_[k] = quantity(kpath(nodes[i], "status.allocatable"), scheduled_resources[k]);
        json_object_set_new(by_name, sn->name, json_integer((json_int_t)i));
    }
    free(nodes);
    json_t **pods = store_list(w->store, resource_lookup("", "v1", "pods"), NULL, &np);
    for (size_t i = 0; i < np; i++) {
        json_t *idx = json_object_get(by_name, kstr(kpath(pods[i], "spec"), "nodeName"));
        if (!idx || terminal(pods[i]))
            continue;
        int64_t req[NRES];
        pod_requests(pods[i], req);
        for (int k = 0; k < NRES; k++)
            c->nodes[json_integer_value(idx)].free_[k] -= req[k];
    }
    store_list_free(pods, np);
    json_decref(by_name);
    c->filled = true;
}

static void explain(char *why, size_t why_size, size_t nn, const int insufficient[NRES],
                    int mismatch, int tainted)
{
    struct buf b = BUF_INIT;
    buf_printf(&b, "0/%zu nodes are available:", nn);
    for (int k = 0; k < NRES; k++)
        if (insufficient[k])
            buf_printf(&b, " %d Insufficient %s,", insufficient[k], scheduled_resources[k]);
    if (mismatch)
        buf_printf(&b, " %d node(s) didn't match Pod's node affinity/selector,", mismatch);
    if (tainted)
        buf_printf(&b, " %d node(s) had untolerated taint or were not ready,", tainted);
    if (b.data[b.len - 1] == ',')
        b.data[--b.len] = '\0';
    buf_printf(&b,
               ". preemption: 0/%zu nodes are available: %zu No preemption victims found for "
               "incoming pod.",
               nn, nn);
    snprintf(why, why_size, "%s", buf_cstr(&b));
    buf_release(&b);
}

int nodes_schedule(struct world *w, struct sched_cache *c, const json_t *pod, char *node_out,
                   char *why, size_t why_size)
{
    if (!c->filled)
        cache_fill(w, c);
    int64_t req[NRES], best_gpus = -1;
    int insufficient[NRES] = { 0 }, mismatch = 0, tainted = 0;
    struct sched_node *best = NULL;
    bool constrained = kpath(pod, "spec.nodeSelector") || kpath(pod, "spec.affinity");
    pod_requests(pod, req);
    for (size_t i = 0; i < c->n; i++) {
        struct sched_node *sn = &c->nodes[i];
        if (constrained && !node_fits_selectors(pod, sn->node)) {
            mismatch++;
            continue;
        }
        if (!sn->usable || (sn->tainted && !node_schedulable(pod, sn->node))) {
            tainted++;
            continue;
        }
        bool fits = true;
        for (int k = 0; k < NRES; k++)
            if (req[k] > sn->free_[k])
                insufficient[k]++, fits = false;
        if (fits && sn->free_[0] > best_gpus) {
            best_gpus = sn->free_[0];
            best = sn;
        }
    }
    if (!best) {
        explain(why, why_size, c->n, insufficient, mismatch, tainted);
        return -1;
    }
    for (int k = 0; k < NRES; k++)
        best->free_[k] -= req[k];
    snprintf(node_out, 254, "%s", best->name);
    return 0;
}

static json_t *node_copy(struct world *w, const char *name, struct err *err)
{
    json_t *node = store_get(w->store, node_res(), NULL, name);
    if (!node) {
        store_not_found(err, node_res(), name);
        return NULL;
    }
    return json_deep_copy(node);
}

static void put_condition(json_t *node, json_t *cond)
{
    json_t *conds = kpath(node, "status.conditions");
    size_t i;
    json_t *c;
    json_array_foreach (conds, i, c) {
        if (!strcmp(kstr(c, "type"), kstr(cond, "type"))) {
            if (!json_object_get(cond, "lastTransitionTime"))
                json_object_set(cond, "lastTransitionTime",
                                json_object_get(c, "lastTransitionTime"));
            json_array_set_new(conds, i, cond);
            return;
        }
    }
    json_array_append_new(conds, cond);
}

int nodes_lose(struct world *w, const char *name, struct err *err)
{
    json_t *node = node_copy(w, name, err);
    if (!node)
        return -1;
    put_condition(node, condition("Ready", "Unknown", "NodeStatusUnknown",
                                  "Kubelet stopped posting node status."));
    json_object_set_new(kobj(node, "spec"), "taints",
                        json_pack("[{s:s, s:s}, {s:s, s:s}]", "key",
                                  "node.kubernetes.io/unreachable", "effect", "NoSchedule", "key",
                                  "node.kubernetes.io/unreachable", "effect", "NoExecute"));
    return store_replace(w->store, node_res(), node, err) ? 0 : -1;
}

int nodes_recover(struct world *w, const char *name, struct err *err)
{
    json_t *node = node_copy(w, name, err);
    if (!node)
        return -1;
    put_condition(node,
                  condition("Ready", "True", "KubeletReady", "kubelet is posting ready status"));
    json_object_set_new(kobj(node, "spec"), "taints", json_array());
    return store_replace(w->store, node_res(), node, err) ? 0 : -1;
}

int nodes_set_condition(struct world *w, const char *name, const json_t *cond, struct err *err)
{
    if (!kstr(cond, "type")[0] || !kstr(cond, "status")[0])
        return status_set(err, ERR_INVALID, "BadRequest", "a condition needs type and status");
    json_t *node = node_copy(w, name, err);
    if (!node)
        return -1;
    json_t *c = json_deep_copy(cond);
    ktime_set(c, "lastHeartbeatTime", clock_now_ns());
    ktime_set(c, "lastTransitionTime", clock_now_ns());
    put_condition(node, c);
    return store_replace(w->store, node_res(), node, err) ? 0 : -1;
}
