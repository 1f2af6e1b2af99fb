/*
 * check_nccl: an all-reduce across every rank of the job through NCCL (the only file that
 * includes it), one GPU per rank (LOCAL_RANK). The ranks first meet at a rendezvous barrier, so
 * a rank that never comes is named; rank 0's ncclUniqueId goes through the rendezvous. The
 * communicator is non-blocking and every wait has the preflight timeout, after which the
 * communicator is aborted instead of hanging the pod.
 *   nccl.allreduce   result verified, bus bandwidth of a 256 MiB all-reduce against the figure
 *                    for TRAINYARD_INSTANCE_TYPE (none known: warn)
 * NCCL and the CUDA runtime are compiled against their headers and loaded at run time
 * (dynlib.h), only when the check runs on GPUs with several ranks; without NCCL it says
 * "skipped: NCCL not found (libnccl.so.2)". Not thread-safe (preflight's thread only).
 */
#include "worker/checks.h"

#ifndef TY_HAVE_NCCL

int check_nccl_load(struct err *err)
{
#ifdef TY_HAVE_CUDA
    return err_set(err, ERR_UNSUPPORTED, "built without NCCL");
#else
    return err_set(err, ERR_UNSUPPORTED, "built without CUDA");
#endif
}

void check_nccl(struct check_ctx *c)
{
#ifdef TY_HAVE_CUDA
    preflight_add(c->report, "nccl", PF_SKIP, NULL, "skipped: built without NCCL");
#else
    preflight_add(c->report, "nccl", PF_SKIP, NULL, "skipped: built without CUDA");
#endif
}

#else

#include <cuda_runtime_api.h>
#include <nccl.h>

#include "core/clock.h"
#include "core/xalloc.h"
#include "worker/dynlib.h"

/* Every function of NCCL and the CUDA runtime this file calls, as nc.<name>. */
#define NCCL_FUNCS(X)                                                                              \
    X(ncclGetErrorString)                                                                          \
    X(ncclGetUniqueId)                                                                             \
    X(ncclCommInitRankConfig)                                                                      \
    X(ncclCommGetAsyncError)                                                                       \
    X(ncclAllReduce)                                                                               \
    X(ncclCommAbort)                                                                               \
    X(ncclCommDestroy)
#define CUDART_FUNCS(X)                                                                            \
    X(cudaGetErrorString)                                                                          \
    X(cudaSetDevice)                                                                               \
    X(cudaStreamCreate)                                                                            \
    X(cudaStreamDestroy)                                                                           \
    X(cudaStreamQuery)                                                                             \
    X(cudaMalloc)                                                                                  \
    X(cudaFree)                                                                                    \
    X(cudaMemcpy)

#define FIELD(f) __typeof__(&f) f;
static struct {
    NCCL_FUNCS(FIELD)
    CUDART_FUNCS(FIELD)
} nc;
#undef FIELD
static int nc_loaded;

#define RESOLVE(f)                                                                                 \
    if (!(nc.f = (__typeof__(nc.f))dynlib_sym(lib, so, DYNLIB_STR(f), err)))                       \
        return -1;

int check_nccl_load(struct err *err)
{
    char rt[32], nccl[32];
    const char *so = nccl;
    void *lib;
    if (nc_loaded)
        return 0;
    snprintf(nccl, sizeof(nccl), "libnccl.so.%d", NCCL_MAJOR);
    snprintf(rt, sizeof(rt), "libcudart.so.%d", CUDART_VERSION / 1000);
    if (!(lib = dynlib_open("NCCL", nccl, err)))
        return -1;
    NCCL_FUNCS(RESOLVE)
    so = rt;
    if (!(lib = dynlib_open("CUDA runtime", rt, err)))
        return -1;
    CUDART_FUNCS(RESOLVE)
    nc_loaded = 1;
    return 0;
}
#undef RESOLVE

