/*
 * checks: every preflight check, one backend file per library:
 *   check_cuda.c       CUDA runtime + cuBLAS: GPU count, memory, bandwidth, bf16 GEMM
 *   check_nccl.c       NCCL: all-reduce bus bandwidth across the job's ranks
 *   check_fabric.c     libfabric (through fabric.h): providers, EFA devices, p2p bandwidth
 *   check_container.c  /dev/shm, disk, memlock, MASTER_ADDR, MASTER_PORT
 * Each adds its results to ctx->report and never aborts the others.
 */
#ifndef TY_WORKER_CHECKS_H
#define TY_WORKER_CHECKS_H

#include "worker/preflight.h"
#include "worker/rdzv.h"

struct check_ctx {
    const struct preflight_opts *opts;
    const struct rankenv *re;
    struct preflight *report;
    struct rdzv *rdzv; /* opened on first use by checks_rdzv(); closed by checks_run_all */
    int gpus_found;    /* set by check_cuda: devices usable on this rank */
};

struct check {
    const char *name;
    const char *what;
    void (*run)(struct check_ctx *c);
};

extern const struct check checks_all[];
extern const int checks_count;

/* The rendezvous, opened on first use; NULL with err when it cannot be opened. Borrowed. */
struct rdzv *checks_rdzv(struct check_ctx *c, struct err *err);
void checks_run_all(struct check_ctx *c);

/* Load the CUDA runtime + cuBLAS, or NCCL + the CUDA runtime (once; the checks call them).
 * -1 with ERR_NOT_FOUND when a library is absent, ERR_IO when it cannot be loaded or lacks a
 * function, ERR_UNSUPPORTED when the worker was built without the toolkit. */
int check_cuda_load(struct err *err);
int check_nccl_load(struct err *err);

void check_cuda(struct check_ctx *c);
void check_nccl(struct check_ctx *c);
void check_fabric(struct check_ctx *c);
void check_container(struct check_ctx *c);

#endif
