/*
 * rdzv: the rendezvous the ranks of one job use to find each other: a key-value store (set, get
 * with wait) and named barriers with a timeout that name the ranks that did not arrive. Used to
 * exchange libfabric addresses and the NCCL unique id.
 *
 * Two backends behind one interface:
 *   http      the daemon's /v1/jobs/{id}/rendezvous API (TRAINYARD_URL, TRAINYARD_TOKEN,
 *             TRAINYARD_JOB_ID); scoped to the job's current attempt by the daemon.
 *   dir:PATH  a directory shared by the ranks (one machine, no daemon): one file per key,
 *             written atomically, one file per rank arrived at a barrier. PATH is created.
 * Chosen by TRAINYARD_RENDEZVOUS; by default http when TRAINYARD_URL is set, else
 * dir:/tmp/trainyard-rdzv-<MASTER_PORT>-<TRAINYARD_ATTEMPT or 0>. A dir must not be reused by
 * two runs at once: stale keys would be read as fresh.
 *
 * Keys and barrier names: 1-128 characters of [A-Za-z0-9._-], not starting with '.'.
 * A struct rdzv is used by one thread at a time.
 */
#ifndef TY_WORKER_RDZV_H
#define TY_WORKER_RDZV_H

#include "core/buf.h"
#include "core/err.h"
#include "worker/rankenv.h"

struct rdzv;

/* spec NULL: from the environment as above. Caller closes with rdzv_close(). */
struct rdzv *rdzv_open(const char *spec, const struct rankenv *re, struct err *err);
void rdzv_close(struct rdzv *r);

int rdzv_set(struct rdzv *r, const char *key, const char *value, struct err *err);
/* Waits up to wait_ms for key to exist. Returns the value (caller frees), or NULL with
 * ERR_TIMEOUT when the key did not appear in time, or another error. */
char *rdzv_get(struct rdzv *r, const char *key, int wait_ms, struct err *err);
/* Bytes as base64 values. */
int rdzv_set_bytes(struct rdzv *r, const char *key, const void *data, size_t len, struct err *err);
int rdzv_get_bytes(struct rdzv *r, const char *key, int wait_ms, struct buf *out, struct err *err);
/* Returns 0 once all world ranks have arrived at barrier name; -1 with ERR_TIMEOUT and a message
 * "... missing ranks [2, 3]" after timeout_ms. A name is used once per run. */
int rdzv_barrier(struct rdzv *r, const char *name, int rank, int world, int timeout_ms,
                 struct err *err);

/* True when key is a valid key or barrier name. */
int rdzv_valid_key(const char *key);

#endif
