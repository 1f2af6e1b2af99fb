/*
 * checks: the list of every preflight check, in the order they run. The order matters with
 * several ranks: checks that meet other ranks (nccl, fabric) run in the same order everywhere.
 */
#include "worker/checks.h"

const struct check checks_all[] = {
    { "cuda", "GPU count, memory test, memory bandwidth, bf16 GEMM rate (CUDA, cuBLAS)",
      check_cuda },
    { "nccl", "all-reduce bus bandwidth across the job's ranks (NCCL)", check_nccl },
    { "fabric", "providers, EFA devices, point-to-point bandwidth and latency (libfabric)",
      check_fabric },
    { "container", "/dev/shm size, free disk, memlock limit, MASTER_ADDR, MASTER_PORT",
      check_container },
};
const int checks_count = (int)(sizeof(checks_all) / sizeof(checks_all[0]));

struct rdzv *checks_rdzv(struct check_ctx *c, struct err *err)
{
    if (!c->rdzv)
        c->rdzv = rdzv_open(c->opts->rdzv, c->re, err);
    return c->rdzv;
}

void checks_run_all(struct check_ctx *c)
{
    for (int i = 0; i < checks_count; i++)
        checks_all[i].run(c);
    rdzv_close(c->rdzv);
    c->rdzv = NULL;
}
