/*
 * Unit tests of the preflight report and its thresholds: the expected-figure tables, the
 * judgement of a measurement, the report's JSON (summary, ok, exit status), the container
 * checks against limits that pass and fail, the GPU checks without a GPU, the CPU reference
 * routines the GPU checks are validated with, and the run-time loading of the GPU and fabric
 * libraries (absent, broken, missing symbols, the tables against the installed toolkit, signal
 * handlers kept).
 */
#include "tests/unit/check.h"

#include <math.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include "core/jsonx.h"
#include "worker/checks.h"
#include "worker/dynlib.h"
#include "worker/gpuref.h"
#include "worker/preflight.h"

static void test_tables(void)
{
    static const struct {
        const char *device, *model;
    } cases[] = {
        { "NVIDIA A10G", "A10G" },
        { "NVIDIA L4", "L4" },
        { "NVIDIA L40S", "L40S" },
        { "NVIDIA A100-SXM4-40GB", "A100" },
        { "NVIDIA A100-SXM4-80GB", "A100 80GB" },
        { "NVIDIA H100 80GB HBM3", "H100" },
        { "NVIDIA H100 PCIe", "H100 PCIe" },
        { "NVIDIA H200", "H200" },
        { "NVIDIA B200", "B200" },
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const struct gpu_expected *x = preflight_gpu_expected(cases[i].device);
        CHECK(x != NULL);
        if (x) {
            CHECK_STR(x->model, cases[i].model);
            CHECK(x->mem_gbps > 100 && x->bf16_tflops > 50);
        }
    }
    CHECK(preflight_gpu_expected("Tesla T4") == NULL);
    /* Newer generations are faster: the table must not be shuffled by mistake. */
    CHECK(preflight_gpu_expected("H100")->bf16_tflops >
          preflight_gpu_expected("A100")->bf16_tflops);
    CHECK(preflight_gpu_expected("B200")->mem_gbps > preflight_gpu_expected("H200")->mem_gbps);
    CHECK_INT(preflight_net_expected("p5.48xlarge")->efa_devices, 32);
    CHECK_INT(preflight_net_expected("P4D.24XLARGE")->efa_devices, 4);
    CHECK(preflight_net_expected("m5.large") == NULL);
    CHECK(preflight_net_expected(NULL) == NULL);
}

static void test_judge(void)
{
    CHECK_INT(preflight_judge(700, 989, PF_MIN_GEMM_FRACTION), PF_PASS);
    CHECK_INT(preflight_judge(400, 989, PF_MIN_GEMM_FRACTION), PF_FAIL);
    CHECK_INT(preflight_judge(494.5, 989, 0.5), PF_PASS); /* the boundary passes */
    CHECK_INT(preflight_judge(10, 0, 0.5), PF_WARN);      /* nothing to compare with */
    CHECK_INT(preflight_judge(NAN, 100, 0.5), PF_FAIL);
}

static void test_report(void)
{
    struct preflight p;
    struct rankenv re = { .rank = 1, .world_size = 4, .local_rank = 1 };
    preflight_init(&p);
    preflight_add(&p, "a", PF_PASS, json_pack("{s:i}", "x", 1), "fine %d", 1);
    preflight_add(&p, "b", PF_SKIP, NULL, "skipped: no GPU");
    preflight_add(&p, "c", PF_WARN, NULL, "hm");
    json_t *r = preflight_report(&p, &re, 1500000);
    CHECK(jsonx_bool(r, "ok", false));
    CHECK_INT(jsonx_int(r, "rank", -1), 1);
    CHECK_INT(jsonx_int(r, "world_size", -1), 4);
    CHECK_INT(jsonx_int(r, "duration_ms", -1), 1);
    CHECK(jsonx_str(r, "hostname") && jsonx_str(r, "time"));
    json_t *c0 = json_array_get(json_object_get(r, "checks"), 0);
    CHECK_STR(jsonx_str(c0, "status"), "pass");
    CHECK_STR(jsonx_str(c0, "detail"), "fine 1");
    CHECK_INT(jsonx_int(json_object_get(c0, "data"), "x", 0), 1);
    CHECK_INT(jsonx_int(json_object_get(r, "summary"), "skip", -1), 1);
    json_decref(r);
    preflight_add(&p, "d", PF_FAIL, NULL, "broken");
    r = preflight_report(&p, &re, 0);
    CHECK(!jsonx_bool(r, "ok", true));
    CHECK_INT(jsonx_int(json_object_get(r, "summary"), "fail", -1), 1);
    json_decref(r);
    preflight_release(&p);
}

static const json_t *find(const struct preflight *p, const char *name)
{
    size_t i;
    json_t *c;
    json_array_foreach(p->checks, i, c) if (!strcmp(jsonx_str(c, "name"), name)) return c;
    return NULL;
}

static const char *status_of(const struct preflight *p, const char *name)
{
    const json_t *c = find(p, name);
    return c ? jsonx_str(c, "status") : "(absent)";
}

