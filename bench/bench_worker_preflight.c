/*
 * bench_worker_preflight: wall time of `trainyard-worker preflight` without a GPU, in process,
 * per check and in all: as a single rank, and as 2 ranks with the fabric point-to-point test over
 * libfabric tcp on loopback (rank 0's times).
 */
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/clock.h"
#include "worker/checks.h"

static void run(int rank, int world, const char *spec, int print)
{
    struct preflight_opts o;
    struct preflight p;
    struct rankenv re = { .rank = rank, .world_size = world, .local_rank = rank };
    if (world > 1) {
        snprintf(re.master_addr, sizeof(re.master_addr), "127.0.0.1");
        re.master_port = 29499;
    }
    preflight_opts_default(&o);
    o.rdzv = spec;
    o.timeout_ms = 20000;
    preflight_init(&p);
    struct check_ctx c = { .opts = &o, .re = &re, .report = &p };
    int64_t total = 0;
    for (int i = 0; i < checks_count; i++) {
        int64_t t0 = clock_mono_ns();
        checks_all[i].run(&c);
        int64_t dt = clock_mono_ns() - t0;
        total += dt;
        if (print)
            printf("  %-10s %8.2f ms\n", checks_all[i].name, (double)dt / 1e6);
    }
    rdzv_close(c.rdzv);
    if (print)
        printf("  %-10s %8.2f ms  (%d checks: %d pass, %d warn, %d skip, %d fail)\n", "total",
               (double)total / 1e6, (int)json_array_size(p.checks), p.counts[PF_PASS],
               p.counts[PF_WARN], p.counts[PF_SKIP], p.counts[PF_FAIL]);
    preflight_release(&p);
}

int main(void)
{
    setenv("FI_PROVIDER", "tcp", 0);
    setenv("FI_TCP_IFACE", "lo", 0);
    printf("preflight without a GPU, 1 rank\n");
    run(0, 1, NULL, 1);
    char dir[] = "/tmp/ty-bench-preflight-XXXXXX", spec[64];
    if (!mkdtemp(dir))
        return 1;
    snprintf(spec, sizeof(spec), "dir:%s", dir);
    printf("preflight without a GPU, 2 ranks (rank 0, fabric p2p over tcp)\n");
    pid_t kid = fork();
    if (kid == 0) {
        run(1, 2, spec, 0);
        _exit(0);
    }
    run(0, 2, spec, 1);
    waitpid(kid, NULL, 0);
    char cmd[96];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    return system(cmd) == 0 ? 0 : 1;
}
