/*
 * bench_scheduler: the cost of one scheduling pass with many jobs waiting and running, in the
 * parts that grow with them: the read of the in-flight jobs and their specs (what the pass
 * checks each of), the read of the waiting ones (store_jobs_waiting, from one covering index)
 * and the decisions (sched_decide). The jobs are a mix of sizes
 * over four queues, one with a quota; a third of the running ones have a deadline, a tenth are
 * preemptible backfills.
 *
 *   bench_scheduler [WAITING (default 10000)] [RUNNING (default 1000)] [DIR (default a temp dir)]
 */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/parse.h"
#include "core/xalloc.h"
#include "server/control/scheduler.h"
#include "job/spec.h"
#include "server/control/spec_cache.h"
#include "store/jobs.h"
#include "store/queues.h"

static const char *const queue_names[] = { "", "research", "prod", "urgent" };
static const struct sched_queue queues[] = {
    { "research", 0, 64 },
    { "prod", 5, -1 },
    { "urgent", 10, -1 },
};

static void fill_store(struct store *st, int waiting)
{
    int64_t now = clock_now_ns();
    for (int i = 0; i < waiting; i++) {
        char id[16], spec[160];
        snprintf(id, sizeof(id), "w%011d", i);
        int gpus = 1 << (i % 4), deadline = i % 3 ? 0 : 3600;
        snprintf(spec, sizeof(spec),
                 "{\"name\":\"b\",\"command\":[\"x\"],\"resources\":{\"gpus\":%d},"
                 "\"deadline_seconds\":%d}",
                 gpus, deadline);
        struct job_new jn = { .id = id,
                              .name = "b",
                              .executor = "local",
                              .spec = spec,
                              .nranks = 1 + i % 8,
                              .gpus_per_rank = gpus,
                              .deadline_seconds = deadline,
                              .priority = i % 5,
                              .queue = queue_names[i % 4],
                              .owner = "bench",
                              .now = now + i };
        struct job_inserted out;
        if (store_job_insert(st, &jn, &out, NULL) < 0)
            abort();
    }
}

/* RUNNING jobs of realistic spec size moved to running, as the pass reads them. */
static void fill_running(struct store *st, int running)
{
    int64_t now = clock_now_ns();
    for (int i = 0; i < running; i++) {
        char id[16], spec[1024];
        snprintf(id, sizeof(id), "r%011d", i);
        snprintf(spec, sizeof(spec),
                 "{\"name\":\"llama-%d\",\"image\":null,\"executor\":\"local\",\"command\":"
                 "[\"torchrun\",\"--nproc-per-node=8\",\"train.py\",\"--config\",\"configs/"
                 "llama-8b.yaml\",\"--lr\",\"3e-4\"],\"env\":{\"NCCL_DEBUG\":\"INFO\",\"HF_HOME\":"
                 "\"/fsx/hf\"},\"nodes\":1,\"procs_per_node\":8,\"resources\":{\"gpus\":1,"
                 "\"memory\":\"64Gi\"},\"restart\":{\"policy\":\"on_failure\",\"max_restarts\":3},"
                 "\"deadline_seconds\":%d,\"labels\":{\"team\":\"nlp\",\"run\":\"%d\"}}",
                 i, i % 3 ? 0 : 3600, i);
        struct job_new jn = { .id = id,
                              .name = "r",
                              .executor = "local",
                              .spec = spec,
                              .nranks = 8,
                              .gpus_per_rank = 1,
                              .owner = "bench",
                              .now = now };
        struct job_inserted out;
        if (store_job_insert(st, &jn, &out, NULL) < 0)
            abort();
        enum job_state path[] = { JOB_STARTING, JOB_RUNNING };
        for (int k = 0; k < 2; k++) {
            struct job_update u = { .pk = out.pk, .set_state = true, .state = path[k] };
            if (store_job_update(st, &u, NULL) < 0)
                abort();
        }
    }
}

/* What the pass does with each in-flight job before deciding: read it and view its spec, parsed
 * once per job (the controller's spec cache). */
static double read_in_flight(struct store *st, struct spec_cache *cache)
{
    int64_t t0 = clock_mono_ns();
    struct job **jobs = NULL;
    size_t n = 0;
    if (store_jobs_in_flight(st, &jobs, &n, NULL) < 0)
        abort();
    for (size_t i = 0; i < n; i++) {
        struct spec_view v;
        spec_view(spec_cache_get(cache, jobs[i]->pk, jobs[i]->spec), &v);
    }
    spec_cache_sweep(cache);
    jobs_free(jobs, n);
    return (double)(clock_mono_ns() - t0) / 1e6;
}

