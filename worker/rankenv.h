/*
 * rankenv: who this process is in the job, read from the environment the way torchrun and the
 * trainyard executors set it: RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR,
 * MASTER_PORT, TRAINYARD_JOB_ID. Missing variables mean a single rank (rank 0 of 1).
 */
#ifndef TY_WORKER_RANKENV_H
#define TY_WORKER_RANKENV_H

#include "core/err.h"

struct rankenv {
    int rank;
    int world_size;
    int local_rank;
    int local_world_size;  /* 0 when unset */
    char master_addr[256]; /* "" when unset */
    int master_port;       /* 0 when unset */
    char job_id[128];      /* "" when unset */
};

/* Fills re from the environment. ERR_INVALID names the variable that is malformed or out of
 * range (RANK >= WORLD_SIZE). */
int rankenv_load(struct rankenv *re, struct err *err);

/* getenv() that treats "" as unset. */
const char *rankenv_get(const char *name);

#endif
