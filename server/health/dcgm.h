/*
 * dcgm: GPU telemetry of the nodes running jobs, read from Prometheus (the DCGM exporter's
 * series) with the Prometheus HTTP API (GET /api/v1/query). Every interval it asks for the
 * nodes of every active job's ranks, by the exporter's Hostname label:
 *   DCGM_FI_DEV_GPU_UTIL, _GPU_TEMP, _POWER_USAGE, _CLOCK_THROTTLE_REASONS (or
 *   _CLOCKS_EVENT_REASONS), _XID_ERRORS, _ECC_DBE_VOL_TOTAL, _ECC_SBE_VOL_TOTAL
 * and hands each node's GPUs and conditions to the health registry (health_node_gpus). A
 * non-zero Xid or an uncorrectable ECC count also becomes a finding of the jobs on that node
 * (as the kernel's NVRM line would) and, when the Xid means broken hardware, a `suspect` mark
 * of the node.
 *
 * Threads: one poller thread of its own; dcgm_metrics() from any thread.
 */
#ifndef TY_DCGM_H
#define TY_DCGM_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "core/buf.h"
#include "core/err.h"

struct health;
struct store;
struct dcgm;

struct dcgm_options {
    const char *url;     /* Prometheus base URL, e.g. http://prometheus:9090 */
    int64_t interval_ns; /* default 15 s */
    const char *bearer;  /* optional token for Prometheus */
};

/* h and st are borrowed and must outlive the poller. Caller frees with dcgm_free(). */
struct dcgm *dcgm_new(struct health *h, struct store *st, const struct dcgm_options *o);
int dcgm_start(struct dcgm *d, struct err *err);
/* Stops the thread (if started) and frees. NULL is a no-op. */
void dcgm_free(struct dcgm *d);
void dcgm_metrics(struct dcgm *d, struct buf *out);

/* Parses a Prometheus instant-query answer into {node: {"gpus": [...], "conditions": [...]}}
 * (new reference), or NULL when it is not a successful vector. Exposed for tests. */
json_t *dcgm_parse(const char *body, size_t len);

#endif
