/*
 * store/rendezvous: the key-value store and barriers a job's ranks use to find each other
 * (the NCCL unique id, libfabric addresses), scoped to one attempt of the job so that a
 * restarted job never reads the last attempt's addresses.
 */
#ifndef TY_STORE_RENDEZVOUS_H
#define TY_STORE_RENDEZVOUS_H

#include <stdbool.h>
#include <stdint.h>

#include "core/err.h"
#include "store/store.h"

/* Sets key to value; *created tells whether the key is new. */
int store_rdzv_set(struct store *st, int64_t job_pk, int attempt, const char *key,
                   const char *value, bool *created, struct err *err);
/* The value (caller frees) or NULL with ERR_NOT_FOUND. */
char *store_rdzv_get(struct store *st, int64_t job_pk, int attempt, const char *key,
                     struct err *err);
/* Records that rank arrived at the barrier (idempotent). */
int store_rdzv_arrive(struct store *st, int64_t job_pk, int attempt, const char *barrier, int rank,
                      int world_size, struct err *err);
/* The ranks that arrived, ascending, into ranks (at most max); returns how many, or -1. */
int store_rdzv_arrived(struct store *st, int64_t job_pk, int attempt, const char *barrier,
                       int *ranks, int max, struct err *err);

#endif
