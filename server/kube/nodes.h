/*
 * nodes: the cluster's nodes as GET /v1/nodes shows them: instance type, zone, capacity type,
 * GPU and EFA capacity and allocatable, conditions (Ready, pressure, node-problem-detector's,
 * the EKS node monitoring agent's AcceleratedHardwareReady...), cordon state and taints, and
 * which trainyard jobs (and ranks) run on each.
 *
 * The cache keeps a trimmed copy of each Node from the executor's watch. Not thread-safe: the
 * executor's loop thread owns it and publishes finished documents to readers.
 */
#ifndef TY_KUBE_NODES_H
#define TY_KUBE_NODES_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

struct kube_nodes;

/* A rank placed on a node. */
struct kube_placement {
    const char *node;
    const char *job_id;
    const char *job_name;
    int rank;
};

struct kube_nodes *kube_nodes_new(void);
void kube_nodes_free(struct kube_nodes *n);
void kube_nodes_upsert(struct kube_nodes *n, const json_t *node);
void kube_nodes_remove(struct kube_nodes *n, const json_t *node);
size_t kube_nodes_count(const struct kube_nodes *n);
/* Whether the node is known and its Ready condition is True. */
bool kube_nodes_ready(const struct kube_nodes *n, const char *name);
/* The view of node name (kube_node_view's shape), borrowed until the node changes; NULL when
 * the cache does not have it. */
const json_t *kube_nodes_get(const struct kube_nodes *n, const char *name);

/* {"items": [...]} sorted by name (new reference). trainyard's marks on nodes are added by
 * the API (api/nodes.c), from the store. */
json_t *kube_nodes_json(const struct kube_nodes *n, const struct kube_placement *p, size_t np);

/* One Node object in the API's shape (new reference); exposed for tests. */
json_t *kube_node_view(const json_t *node);

#endif
