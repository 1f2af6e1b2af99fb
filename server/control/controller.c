/*
 * controller: the reconcile loop; see controller.h. Each pass looks at every in-flight job
 * (check_job: a cancel to complete, a restart to start, an attempt ending, a deadline) and
 * then admits queued jobs (controller_admit.c). Reports from executors are copied into a queue
 * under `lock` and handled on the controller thread between passes (controller_report.c), so all
 * job decisions are serial. How an attempt ends: controller_end.c. Every change of a job's
 * state: controller_state.c. Also the controller's life: adoption after a daemon restart, the
 * thread, /metrics.
 */
#include "server/control/controller_admit.h"
#include "server/control/controller_end.h"
#include "server/control/controller_report.h"
#include "server/control/controller_state.h"
#include "server/control/spec_cache.h"

#include "core/clock.h"
#include "core/log.h"
#include "core/prom.h"
#include "core/xalloc.h"
#include "server/health/health.h"

struct controller *controller_new(struct store *st, struct executor **executors, size_t n,
                                  const struct controller_options *opts,
                                  const struct controller_callbacks *cb)
{
    struct controller *c = XNEW(struct controller);
    c->st = st;
    c->executors = executors;
    c->nexec = n;
    c->opts = *opts;
    if (c->opts.tick_ns <= 0)
        c->opts.tick_ns = 100 * NS_PER_MS;
    if (cb)
        c->cb = *cb;
    pthread_mutex_init(&c->lock, NULL);
    pthread_cond_init(&c->cond, NULL);
    pthread_mutex_init(&c->wait_lock, NULL);
    c->specs = spec_cache_new();
    c->dirty = true;
    for (size_t i = 0; i < n; i++)
        controller_listen(c, executors[i]);
    return c;
}

static void check_job(struct controller *c, struct job *j, int64_t now, struct admit_running *run)
{
    struct executor *ex = controller_executor(c, j->executor);
    if (!ex)
        return;
    struct spec_view v;
    spec_view(spec_cache_get(c->specs, j->pk, j->spec), &v);
    controller_admit_running(run, ex, j, &v); /* what it holds as the pass began */
    switch (j->state) {
    case JOB_CANCELLING:
        controller_stop_job(c, ex, j);
        controller_cancel_done(c, j);
        break;
    case JOB_RESTARTING:
        if (j->desired && strcmp(j->desired, "run") != 0 && strcmp(j->desired, "backfill") != 0) {
            controller_stop_job(c, ex, j); /* suspended: queued once its ranks have ended */
            controller_suspend_done(c, j);
            break;
        }
        if (ex->manages_restarts)
            break; /* the operator restarts the pods; its executor reports when they run */
        controller_next_attempt(c, ex, j, &v, now);
        break;
    case JOB_STARTING:
    case JOB_RUNNING:
        if (controller_past_deadline(j, &v, now)) {
            controller_deadline(c, ex, j, &v, now);
            break;
        }
        controller_settle(c, ex, j, &v);
        if (j->state == JOB_RUNNING)
            controller_watch(c, ex, j, &v);
        break;
    default:
        break;
    }
}

static void reconcile(struct controller *c)
{
    int64_t t0 = clock_mono_ns();
    struct job **jobs = NULL;
    size_t n = 0;
    struct err err;
    err_init(&err);
    struct admit_running run = { 0 };
    if (store_jobs_in_flight(c->st, &jobs, &n, &err) == 0) {
        int64_t now = clock_now_ns();
        for (size_t i = 0; i < n; i++)
            check_job(c, jobs[i], now, &run);
        jobs_free(jobs, n);
        spec_cache_sweep(c->specs); /* the specs of jobs no longer in flight */
        controller_admit(c, &run);
    }
    controller_admit_release(&run);
    if (err_is_set(&err))
        log_error("controller: listing jobs: %s", err.msg);
    err_release(&err);
    if (c->opts.health)
        health_tick(c->opts.health);
    int64_t done = clock_mono_ns();
    atomic_store(&c->reconcile_ns, done - t0);
    atomic_store(&c->last_reconcile, done);
}

/* Changes are reconciled in passes at least this far apart: a burst of submissions then costs
 * one pass per few milliseconds instead of one per job; a job starts at most this much later. */
#define RECONCILE_GAP_NS (5 * NS_PER_MS)

/* Waits for work: events to drain at once, changes once the gap has passed, else a tick. */
static void wait_for_work(struct controller *c)
{
    int64_t wait = c->opts.tick_ns;
    if (c->dirty) {
        int64_t gap = atomic_load(&c->last_reconcile) + RECONCILE_GAP_NS - clock_mono_ns();
        wait = gap > 0 ? gap : 0;
    }
    if (c->stopping || c->head || wait <= 0)
        return;
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    int64_t ns = until.tv_nsec + wait;
    until.tv_sec += ns / NS_PER_SEC;
    until.tv_nsec = ns % NS_PER_SEC;
    pthread_cond_timedwait(&c->cond, &c->lock, &until);
}

