/*
 * dcgm: a DCGM exporter for the simulated nodes (NVIDIA dcgm-exporter's series and labels:
 * gpu, UUID, device, modelName, Hostname), for a Prometheus that trainyard reads GPU health
 * from (--prometheus-url). Every GPU of a node is busy (utilisation 97 %) while a pod runs
 * there, idle otherwise; the control API sets a GPU's Xid, temperature or ECC count to drive
 * trainyard's GPU health: POST /_test/gpus {"node": N, "gpu": I, "xid": 79, "temp": 91,
 * "dbe": 1}.
 */
#ifndef KSIM_DCGM_H
#define KSIM_DCGM_H

#include "tests/kube/http.h"

/* GET /metrics (world lock taken here). */
void dcgm_serve(struct request *req, struct reply *rep);
/* POST /_test/gpus (world lock taken here). */
void dcgm_control(struct request *req, struct reply *rep);
/* Frees the GPU overrides (at exit). */
void dcgm_release(void);

#endif