#define NC(call)                                                                                   \
    do {                                                                                           \
        ncclResult_t r_ = (nc.call);                                                               \
        if (r_ != ncclSuccess && r_ != ncclInProgress) {                                           \
            err_set(err, ERR_IO, "%s:%d: %s: %s", __FILE__, __LINE__, #call,                       \
                    nc.ncclGetErrorString(r_));                                                    \
            goto out;                                                                              \
        }                                                                                          \
    } while (0)
#define CU(call)                                                                                   \
    do {                                                                                           \
        cudaError_t e_ = (nc.call);                                                                \
        if (e_ != cudaSuccess) {                                                                   \
            err_set(err, ERR_IO, "%s:%d: %s: %s", __FILE__, __LINE__, #call,                       \
                    nc.cudaGetErrorString(e_));                                                    \
            goto out;                                                                              \
        }                                                                                          \
    } while (0)

#define BIG     (256u << 20)
#define CHECK_N (1u << 20) /* floats in the verified all-reduce */
#define ITERS   5

/* Waits for the communicator's pending work (init or enqueue) until deadline. */
static int comm_wait(ncclComm_t comm, int64_t deadline, struct err *err)
{
    ncclResult_t st = ncclInProgress;
    while (st == ncclInProgress) {
        if (nc.ncclCommGetAsyncError(comm, &st) != ncclSuccess)
            return err_set(err, ERR_IO, "ncclCommGetAsyncError failed");
        if (st == ncclInProgress && clock_mono_ns() > deadline)
            return err_set(err, ERR_TIMEOUT, "NCCL did not finish in time (a rank is stuck)");
        if (st == ncclInProgress)
            clock_sleep_ms(1);
    }
    return st == ncclSuccess ? 0 : err_set(err, ERR_IO, "NCCL: %s", nc.ncclGetErrorString(st));
}

static int stream_wait(ncclComm_t comm, cudaStream_t s, int64_t deadline, struct err *err)
{
    cudaError_t e;
    while ((e = nc.cudaStreamQuery(s)) == cudaErrorNotReady) {
        if (comm_wait(comm, deadline, err) < 0)
            return -1;
        if (clock_mono_ns() > deadline)
            return err_set(err, ERR_TIMEOUT, "all-reduce did not finish in time");
        clock_sleep_ms(1);
    }
    return e == cudaSuccess ? 0 : err_set(err, ERR_IO, "%s", nc.cudaGetErrorString(e));
}

static int init_comm(struct check_ctx *c, ncclComm_t *comm, int64_t deadline, struct err *err)
{
    const struct rankenv *re = c->re;
    struct rdzv *r = checks_rdzv(c, err);
    struct buf id = BUF_INIT;
    ncclUniqueId uid;
    ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
    int ret = -1;
    cfg.blocking = 0;
    if (!r ||
        rdzv_barrier(r, "preflight.nccl", re->rank, re->world_size, c->opts->timeout_ms, err) < 0)
        goto out;
    if (re->rank == 0) {
        NC(ncclGetUniqueId(&uid));
        if (rdzv_set_bytes(r, "preflight.nccl.id", &uid, sizeof(uid), err) < 0)
            goto out;
    } else {
        if (rdzv_get_bytes(r, "preflight.nccl.id", c->opts->timeout_ms, &id, err) < 0)
            goto out;
        if (id.len != sizeof(uid)) {
            err_set(err, ERR_INVALID, "NCCL unique id of %zu bytes", id.len);
            goto out;
        }
        memcpy(&uid, id.data, sizeof(uid));
    }
    NC(ncclCommInitRankConfig(comm, re->world_size, uid, re->rank, &cfg));
    ret = comm_wait(*comm, deadline, err);
out:
    buf_release(&id);
    return ret;
}

