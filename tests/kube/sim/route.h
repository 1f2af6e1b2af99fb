/*
 * route: the simulator's HTTP routes (kubelet logs, the PyTorchJob webhook, the DCGM exporter
 * and the control API); see route.c.
 */
#ifndef KSIM_ROUTE_H
#define KSIM_ROUTE_H

#include "tests/kube/http.h"

void sim_route(struct request *req, struct reply *rep);

#endif
