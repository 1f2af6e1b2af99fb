/*
 * bench_worker_train: tokens per second of the reference trainer (train_run, default model:
 * context 8, embed 16, hidden 128, batch 32 per rank), as 1 rank and as 2 ranks on this machine's
 * 2 cores averaging gradients over libfabric tcp on loopback. A token is one predicted
 * character. Run from the source root (it reads examples/corpus.txt).
 */
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "server/core/clock.h"
#include "worker/train.h"

#define STEPS 600

static int one_rank(int rank, int world, const char *rdzv)
{
    struct train_opts o;
    struct rankenv re = { .rank = rank, .world_size = world, .local_rank = rank };
    struct err err;
    err_init(&err);
    train_opts_default(&o);
    o.steps = STEPS;
    o.rdzv = rdzv;
    FILE *devnull = fopen("/dev/null", "w");
    int rc = train_run(&o, &re, devnull, NULL, &err);
    if (rc != 0)
        fprintf(stderr, "rank %d: %s\n", rank, err.msg);
    fclose(devnull);
    err_release(&err);
    return rc;
}

static double run(int world)
{
    char dir[] = "/tmp/ty-bench-train-XXXXXX", spec[64];
    if (!mkdtemp(dir))
        return -1;
    snprintf(spec, sizeof(spec), "dir:%s", dir);
    int64_t t0 = clock_mono_ns();
    pid_t pids[2];
    for (int r = 0; r < world; r++)
        if ((pids[r] = fork()) == 0)
            _exit(one_rank(r, world, spec) == 0 ? 0 : 1);
    int bad = 0;
    for (int r = 0; r < world; r++) {
        int st;
        waitpid(pids[r], &st, 0);
        bad |= !WIFEXITED(st) || WEXITSTATUS(st) != 0;
    }
    double sec = (double)(clock_mono_ns() - t0) / 1e9;
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    if (system(cmd) != 0)
        bad = 1;
    return bad ? -1 : (double)STEPS * 32 * world / sec;
}

int main(void)
{
    setenv("FI_PROVIDER", "tcp", 0);
    setenv("FI_TCP_IFACE", "lo", 0);
    double one = run(1), two = run(2);
    printf("trainer, %d steps of batch 32 per rank (wall time incl. start-up)\n", STEPS);
    printf("  1 rank            %10.0f tokens/s\n", one);
    printf("  2 ranks (fabric)  %10.0f tokens/s  (%.2fx)\n", two, one > 0 ? two / one : 0);
    return one > 0 && two > 0 ? 0 : 1;
}
