/*
 * check_cuda: the GPUs, through the CUDA runtime and cuBLAS (the only file that includes them).
 *   gpu.count          devices found == --gpus / TRAINYARD_GPUS (when given)
 *   gpu.N.info         name, UUID, memory
 *   gpu.N.memory       cudaMalloc of a large buffer, cudaMemset, read back and verified on the
 *                      CPU; device-to-device copy bandwidth against the model's figure
 *   gpu.N.gemm_bf16    a small bf16 GEMM checked against gpuref's CPU GEMM, then the TFLOP/s of
 *                      a 4096^3 cublasGemmEx against the model's figure
 * With several ranks on a node (LOCAL_WORLD_SIZE > 1) each rank tests its own device,
 * LOCAL_RANK; alone it tests them all. Without a device: "skipped: no GPU". Built without the
 * toolkit (TY_CUDA=OFF): "skipped: built without CUDA". Every CUDA and cuBLAS call is checked.
 *
 * The libraries are compiled against the toolkit's headers but loaded at run time (dynlib.h),
 * the first time the check runs (cuBLAS only once a GPU was found), through a table of the
 * functions used here: without them the check says "skipped: CUDA runtime not found
 * (libcudart.so.13)". Not thread-safe (preflight's thread only).
 */
#include "worker/checks.h"

#ifndef TY_HAVE_CUDA

int check_cuda_load(struct err *err)
{
    return err_set(err, ERR_UNSUPPORTED, "built without CUDA");
}

void check_cuda(struct check_ctx *c)
{
    c->gpus_found = 0;
    preflight_add(c->report, "gpu", c->opts->gpus > 0 ? PF_FAIL : PF_SKIP, NULL,
                  "skipped: built without CUDA%s", c->opts->gpus > 0 ? ", but GPUs requested" : "");
}

#else

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include "core/xalloc.h"
#include "worker/dynlib.h"
#include "worker/gpuref.h"

/* Every function of the two libraries this file calls, as cu.<name>. */
#define CUDART_FUNCS(X)                                                                            \
    X(cudaGetDeviceCount)                                                                          \
    X(cudaGetDeviceProperties)                                                                     \
    X(cudaGetErrorString)                                                                          \
    X(cudaSetDevice)                                                                               \
    X(cudaMemGetInfo)                                                                              \
    X(cudaMalloc)                                                                                  \
    X(cudaFree)                                                                                    \
    X(cudaMemset)                                                                                  \
    X(cudaMemcpy)                                                                                  \
    X(cudaEventCreate)                                                                             \
    X(cudaEventDestroy)                                                                            \
    X(cudaEventRecord)                                                                             \
    X(cudaEventSynchronize)                                                                        \
    X(cudaEventElapsedTime)
#define CUBLAS_FUNCS(X)                                                                            \
    X(cublasCreate)                                                                                \
    X(cublasDestroy)                                                                               \
    X(cublasGemmEx)                                                                                \
    X(cublasGetStatusString)

#define FIELD(f) __typeof__(&f) f;
static struct {
    CUDART_FUNCS(FIELD)
    CUBLAS_FUNCS(FIELD)
} cu;
#undef FIELD
static int rt_loaded, blas_loaded;

#define RESOLVE(f)                                                                                 \
    if (!(cu.f = (__typeof__(cu.f))dynlib_sym(lib, so, DYNLIB_STR(f), err)))                       \
        return -1;

/* The sonames of the toolkit the headers came from: its ABI is the one compiled in. The
 * runtime is small; cuBLAS (with cuBLASLt, ~600 MB) is loaded only where there is a GPU. */
static int load_runtime(struct err *err)
{
    char so[32];
    void *lib;
    if (rt_loaded)
        return 0;
    snprintf(so, sizeof(so), "libcudart.so.%d", CUDART_VERSION / 1000);
    if (!(lib = dynlib_open("CUDA runtime", so, err)))
        return -1;
    CUDART_FUNCS(RESOLVE)
    rt_loaded = 1;
    return 0;
}

static int load_blas(struct err *err)
{
    char so[32];
    void *lib;
    if (blas_loaded)
        return 0;
    snprintf(so, sizeof(so), "libcublas.so.%d", CUBLAS_VER_MAJOR);
    if (!(lib = dynlib_open("cuBLAS", so, err)))
        return -1;
    CUBLAS_FUNCS(RESOLVE)
    blas_loaded = 1;
    return 0;
}

