/*
 * Usage from what an executor reports, through the real controller into a real store: a fake
 * executor that restarts ranks itself, as the Training Operator does on Kubernetes, reports a
 * pod's container that crashed and ran again in place (once while nobody looked), with each
 * run's own start and end (startedAt/finishedAt of the container) and its node's instance and
 * capacity type. What a
 * user relies on: each run is counted from its own start (not the rank's latest), with the
 * pod's GPUs shared by its ranks, priced by where it ran; the job's usage lists every run.
 */
#include <pthread.h>
#include <time.h>

#include "check.h"
#include "server/control/controller.h"
#include "store/usage.h"
#include "store_fixture.h"

#define SEC NS_PER_SEC

struct fake {
    struct executor ex;
    pthread_mutex_t lock;
    int starts;
};

static int fake_fits(struct executor *ex, const struct job *j, const struct spec_view *v)
{
    (void)ex, (void)j, (void)v;
    return 1;
}

static int fake_start(struct executor *ex, const struct job *j, const struct spec_view *v,
                      int attempt, const char *token, struct err *err)
{
    (void)j, (void)v, (void)attempt, (void)token, (void)err;
    struct fake *f = ex->impl;
    pthread_mutex_lock(&f->lock);
    f->starts++;
    pthread_mutex_unlock(&f->lock);
    return 0;
}

static int fake_stop(struct executor *ex, const struct job *j, int64_t grace, struct err *err)
{
    (void)ex, (void)j, (void)grace, (void)err;
    return 0;
}

static int fake_adopt(struct executor *ex, const struct job *j, const struct spec_view *v,
                      struct err *err)
{
    (void)ex, (void)j, (void)v, (void)err;
    return 1;
}

static void fake_poll(struct executor *ex)
{
    (void)ex;
}

static void report(struct fake *f, int64_t pk, int rank, enum rank_state state, int restarts,
                   int64_t started, int64_t time, const char *it, const char *ct)
{
    struct rank_report r = { .job_pk = pk,
                             .rank = rank,
                             .state = state,
                             .node = "ip-10-0-0-1",
                             .pod = "job-worker-0",
                             .exit_code = state == RANK_RUNNING ? -1 : state == RANK_FAILED,
                             .reason = state == RANK_RUNNING ? "Started" : "Completed",
                             .time = time,
                             .restarts = restarts,
                             .started_at = started,
                             .instance_type = it,
                             .capacity_type = ct };
    executor_report_rank(&f->ex, &r);
}

static int starts(struct fake *f)
{
    pthread_mutex_lock(&f->lock);
    int n = f->starts;
    pthread_mutex_unlock(&f->lock);
    return n;
}

/* Waits until the job's usage has n runs ended; returns them (caller frees). */
static struct usage_job_run *runs_after(struct store *st, const char *id, size_t want, size_t *n)
{
    char executor[32] = "";
    for (int i = 0; i < 1000; i++) {
        struct usage_job_run *r = NULL;
        *n = 0;
        size_t ended = 0;
        if (store_usage_job(st, id, clock_now_ns(), &r, n, executor, NULL) == 0)
            for (size_t k = 0; k < *n; k++)
                ended += !r[k].running;
        if (ended >= want)
            return r;
        free(r);
        clock_sleep_ms(10);
    }
    return NULL;
}

int main(void)
{
    struct fixture fx;
    struct store *st = fixture_open(&fx);
    CHECK(st != NULL);
    if (!st)
        return check_done();
    struct fake f = { .ex = { .name = "kubernetes",
                              .manages_restarts = true,
                              .fits = fake_fits,
                              .start = fake_start,
                              .stop = fake_stop,
                              .adopt = fake_adopt,
                              .poll = fake_poll,
                              .impl = &f } };
    pthread_mutex_init(&f.lock, NULL);
    const char *spec = "{\"name\":\"pod\",\"executor\":\"kubernetes\",\"procs_per_node\":2,"
                       "\"resources\":{\"gpus\":8}}";
    struct job_new jn = { .id = "job-k",
                          .name = "pod",
                          .executor = "kubernetes",
                          .spec = spec,
                          .nranks = 2,
                          .owner = "alice",
                          .now = clock_now_ns() };
    struct job_inserted in;
    CHECK_INT(store_job_insert(st, &jn, &in, NULL), 0);
    struct executor *exs[] = { &f.ex };
    struct controller_options o = { .stop_grace_ns = SEC, .tick_ns = 10 * NS_PER_MS };
    struct controller *c = controller_new(st, exs, 1, &o, NULL);
    CHECK_INT(controller_start(c, NULL), 0);
    controller_wake(c, in.pk);
    for (int i = 0; i < 500 && !starts(&f); i++)
        clock_sleep_ms(10);
    CHECK_INT(starts(&f), 1);

    int64_t t = clock_now_ns() - 3600 * SEC;
    report(&f, in.pk, 0, RANK_RUNNING, 0, 0, t, NULL, NULL);
    report(&f, in.pk, 1, RANK_RUNNING, 0, 0, t, NULL, NULL);
    /* rank 0's container crashed, ran again and crashed again while nobody looked: the end
     * seen is that of a run that started 11 min in, not when the rank was first seen running */
    report(&f, in.pk, 0, RANK_FAILED, 1, t + 660 * SEC, t + 1200 * SEC, "p5.48xlarge", "spot");
    report(&f, in.pk, 0, RANK_RUNNING, 2, 0, t + 1260 * SEC, NULL, NULL);
    report(&f, in.pk, 0, RANK_SUCCEEDED, 2, t + 1260 * SEC, t + 1800 * SEC, "p5.48xlarge", "spot");
    report(&f, in.pk, 1, RANK_SUCCEEDED, 0, 0, t + 1800 * SEC, "p5.48xlarge", "spot");
    size_t n = 0;
    struct usage_job_run *r = runs_after(st, "job-k", 3, &n);
    CHECK(r != NULL);
    CHECK_INT(n, 3);
    if (r && n == 3) {
        /* by attempt, rank, start */
        CHECK(r[0].rank == 0 && r[0].started_at == t + 660 * SEC && r[0].counted_ns == 540 * SEC);
        CHECK(r[1].rank == 0 && r[1].started_at == t + 1260 * SEC && r[1].counted_ns == 540 * SEC);
        CHECK(r[2].rank == 1 && r[2].started_at == t && r[2].counted_ns == 1800 * SEC);
        CHECK(r[0].gpus == 4 && r[2].gpus == 4); /* 8 GPUs of the pod, 2 ranks */
        CHECK_STR(r[1].instance_type, "p5.48xlarge");
        CHECK_STR(r[1].capacity_type, "spot");
        CHECK_STR(r[2].node, "ip-10-0-0-1");
    }
    free(r);
    controller_stop(c);
    controller_free(c);
    pthread_mutex_destroy(&f.lock);
    fixture_close(&fx);
    return check_done();
}
