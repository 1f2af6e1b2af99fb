/*
 * apimetrics: the API's own Prometheus metrics: request latency histograms per route
 * (operationId) and status class, and job submissions. Counters are atomics in a fixed table
 * indexed like the route table; every function is thread-safe and never blocks.
 */
#ifndef TY_APIMETRICS_H
#define TY_APIMETRICS_H

#include <stdint.h>

#include "core/buf.h"

struct route;

/* One answered request: its route (NULL: no route matched), status and duration. Streamed
 * responses (log follows) are not observed: their duration is the client's choice. */
void apimetrics_observe(const struct route *route, int status, int64_t ns);
/* A request refused because its sender could not be authenticated, answered with status. */
void apimetrics_unauthenticated(const struct route *route, int status);
/* A job was accepted (not a replay of an idempotent submission). */
void apimetrics_submission(void);
/* Appends the Prometheus text. */
void apimetrics_write(struct buf *out);

#endif
