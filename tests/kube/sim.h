/*
 * sim: the simulation loop. A thread advances the simulated clock (scaled by the world's
 * speed) and, under the world lock, runs the controllers (PyTorchJob, TrainJob), the kubelets
 * and the garbage collector, then sleeps until the next tick or the next change.
 */
#ifndef KS_SIM_H
#define KS_SIM_H

#include "core/err.h"
#include "tests/kube/nodes.h"

struct world;
struct sim;

/* Caller frees with sim_free() (world_release() does). */
struct sim *sim_new(void);
void sim_free(struct sim *s);
/* Creates the namespaces, the node fleet and the torch-distributed ClusterTrainingRuntime. */
void sim_seed(struct world *w, const struct fleet_options *fleet);
/* One step (lock held): what the thread does every tick. */
void sim_tick(struct world *w);
/* Starts and stops the loop thread. */
int sim_start(struct world *w, struct err *err);
void sim_stop(struct world *w);
/* The kubelet simulation, for the control API. */
struct kubelet *sim_kubelet(struct world *w);

#endif