int check_cuda_load(struct err *err)
{
    return load_runtime(err) < 0 || load_blas(err) < 0 ? -1 : 0;
}
#undef RESOLVE

#define CU(call)                                                                                   \
    do {                                                                                           \
        cudaError_t e_ = (cu.call);                                                                \
        if (e_ != cudaSuccess) {                                                                   \
            err_set(err, ERR_IO, "%s:%d: %s: %s", __FILE__, __LINE__, #call,                       \
                    cu.cudaGetErrorString(e_));                                                    \
            goto out;                                                                              \
        }                                                                                          \
    } while (0)
#define CB(call)                                                                                   \
    do {                                                                                           \
        cublasStatus_t s_ = (cu.call);                                                             \
        if (s_ != CUBLAS_STATUS_SUCCESS) {                                                         \
            err_set(err, ERR_IO, "%s:%d: %s: %s", __FILE__, __LINE__, #call,                       \
                    cu.cublasGetStatusString(s_));                                                 \
            goto out;                                                                              \
        }                                                                                          \
    } while (0)

#define STAGE      (64u << 20) /* host buffer for the read-back */
#define GEMM_N     4096
#define GEMM_ITERS 20

struct gpu {
    int dev;
    char name[256];
    double mem_gbps, tflops, gemm_err;
    size_t tested;
};

static void add_info(struct check_ctx *c, struct gpu *g, struct err *err)
{
    struct cudaDeviceProp p;
    char uuid[64], key[64];
    const unsigned char *u;
    CU(cudaGetDeviceProperties(&p, g->dev));
    snprintf(g->name, sizeof(g->name), "%s", p.name);
    u = (const unsigned char *)p.uuid.bytes;
    snprintf(uuid, sizeof(uuid),
             "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", u[0], u[1],
             u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13], u[14],
             u[15]);
    snprintf(key, sizeof(key), "gpu.%d.info", g->dev);
    preflight_add(c->report, key, PF_PASS,
                  json_pack("{s:s,s:s,s:I,s:i,s:s}", "name", p.name, "uuid", uuid, "memory_bytes",
                            (json_int_t)p.totalGlobalMem, "pci_bus_id", p.pciBusID, "compute",
                            p.major >= 8 ? "bf16" : "no bf16 tensor cores"),
                  "%s %s, %.1f GiB", p.name, uuid, (double)p.totalGlobalMem / (1 << 30));
    return;
out:
    snprintf(key, sizeof(key), "gpu.%d.info", g->dev);
    preflight_add(c->report, key, PF_FAIL, NULL, "%s", err->msg);
}

/* Fills a large buffer, reads all of it back, then times device-to-device copies. */
static int memory_test(struct gpu *g, struct err *err)
{
    unsigned char *d = NULL, *h = xmalloc(STAGE);
    cudaEvent_t e0 = NULL, e1 = NULL;
    size_t free_b, total_b;
    float ms = 0;
    int ret = -1;
    CU(cudaMemGetInfo(&free_b, &total_b));
    size_t n = free_b / 4 < (2ull << 30) ? free_b / 4 : (2ull << 30);
    n &= ~(size_t)(STAGE - 1);
    if (n < STAGE)
        n = STAGE;
    CU(cudaMalloc((void **)&d, n));
    CU(cudaMemset(d, 0xA5, n));
    for (size_t off = 0; off < n; off += STAGE) {
        CU(cudaMemcpy(h, d + off, STAGE, cudaMemcpyDeviceToHost));
        long bad = gpuref_verify_fill(h, STAGE, 0xA5);
        if (bad >= 0) {
            err_set(err, ERR_IO, "device memory wrong at byte %zu", off + (size_t)bad);
            goto out;
        }
    }
    g->tested = n;
    CU(cudaEventCreate(&e0));
    CU(cudaEventCreate(&e1));
    CU(cudaEventRecord(e0, 0));
    for (int i = 0; i < 10; i++)
        CU(cudaMemcpy(d + n / 2, d, n / 2, cudaMemcpyDeviceToDevice));
    CU(cudaEventRecord(e1, 0));
    CU(cudaEventSynchronize(e1));
    CU(cudaEventElapsedTime(&ms, e0, e1));
    g->mem_gbps = ms > 0 ? 2.0 * (double)(n / 2) * 10 / (ms / 1e3) / 1e9 : 0; /* read + write */
    ret = 0;
out:
    if (e0)
        cu.cudaEventDestroy(e0);
    if (e1)
        cu.cudaEventDestroy(e1);
    if (d)
        cu.cudaFree(d);
    free(h);
    return ret;
}