static double best_ms(double *runs, int n)
{
    double best = runs[0];
    for (int i = 1; i < n; i++)
        best = runs[i] < best ? runs[i] : best;
    return best;
}

int main(int argc, char **argv)
{
    int waiting = 10000, running = 1000;
    if ((argc > 1 && parse_int(argv[1], 1, 10000000, &waiting) < 0) ||
        (argc > 2 && parse_int(argv[2], 0, 1000000, &running) < 0)) {
        fprintf(stderr, "usage: bench_scheduler [WAITING] [RUNNING] [DIR]\n");
        return 2;
    }
    char dir[] = "/tmp/bench-sched-XXXXXX";
    const char *base = argc > 3 ? argv[3] : mkdtemp(dir);
    char *path = xasprintf("%s/trainyard.db", base);
    struct store_options so = { .sync_full = false, .busy_timeout_ms = 5000, .max_batch = 512 };
    struct store *st = store_open(path, &so, NULL);
    if (!st)
        return 1;
    int64_t t0 = clock_mono_ns();
    fill_store(st, waiting);
    fill_running(st, running);
    printf("stored %d waiting and %d running jobs in %.1f s\n", waiting, running,
           (double)(clock_mono_ns() - t0) / 1e9);

    struct sched_job *run = xcalloc((size_t)running + 1, sizeof(*run));
    int64_t now = clock_now_ns();
    for (int i = 0; i < running; i++)
        run[i] = (struct sched_job){ .pk = 1000000 + i,
                                     .queue = queue_names[i % 4],
                                     .priority = i % 5,
                                     .need = { 1, 1 << (i % 3) },
                                     .runtime_ns = i % 3 ? 0 : 3600 * 1000000000LL,
                                     .started = now - (int64_t)i * 1000000000LL,
                                     .preemptible = i % 10 == 0 };
    struct spec_cache *cache = spec_cache_new();
    double first = read_in_flight(st, cache);
    printf("the first pass parses every in-flight spec: %.2f ms\n", first);
    enum { ROUNDS = 15 };
    double flight_ms[ROUNDS], read_ms[ROUNDS], decide_ms[ROUNDS];
    size_t nstart = 0, npre = 0;
    for (int r = 0; r < ROUNDS; r++) {
        flight_ms[r] = read_in_flight(st, cache);
        struct waiting_job *w = NULL;
        size_t n = 0;
        int64_t a = clock_mono_ns();
        if (store_jobs_waiting(st, &w, &n, NULL) < 0)
            return 1;
        int64_t b = clock_mono_ns();
        struct sched_job *wait = xcalloc(n + 1, sizeof(*wait));
        for (size_t i = 0; i < n; i++)
            wait[i] = (struct sched_job){ .pk = w[i].pk,
                                          .queue = w[i].queue,
                                          .priority = w[i].priority,
                                          .created = w[i].created_at,
                                          .need = { w[i].nranks,
                                                    (int64_t)w[i].nranks * w[i].gpus_per_rank },
                                          .runtime_ns = w[i].deadline_seconds * 1000000000LL };
        struct sched_decision *out = xcalloc(n + 1, sizeof(*out));
        int64_t *pre = xcalloc((size_t)running + 1, sizeof(*pre));
        struct sched_input in = { .capacity = { 4096, 2048 },
                                  .queues = queues,
                                  .nqueues = 3,
                                  .running = run,
                                  .nrunning = (size_t)running,
                                  .waiting = wait,
                                  .nwaiting = n,
                                  .now = now };
        int64_t c = clock_mono_ns();
        npre = sched_decide(&in, out, pre);
        int64_t d = clock_mono_ns();
        nstart = 0;
        for (size_t i = 0; i < n; i++)
            nstart += out[i].why == SCHED_START;
        read_ms[r] = (double)(b - a) / 1e6;
        decide_ms[r] = (double)(d - c) / 1e6;
        free(wait);
        free(out);
        free(pre);
        free(w);
    }
    double f = best_ms(flight_ms, ROUNDS), rd = best_ms(read_ms, ROUNDS),
           dc = best_ms(decide_ms, ROUNDS);
    printf("a pass over %d waiting and %d running jobs (best of %d): in-flight jobs and "
           "their specs %.2f ms, waiting jobs read %.2f ms, decisions %.2f ms, total %.2f ms "
           "(%zu would start, %zu backfills to suspend)\n",
           waiting, running, ROUNDS, f, rd, dc, f + rd + dc, nstart, npre);
    spec_cache_free(cache);
    store_close(st);
    if (argc <= 3) {
        char *cmd = xasprintf("rm -rf %s", base);
        if (system(cmd) != 0)
            fprintf(stderr, "could not remove %s\n", base);
        free(cmd);
    }
    free(path);
    free(run);
    return 0;
}