static void *loop(void *arg)
{
    pthread_setname_np(pthread_self(), "ty-controller");
    struct controller *c = arg;
    for (;;) {
        pthread_mutex_lock(&c->lock);
        wait_for_work(c);
        bool due =
            c->dirty && clock_mono_ns() - atomic_load(&c->last_reconcile) >= RECONCILE_GAP_NS;
        if (due)
            c->dirty = false;
        /* Jobs whose end is being decided are looked at every tick. */
        bool stopping = c->stopping, dirty = due || c->nending > 0;
        pthread_mutex_unlock(&c->lock);
        if (stopping)
            break;
        for (size_t e = 0; e < c->nexec; e++)
            c->executors[e]->poll(c->executors[e]);
        controller_drain(c);
        if (dirty || controller_wake_due(c) ||
            clock_mono_ns() - atomic_load(&c->last_reconcile) > NS_PER_SEC)
            reconcile(c);
        controller_drain(c);
    }
    return NULL;
}

/* After a restart: every job that may have live ranks is handed to its executor to find them. */
static void adopt_all(struct controller *c)
{
    struct job **jobs = NULL;
    size_t n = 0;
    if (store_jobs_in_flight(c->st, &jobs, &n, NULL) < 0)
        return;
    for (size_t i = 0; i < n; i++) {
        struct job *j = jobs[i];
        struct executor *ex = controller_executor(c, j->executor);
        if (!ex)
            continue;
        json_t *spec = json_loads(j->spec, 0, NULL);
        struct spec_view v;
        spec_view(spec, &v);
        if (c->opts.health) /* before adopt: the ranks' logs are fed from then on */
            health_attempt(c->opts.health, j, j->attempt, v.nranks, true);
        struct err err;
        err_init(&err);
        int rc = ex->adopt(ex, j, &v, &err);
        if (rc < 0)
            log_warn("controller: adopting job %s: %s", j->id, err.msg);
        else if (rc == 1 && j->state == JOB_CANCELLING)
            controller_finish(c, j, JOB_CANCELLED, "Cancelled", j->message, NULL, NULL, 0);
        else if (rc == 1 && (j->state == JOB_STARTING || j->state == JOB_RUNNING))
            controller_start_attempt(c, ex, j, &v, j->attempt);
        else
            log_info("controller: adopted job %s (%s)", j->id, jobstate_name(j->state));
        err_release(&err);
        json_decref(spec);
    }
    jobs_free(jobs, n);
}

int controller_start(struct controller *c, struct err *err)
{
    adopt_all(c);
    controller_drain(c);
    if (pthread_create(&c->thread, NULL, loop, c) != 0)
        return err_set(err, ERR_INTERNAL, "cannot start the controller thread");
    c->running = true;
    return 0;
}

void controller_wake(struct controller *c, int64_t job_pk)
{
    (void)job_pk;
    pthread_mutex_lock(&c->lock);
    if (!c->dirty) /* the loop does not sleep while dirty: one signal per pass is enough */
        pthread_cond_signal(&c->cond);
    c->dirty = true;
    pthread_mutex_unlock(&c->lock);
}

void controller_stop(struct controller *c)
{
    if (!c || !c->running)
        return;
    pthread_mutex_lock(&c->lock);
    c->stopping = true;
    pthread_cond_signal(&c->cond);
    pthread_mutex_unlock(&c->lock);
    pthread_join(c->thread, NULL);
    c->running = false;
}

void controller_free(struct controller *c)
{
    if (!c)
        return;
    controller_stop(c);
    controller_reports_free(c);
    free(c->stopping_jobs);
    free(c->ending);
    free(c->waits);
    spec_cache_free(c->specs);
    pthread_mutex_destroy(&c->wait_lock);
    pthread_cond_destroy(&c->cond);
    pthread_mutex_destroy(&c->lock);
    free(c);
}

void controller_metrics(struct controller *c, struct buf *out)
{
    int64_t last = atomic_load(&c->last_reconcile);
    struct prom p;
    prom_init(&p, out);
    prom_scalar(&p, "trainyard_job_starts_total", PROM_COUNTER, "Job attempts started.",
                (double)c->starts);
    prom_scalar(&p, "trainyard_job_restarts_total", PROM_COUNTER,
                "Jobs restarted after a rank failed.", (double)c->restarts);
    prom_scalar(&p, "trainyard_job_failures_total", PROM_COUNTER, "Jobs that failed.",
                (double)c->failures);
    prom_scalar(&p, "trainyard_job_preemptions_total", PROM_COUNTER, "Jobs that ended preempted.",
                (double)c->preemptions);
    prom_scalar(&p, "trainyard_job_backfills_total", PROM_COUNTER,
                "Jobs started ahead of a job that waits (backfill).", (double)c->backfills);
    prom_scalar(&p, "trainyard_job_requeues_total", PROM_COUNTER,
                "Backfilled jobs suspended and queued again to make room for a job ahead.",
                (double)c->requeues);
    prom_scalar(&p, "trainyard_job_stalls_total", PROM_COUNTER, "Running jobs flagged stalled.",
                (double)c->stalls);
    prom_scalar(&p, "trainyard_reconcile_lag_seconds", PROM_GAUGE,
                "Time since the last reconcile pass ended.",
                last ? (double)(clock_mono_ns() - last) / 1e9 : 0.0);
    prom_scalar(&p, "trainyard_reconcile_duration_seconds", PROM_GAUGE,
                "Duration of the last reconcile pass.",
                (double)atomic_load(&c->reconcile_ns) / 1e9);
}
