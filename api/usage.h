/*
 * usage: what other API files ask of the usage routes (api/usage.c, api/usage_job.c): a job's
 * usage for its JSON, the price table, and the usage counters for GET /metrics.
 */
#ifndef TY_API_USAGE_H
#define TY_API_USAGE_H

#include <stdbool.h>
#include <stdint.h>

#include "api/api.h"
#include "api/usage_price.h"
#include "core/buf.h"

/* Appends a job's usage to out as a JSON object: its GPU- and rank-seconds and cost, per attempt
 * (and with runs, each rank's run), counted up to now for ranks still running. executor: the
 * job's, when the caller holds the job (NULL: looked up). -1 with err (out as it was):
 * ERR_NOT_FOUND when the job is neither stored nor has usage. (usage_job.c) */
int usage_job_write(struct api *api, struct buf *out, const char *job_id, const char *executor,
                    int64_t now, bool runs, struct err *err);

/* The price table, parsed (p zeroed when none is set; release with prices_release()); the parse
 * is kept while the stored table is unchanged. -1 with err. */
int usage_prices_load(struct api *api, struct prices *p, struct err *err);

/* Appends the trainyard_usage_* counters (Prometheus text) to out. */
void usage_metrics(struct api *api, struct buf *out);

#endif
