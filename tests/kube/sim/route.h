/*
 * route: the simulator's HTTP routes (kubelet logs, the PyTorchJob webhook, the DCGM exporter
 * and the control API); see route.c.
 */
#ifndef KSIM_ROUTE_H
#define KSIM_ROUTE_H

#include "tests/kube/http.h"

struct mirror;

void sim_route(struct request *req, struct reply *rep);
/* The mirror whose counters GET /_test/mirror shows (borrowed; NULL: none). */
void sim_route_mirror(struct mirror *m);

#endif