static void test_container(void)
{
    struct preflight_opts o;
    struct preflight p;
    struct rankenv re = { .rank = 0, .world_size = 2, .master_port = 0 };
    snprintf(re.master_addr, sizeof(re.master_addr), "localhost");
    preflight_opts_default(&o);
    o.shm_path = "/tmp";
    o.shm_min = 1;
    o.ckpt_dir = "/tmp";
    o.disk_min = 1;
    preflight_init(&p);
    struct check_ctx c = { .opts = &o, .re = &re, .report = &p };
    check_container(&c);
    CHECK_STR(status_of(&p, "container.shm"), "pass");
    CHECK_STR(status_of(&p, "container.disk"), "pass");
    CHECK_STR(status_of(&p, "container.master_addr"), "pass");
    CHECK_STR(status_of(&p, "container.master_port"), "skip");
    preflight_release(&p);

    /* A checkpoint directory the first attempt has yet to make: its parent is judged. */
    o.ckpt_dir = "/tmp/ty-test-no-such-dir/job/run";
    preflight_init(&p);
    check_container(&c);
    CHECK_STR(status_of(&p, "container.disk"), "pass");
    CHECK(strstr(jsonx_str(find(&p, "container.disk"), "detail"), "(to be made in /tmp)") != NULL);
    preflight_release(&p);
    o.ckpt_dir = "/proc/ty-test/ckpt"; /* to be made in /proc, which has no free space */
    preflight_init(&p);
    check_container(&c);
    CHECK_STR(status_of(&p, "container.disk"), "fail");
    preflight_release(&p);
    o.ckpt_dir = "/tmp";

    /* A /dev/shm of Docker's 64 MiB default against a 1 PiB need, a disk that cannot hold the
     * checkpoint, a host that does not resolve, a port someone listens on. */
    o.shm_min = 1LL << 50;
    o.disk_min = 1LL << 50;
    o.efa = 1;
    snprintf(re.master_addr, sizeof(re.master_addr), "no-such-host.invalid");
    int fd = socket(AF_INET, SOCK_STREAM, 0), one = 1;
    struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    socklen_t len = sizeof(sa);
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    CHECK(bind(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0 && listen(fd, 1) == 0);
    getsockname(fd, (struct sockaddr *)&sa, &len);
    re.master_port = ntohs(sa.sin_port);
    preflight_init(&p);
    check_container(&c);
    CHECK_STR(status_of(&p, "container.shm"), "fail");
    CHECK(strstr(jsonx_str(find(&p, "container.shm"), "detail"), "need") != NULL);
    CHECK_STR(status_of(&p, "container.disk"), "fail");
    CHECK_STR(status_of(&p, "container.master_addr"), "fail");
    CHECK_STR(status_of(&p, "container.master_port"), "fail");
    struct rlimit rl;
    getrlimit(RLIMIT_MEMLOCK, &rl);
    CHECK_STR(status_of(&p, "container.memlock"), rl.rlim_cur == RLIM_INFINITY ? "pass" : "fail");
    CHECK(p.counts[PF_FAIL] >= 4);
    preflight_release(&p);
    close(fd);
}

/* Without a GPU: skipped, unless GPUs were requested. Without CUDA at build time: said so. */
static void test_gpu_checks(void)
{
    struct preflight_opts o;
    struct preflight p;
    struct rankenv re = { .rank = 0, .world_size = 1 };
    preflight_opts_default(&o);
    preflight_init(&p);
    struct check_ctx c = { .opts = &o, .re = &re, .report = &p };
    check_cuda(&c);
    check_nccl(&c);
    const json_t *g = json_array_get(p.checks, 0);
    const char *detail = jsonx_str(g, "detail");
    CHECK_STR(jsonx_str(g, "status"), "skip");
    CHECK(!strncmp(detail, "skipped: no GPU", 15) ||
          !strcmp(detail, "skipped: built without CUDA"));
    CHECK_STR(jsonx_str(json_array_get(p.checks, 1), "status"), "skip");
    CHECK_INT(c.gpus_found, 0);
    preflight_release(&p);
    o.gpus = 8;
    preflight_init(&p);
    check_cuda(&c);
    CHECK_STR(jsonx_str(json_array_get(p.checks, 0), "status"), "fail");
    preflight_release(&p);
    CHECK_INT(checks_count, 4);
    CHECK_STR(checks_all[0].name, "cuda");
    CHECK_STR(checks_all[checks_count - 1].name, "container");
}

static void test_gpuref(void)
{
    CHECK_INT(gpuref_to_bf16(1.0f), 0x3f80);
    CHECK_INT(gpuref_to_bf16(-2.0f), 0xc000);
    CHECK(gpuref_from_bf16(0x3f80) == 1.0f);
    CHECK_INT(gpuref_to_bf16(1.00390625f), 0x3f80); /* halfway: rounds to even */
    CHECK_INT(gpuref_to_bf16(1.01171875f), 0x3f82);
    CHECK(isnan(gpuref_from_bf16(gpuref_to_bf16(NAN))));
    enum { M = 3, N = 2, K = 4 };
    uint16_t a[M * K], b[K * N];
    float c[M * N];
    for (int i = 0; i < M * K; i++)
        a[i] = gpuref_to_bf16((float)(i + 1));
    for (int i = 0; i < K * N; i++)
        b[i] = gpuref_to_bf16(i % 2 ? 1.0f : 0.5f);
    gpuref_gemm_bf16(M, N, K, a, b, c);
    /* column-major: c(0,0) = sum_p a(0,p) * b(p,0) = 1*.5 + 4*1 + 7*.5 + 10*1 */
    CHECK(c[0] == 18.0f);
    float ref[2] = { 1, 100 }, x[2] = { 1.01f, 100 };
    CHECK(fabs(gpuref_max_rel_err(x, ref, 2) - 0.005) < 1e-6);
    unsigned char buf[64];
    memset(buf, 0xA5, sizeof(buf));
    CHECK_INT(gpuref_verify_fill(buf, sizeof(buf), 0xA5), -1);
    buf[40] = 0;
    CHECK_INT(gpuref_verify_fill(buf, sizeof(buf), 0xA5), 40);
}

static void on_signal(int signo)
{
    (void)signo;
}

/* dynlib_open of lib keeps every signal disposition; 0 when lib is not on this machine. */
static int loads_keeping_signals(const char *lib)
{
    struct sigaction sa = { .sa_handler = on_signal }, before[NSIG], after;
    int have[NSIG];
    struct err err;
    err_init(&err);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    for (int s = 1; s < NSIG; s++) /* glibc keeps 32 and 33 to itself */
        have[s] = sigaction(s, NULL, &before[s]) == 0;
    void *h = dynlib_open("lib", lib, &err);
    for (int s = 1; h && s < NSIG; s++) {
        if (!have[s] || sigaction(s, NULL, &after) < 0)
            continue;
        if (after.sa_handler != before[s].sa_handler || after.sa_flags != before[s].sa_flags) {
            fprintf(stderr, "%s took signal %d\n", lib, s);
            CHECK(0);
        }
    }
    err_release(&err);
    signal(SIGTERM, SIG_DFL);
    signal(SIGINT, SIG_DFL);
    return h != NULL;
}

/* A library that loads must have every function of the check's table (ERR_IO would mean the
 * table and the library disagree); one that does not load is absent or not compiled in. */
static void check_table(int (*load)(struct err *), const char *what)
{
    struct err err;
    err_init(&err);
    if (load(&err) == 0) {
        CHECK(load(&err) == 0); /* loaded once, then kept */
    } else {
        CHECK(err.code == ERR_NOT_FOUND || err.code == ERR_UNSUPPORTED);
        fprintf(stderr, "note: %s not checked against its library: %s\n", what, err.msg);
    }
    err_release(&err);
}

static void test_dynlib(void)
{
    struct err err;
    char path[] = "/tmp/ty-test-dynlib-XXXXXX";
    err_init(&err);
    CHECK(!dynlib_open("Nothing", "libtrainyard-none.so.7", &err));
    CHECK_INT(err.code, ERR_NOT_FOUND);
    CHECK_STR(err.msg, "Nothing not found (libtrainyard-none.so.7)");
    err_release(&err);
    int fd = mkstemp(path);
    CHECK(fd >= 0 && write(fd, "not ELF\n", 8) == 8);
    close(fd);
    err_init(&err);
    CHECK(!dynlib_open("Junk", path, &err));
    CHECK_INT(err.code, ERR_IO);
    CHECK(!strncmp(err.msg, "Junk cannot be loaded (", 23));
    err_release(&err);
    unlink(path);
    err_init(&err);
    void *libm = dynlib_open("libm", "libm.so.6", &err);
    CHECK(libm && dynlib_sym(libm, "libm.so.6", "cos", &err));
    CHECK(!dynlib_sym(libm, "libm.so.6", "cuda_in_libm", &err));
    CHECK_INT(err.code, ERR_IO);
    CHECK(strstr(err.msg, "libm.so.6 has no cuda_in_libm") != NULL);
    err_release(&err);
    check_table(check_cuda_load, "CUDA table");
    check_table(check_nccl_load, "NCCL table");
    /* libinfinipath (libfabric's psm provider) sets handlers for SIGTERM, SIGSEGV...: kept. */
    if (!loads_keeping_signals("libinfinipath.so.4"))
        fprintf(stderr, "note: libinfinipath.so.4 absent\n");
    loads_keeping_signals("libfabric.so.1");
}

int main(void)
{
    test_tables();
    test_judge();
    test_report();
    test_container();
    test_gpu_checks();
    test_gpuref();
    test_dynlib();
    return check_done();
}