/* All-reduce of CHECK_N floats holding rank+1: every element must be n(n+1)/2. */
static int verify(ncclComm_t comm, cudaStream_t s, int rank, int n, int64_t deadline, float *dev,
                  struct err *err)
{
    float *h = xmalloc(CHECK_N * sizeof(float));
    int ret = -1;
    for (size_t i = 0; i < CHECK_N; i++)
        h[i] = (float)(rank + 1);
    CU(cudaMemcpy(dev, h, CHECK_N * sizeof(float), cudaMemcpyHostToDevice));
    NC(ncclAllReduce(dev, dev, CHECK_N, ncclFloat, ncclSum, comm, s));
    if (stream_wait(comm, s, deadline, err) < 0)
        goto out;
    CU(cudaMemcpy(h, dev, CHECK_N * sizeof(float), cudaMemcpyDeviceToHost));
    for (size_t i = 0; i < CHECK_N; i++)
        if (h[i] != (float)n * (n + 1) / 2) {
            err_set(err, ERR_IO, "all-reduce result wrong at %zu: %g", i, h[i]);
            goto out;
        }
    ret = 0;
out:
    free(h);
    return ret;
}

static int measure(ncclComm_t comm, cudaStream_t s, int n, int64_t deadline, float *dev,
                   double *busbw, struct err *err)
{
    int64_t t0 = 0;
    for (int i = -1; i < ITERS; i++) { /* one warm-up */
        if (i == 0)
            t0 = clock_mono_ns();
        NC(ncclAllReduce(dev, dev, BIG / sizeof(float), ncclFloat, ncclSum, comm, s));
        if (stream_wait(comm, s, deadline, err) < 0)
            goto out;
    }
    double sec = (double)(clock_mono_ns() - t0) / 1e9;
    *busbw = (double)BIG * ITERS / sec / 1e9 * 2.0 * (n - 1) / n;
    return 0;
out:
    return -1;
}

void check_nccl(struct check_ctx *c)
{
    const struct rankenv *re = c->re;
    struct err e;
    struct err *err = &e;
    ncclComm_t comm = NULL;
    cudaStream_t s = NULL;
    float *dev = NULL;
    double busbw = 0;
    err_init(&e);
    if (c->gpus_found == 0 || re->world_size == 1) {
        preflight_add(c->report, "nccl.allreduce", PF_SKIP, NULL, "%s",
                      c->gpus_found ? "skipped: single rank" : "skipped: no GPU");
        return;
    }
    if (check_nccl_load(err) < 0) { /* PyTorch may bring its own NCCL: absent is not a failure */
        preflight_add(c->report, "nccl.allreduce", e.code == ERR_NOT_FOUND ? PF_SKIP : PF_FAIL,
                      NULL, "%s%s", e.code == ERR_NOT_FOUND ? "skipped: " : "", e.msg);
        err_release(&e);
        return;
    }
    int64_t deadline = clock_mono_ns() + (int64_t)c->opts->timeout_ms * NS_PER_MS;
    CU(cudaSetDevice(re->local_rank % c->gpus_found));
    CU(cudaStreamCreate(&s));
    CU(cudaMalloc((void **)&dev, BIG));
    if (init_comm(c, &comm, deadline, err) < 0 ||
        verify(comm, s, re->rank, re->world_size, deadline, dev, err) < 0 ||
        measure(comm, s, re->world_size, deadline, dev, &busbw, err) < 0)
        goto out;
    const struct net_expected *x = preflight_net_expected(c->opts->instance_type);
    double want = x && re->local_world_size != re->world_size ? x->nccl_busbw_gbps : 0;
    preflight_add(c->report, "nccl.allreduce", preflight_judge(busbw, want, PF_MIN_NCCL_FRACTION),
                  json_pack("{s:f,s:f,s:i}", "busbw_gbps", busbw, "expected_gbps", want, "ranks",
                            re->world_size),
                  "%d ranks, bus bandwidth %.1f GB/s%s", re->world_size, busbw,
                  want > 0 ? "" : " (no expected figure for this instance type or topology)");
out:
    if (err_is_set(err))
        preflight_add(c->report, "nccl.allreduce", PF_FAIL, NULL, "%s", err->msg);
    if (comm && err_is_set(err))
        nc.ncclCommAbort(comm);
    else if (comm)
        nc.ncclCommDestroy(comm);
    if (dev)
        nc.cudaFree(dev);
    if (s)
        nc.cudaStreamDestroy(s);
    err_release(&e);
}

#endif
