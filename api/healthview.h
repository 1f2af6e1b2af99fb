/*
 * healthview: GET /v1/jobs/{id}/health's answer from what is stored: the job and its ranks,
 * the latest attempt's saved health (store/findings.h: per-rank last line, step, heartbeat,
 * straggler and preflight; node GPUs and conditions; the stall verdict) and node marks.
 *
 * Overall status: `failing` (a rank failed, the job stalled, a node is marked bad or reports
 * an Xid/ECC error, a preflight failed, the job failed), `degraded` (stragglers, suspect
 * nodes, throttled or idle GPUs, heartbeats gone quiet, preempted) or `ok`, with one reason per
 * finding. Reads node marks from the store; otherwise pure.
 */
#ifndef TY_HEALTHVIEW_H
#define TY_HEALTHVIEW_H

#include <jansson.h>
#include <stdint.h>

#include "store/jobs.h"

/* A heartbeat older than this, from a running rank that sent one, degrades the job. */
#define HEALTHVIEW_HEARTBEAT_STALE_NS (60LL * 1000000000LL)

/* diag is store_diag_get()'s answer or NULL. New reference. */
json_t *healthview_job(struct store *st, const struct job *j, const struct rank *ranks, size_t n,
                       const json_t *diag, int64_t now);

#endif
