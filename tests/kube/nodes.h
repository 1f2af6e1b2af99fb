/*
 * nodes: the simulated fleet of GPU nodes (EKS-like labels, capacity, conditions) and the
 * scheduler that binds pods to them (node selector, required node affinity, taints, and
 * cpu/memory/nvidia.com/gpu/vpc.amazonaws.com/efa requests against allocatable).
 * World lock held for every call.
 */
#ifndef KS_NODES_H
#define KS_NODES_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "core/err.h"

struct world;

/* The label on the nodes a simulator behind a real API server owns (tests/kube/sim). */
#define NODES_SIM_LABEL "kubesim.trainyard.io/node"

struct fleet_options {
    int count;                 /* nodes */
    int gpus;                  /* nvidia.com/gpu per node */
    const char *instance_type; /* node.kubernetes.io/instance-type */
};

void nodes_seed(struct world *w, const struct fleet_options *o);
/* The scheduler's view of the nodes and their free resources for one simulation tick, like
 * kube-scheduler's cache: filled at the first nodes_schedule() of the tick and updated as pods
 * are placed. Caller storage; zero-initialise, release with nodes_cache_release(). */
struct sched_node;

struct sched_cache {
    struct sched_node *nodes;
    size_t n;
    bool filled;
};

void nodes_cache_release(struct sched_cache *c);
/* Chooses a node for pod and counts it as placed there. Returns 0 with its name copied into
 * node (>= 254 bytes), or -1 with the scheduler's FailedScheduling message in why. */
int nodes_schedule(struct world *w, struct sched_cache *c, const json_t *pod, char *node, char *why,
                   size_t why_size);
/* Makes a node NotReady with the unreachable taints (the kubelet stopped reporting). */
int nodes_lose(struct world *w, const char *name, struct err *err);
/* Makes a lost node Ready again and removes the taints. */
int nodes_recover(struct world *w, const char *name, struct err *err);
/* Sets (or adds) one condition, e.g. AcceleratedHardwareReady=False. */
int nodes_set_condition(struct world *w, const char *name, const json_t *cond, struct err *err);

#endif
