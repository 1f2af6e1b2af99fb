/*
 * bench_worker_train: tokens per second of the reference trainer (train_run, default model:
 * context 8, embed 16, hidden 128, batch 32 per rank), as 1 rank and as 2 ranks on this machine's
 * 2 cores averaging gradients over libfabric tcp on loopback. A token is one predicted
 * character. Run from the source root (it reads examples/corpus.txt).
 */
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/clock.h"
#include "worker/train.h"

#define STEPS 600

static int one_rank(int rank, int world, const char *rdzv, const char *log)
{
    struct train_opts o;
    struct rankenv re = { .rank = rank, .world_size = world, .local_rank = rank };
    struct err err;
    err_init(&err);
    train_opts_default(&o);
    o.steps = STEPS;
    o.rdzv = rdzv;
    FILE *out = fopen(log, "w");
    int rc = out ? train_run(&o, &re, out, NULL, &err) : -1;
    if (rc != 0)
        fprintf(stderr, "rank %d: %s\n", rank, err.msg);
    if (out)
        fclose(out);
    err_release(&err);
    return rc;
}

/* The trainer's own figure: samples (= predicted tokens) per second of its training loop. */
static double steady(const char *log)
{
    FILE *f = fopen(log, "r");
    char line[512];
    double v = -1;
    while (f && fgets(line, sizeof(line), f)) {
        const char *p = strstr(line, "'train_samples_per_second': ");
        if (p)
            v = strtod(p + 28, NULL);
    }
    if (f)
        fclose(f);
    return v;
}

/* Best of two runs: the 2 cores are shared with whatever else runs. */
static double run(int world, double *loop_tps)
{
    char dir[] = "/tmp/ty-bench-train-XXXXXX", spec[64], log[96];
    if (!mkdtemp(dir))
        return -1;
    snprintf(spec, sizeof(spec), "dir:%s", dir);
    snprintf(log, sizeof(log), "%s/rank0.log", dir);
    int64_t t0 = clock_mono_ns();
    pid_t pids[2];
    for (int r = 0; r < world; r++)
        if ((pids[r] = fork()) == 0)
            _exit(one_rank(r, world, spec, r == 0 ? log : "/dev/null") == 0 ? 0 : 1);
    int bad = 0;
    for (int r = 0; r < world; r++) {
        int st;
        waitpid(pids[r], &st, 0);
        bad |= !WIFEXITED(st) || WEXITSTATUS(st) != 0;
    }
    double sec = (double)(clock_mono_ns() - t0) / 1e9;
    *loop_tps = steady(log);
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
    double wall[2] = { 0, 0 }, loop[2] = { 0, 0 };
    for (int rep = 0; rep < 2; rep++) {
        for (int w = 1; w <= 2; w++) {
            double l, t = run(w, &l);
            wall[w - 1] = t > wall[w - 1] ? t : wall[w - 1];
            loop[w - 1] = l > loop[w - 1] ? l : loop[w - 1];
        }
    }
    printf("trainer, %d steps of batch 32 per rank, best of 2; tokens/s all ranks together\n",
           STEPS);
    printf("  %-18s %14s %20s\n", "", "training loop", "wall incl. start-up");
    printf("  %-18s %14.0f %20.0f\n", "1 rank", loop[0], wall[0]);
    printf("  %-18s %14.0f %20.0f   (loop %.2fx of 1 rank)\n", "2 ranks, fabric tcp", loop[1],
           wall[1], loop[0] > 0 ? loop[1] / loop[0] : 0);
    return wall[0] > 0 && wall[1] > 0 ? 0 : 1;
}