/* A 64^3 bf16 GEMM compared with the CPU reference; sets g->gemm_err. */
static int gemm_check(cublasHandle_t cb, struct gpu *g, struct err *err)
{
    enum { M = 64 };
    uint16_t ha[M * M], hb[M * M];
    float hc[M * M], ref[M * M], alpha = 1, beta = 0;
    void *da = NULL, *db = NULL, *dc = NULL;
    int ret = -1;
    gpuref_fill_bf16(ha, M * M, 1);
    gpuref_fill_bf16(hb, M * M, 2);
    gpuref_gemm_bf16(M, M, M, ha, hb, ref);
    CU(cudaMalloc(&da, sizeof(ha)));
    CU(cudaMalloc(&db, sizeof(hb)));
    CU(cudaMalloc(&dc, sizeof(hc)));
    CU(cudaMemcpy(da, ha, sizeof(ha), cudaMemcpyHostToDevice));
    CU(cudaMemcpy(db, hb, sizeof(hb), cudaMemcpyHostToDevice));
    CB(cublasGemmEx(cb, CUBLAS_OP_N, CUBLAS_OP_N, M, M, M, &alpha, da, CUDA_R_16BF, M, db,
                    CUDA_R_16BF, M, &beta, dc, CUDA_R_32F, M, CUBLAS_COMPUTE_32F,
                    CUBLAS_GEMM_DEFAULT));
    CU(cudaMemcpy(hc, dc, sizeof(hc), cudaMemcpyDeviceToHost));
    g->gemm_err = gpuref_max_rel_err(hc, ref, M * M);
    ret = 0;
out:
    cu.cudaFree(da);
    cu.cudaFree(db);
    cu.cudaFree(dc);
    return ret;
}

