/*
 * leases: what keeps a simulated node alive in the eyes of the node-lifecycle controller
 * (kube-controller-manager): its Lease in kube-node-lease, renewed every 10 s while the node
 * is Ready, as a kubelet does. A node the control API loses stops renewing, so the real
 * controller sees it go silent too. Also the clean-up of what an earlier simulator left: its
 * nodes and the pods bound to them.
 */
#ifndef KSIM_LEASES_H
#define KSIM_LEASES_H

#include <stdint.h>

#include "core/err.h"
#include "server/kube/client.h"

struct world;
struct leases;

/* Caller frees with leases_free(). */
struct leases *leases_new(struct world *w, struct kube_client *c);
void leases_free(struct leases *l);
/* Renews the Leases that are due (loop thread; takes the world lock). */
void leases_tick(struct leases *l, int64_t now_mono);
/* Deletes (blocking, not from the loop thread) the nodes labelled NODES_SIM_LABEL. The pods
 * bound to them are the pod garbage collector's (kube-controller-manager removes pods of nodes
 * that are gone, after 40 s): deleting thousands one by one took minutes. Returns how many. */
int leases_clean_nodes(struct kube_client *c, struct err *err);

#endif