static int gemm_rate(cublasHandle_t cb, struct gpu *g, struct err *err)
{
    const size_t n = GEMM_N, bytes = n * n * 2;
    void *a = NULL, *b = NULL, *c = NULL;
    cudaEvent_t e0 = NULL, e1 = NULL;
    float alpha = 1, beta = 0, ms = 0;
    int ret = -1;
    CU(cudaMalloc(&a, bytes));
    CU(cudaMalloc(&b, bytes));
    CU(cudaMalloc(&c, bytes));
    CU(cudaMemset(a, 0x3c, bytes)); /* bf16 0x3c3c: about 0.0115 everywhere */
    CU(cudaMemset(b, 0x3c, bytes));
    CU(cudaEventCreate(&e0));
    CU(cudaEventCreate(&e1));
    for (int i = -2; i < GEMM_ITERS; i++) { /* two warm-up runs */
        if (i == 0)
            CU(cudaEventRecord(e0, 0));
        CB(cublasGemmEx(cb, CUBLAS_OP_N, CUBLAS_OP_N, (int)n, (int)n, (int)n, &alpha, a,
                        CUDA_R_16BF, (int)n, b, CUDA_R_16BF, (int)n, &beta, c, CUDA_R_16BF, (int)n,
                        CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    }
    CU(cudaEventRecord(e1, 0));
    CU(cudaEventSynchronize(e1));
    CU(cudaEventElapsedTime(&ms, e0, e1));
    g->tflops = ms > 0 ? 2.0 * (double)n * n * n * GEMM_ITERS / (ms / 1e3) / 1e12 : 0;
    ret = 0;
out:
    if (e0)
        cu.cudaEventDestroy(e0);
    if (e1)
        cu.cudaEventDestroy(e1);
    cu.cudaFree(a);
    cu.cudaFree(b);
    cu.cudaFree(c);
    return ret;
}

static void judge_memory(struct check_ctx *c, const struct gpu *g, const struct err *err)
{
    const struct gpu_expected *x = preflight_gpu_expected(g->name);
    char key[64];
    snprintf(key, sizeof(key), "gpu.%d.memory", g->dev);
    if (err_is_set(err)) {
        preflight_add(c->report, key, PF_FAIL, NULL, "%s", err->msg);
        return;
    }
    preflight_add(c->report, key,
                  preflight_judge(g->mem_gbps, x ? x->mem_gbps : 0, PF_MIN_MEM_FRACTION),
                  json_pack("{s:I,s:f,s:f}", "tested_bytes", (json_int_t)g->tested,
                            "bandwidth_gbps", g->mem_gbps, "expected_gbps", x ? x->mem_gbps : 0.0),
                  "%zu MiB verified, copy %.0f GB/s (%s peak %.0f GB/s)", g->tested >> 20,
                  g->mem_gbps, x ? x->model : "no figure for this model,", x ? x->mem_gbps : 0.0);
}

static void judge_gemm(struct check_ctx *c, const struct gpu *g, const struct err *err)
{
    const struct gpu_expected *x = preflight_gpu_expected(g->name);
    char key[64];
    snprintf(key, sizeof(key), "gpu.%d.gemm_bf16", g->dev);
    if (err_is_set(err)) {
        preflight_add(c->report, key, PF_FAIL, NULL, "%s", err->msg);
        return;
    }
    enum pf_status st = g->gemm_err > 2e-2 ? PF_FAIL
                                           : preflight_judge(g->tflops, x ? x->bf16_tflops : 0,
                                                             PF_MIN_GEMM_FRACTION);
    preflight_add(c->report, key, st,
                  json_pack("{s:f,s:f,s:f}", "tflops", g->tflops, "expected_tflops",
                            x ? x->bf16_tflops : 0.0, "max_rel_err", g->gemm_err),
                  "%.0f TFLOP/s bf16, error vs CPU %.1e (%s peak %.0f)", g->tflops, g->gemm_err,
                  x ? x->model : "no figure for this model,", x ? x->bf16_tflops : 0.0);
}

static void test_device(struct check_ctx *c, int dev)
{
    struct gpu g = { .dev = dev };
    struct err err, gerr;
    cublasHandle_t cb = NULL;
    err_init(&err);
    err_init(&gerr);
    if (cu.cudaSetDevice(dev) != cudaSuccess)
        return;
    add_info(c, &g, &err);
    err_release(&err);
    err_init(&err);
    memory_test(&g, &err);
    judge_memory(c, &g, &err);
    if (load_blas(&gerr) == 0 && cu.cublasCreate(&cb) != CUBLAS_STATUS_SUCCESS)
        err_set(&gerr, ERR_IO, "cublasCreate failed");
    if (!err_is_set(&gerr) && gemm_check(cb, &g, &gerr) == 0) /* else: the GEMM check fails */
        gemm_rate(cb, &g, &gerr);
    judge_gemm(c, &g, &gerr);
    if (cb)
        cu.cublasDestroy(cb);
    err_release(&err);
    err_release(&gerr);
}

/* Absent libraries are a machine without GPUs; present but unusable ones are worth a warning. */
static void report_unloaded(struct check_ctx *c, const struct err *err)
{
    int want = c->opts->gpus;
    enum pf_status st = want > 0 ? PF_FAIL : err->code == ERR_NOT_FOUND ? PF_SKIP : PF_WARN;
    preflight_add(c->report, "gpu", st, NULL, "%s%s%s", st == PF_SKIP ? "skipped: " : "", err->msg,
                  want > 0 ? ", but GPUs requested" : "");
}

void check_cuda(struct check_ctx *c)
{
    int n = 0, want = c->opts->gpus;
    struct err lerr;
    err_init(&lerr);
    c->gpus_found = 0;
    if (load_runtime(&lerr) < 0) {
        report_unloaded(c, &lerr);
        err_release(&lerr);
        return;
    }
    cudaError_t e = cu.cudaGetDeviceCount(&n);
    c->gpus_found = e == cudaSuccess ? n : 0;
    if (e != cudaSuccess && e != cudaErrorNoDevice && e != cudaErrorInsufficientDriver) {
        preflight_add(c->report, "gpu.count", PF_FAIL, NULL, "cudaGetDeviceCount: %s",
                      cu.cudaGetErrorString(e));
        return;
    }
    if (c->gpus_found == 0) {
        preflight_add(c->report, "gpu", want > 0 ? PF_FAIL : PF_SKIP, NULL, "%s (%s)",
                      want > 0 ? "no GPU, but GPUs requested" : "skipped: no GPU",
                      e == cudaSuccess ? "0 devices" : cu.cudaGetErrorString(e));
        return;
    }
    preflight_add(c->report, "gpu.count", want == 0 || n == want ? PF_PASS : PF_FAIL,
                  json_pack("{s:i,s:i}", "found", n, "requested", want), "%d GPU(s)%s%.0d", n,
                  want ? ", requested " : "", want);
    if (c->re->local_world_size > 1) {
        test_device(c, c->re->local_rank % n);
        return;
    }
    for (int d = 0; d < n; d++)
        test_device(c, d);
}

#endif
