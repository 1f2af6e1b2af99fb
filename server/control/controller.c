/*
 * controller: the reconcile loop; see controller.h. Reports from executors are copied into a
 * queue under `lock` and handled on the controller thread, so all job decisions are serial
 * (the queue and the handling of reports: controller_report.c).
 *
 * How a running attempt ends: when a rank fails (or a stall policy stops the job) the other
 * ranks are stopped at once, and the end is decided once every rank has ended and the
 * attempt's logs are stored (so the diagnosis has seen every rank's last lines): restart,
 * preempted or failed, by server/control/outcome.c. A job whose ranks all succeeded ends the same
 * way, after its logs are in.
 */
#include "server/control/controller_internal.h"

#include "api/auth.h"
#include "core/clock.h"
#include "core/jsonx.h"
#include "core/log.h"
#include "core/xalloc.h"
#include "server/health/health.h"
#include "server/control/outcome.h"
#include "store/nodes.h"
#include "store/tokens.h"

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
    c->dirty = true;
    for (size_t i = 0; i < n; i++)
        controller_listen(c, executors[i]);
    return c;
}

struct executor *controller_executor(struct controller *c, const char *name)
{
    for (size_t i = 0; i < c->nexec; i++)
        if (strcmp(c->executors[i]->name, name) == 0)
            return c->executors[i];
    return NULL;
}

bool controller_stop_requested(struct controller *c, int64_t pk)
{
    for (size_t i = 0; i < c->nstopping; i++)
        if (c->stopping_jobs[i] == pk)
            return true;
    return false;
}

void controller_mark_stop(struct controller *c, int64_t pk, bool on)
{
    for (size_t i = 0; i < c->nstopping; i++) {
        if (c->stopping_jobs[i] == pk) {
            if (!on)
                c->stopping_jobs[i] = c->stopping_jobs[--c->nstopping];
            return;
        }
    }
    if (!on)
        return;
    if (c->nstopping == c->capstopping) {
        c->capstopping = c->capstopping ? c->capstopping * 2 : 16;
        c->stopping_jobs = xrealloc(c->stopping_jobs, c->capstopping * sizeof(int64_t));
    }
    c->stopping_jobs[c->nstopping++] = pk;
}

/* Applies u; logs (never fails the loop) when the store refuses it. */
int controller_commit(struct controller *c, struct job_update *u)
{
    struct err err;
    err_init(&err);
    int rc = store_job_update(c->st, u, &err);
    if (rc < 0 && err.code == ERR_UNAVAILABLE)
        c->store_down = true;
    if (rc < 0 && err.code != ERR_CONFLICT)
        log_error("controller: job %lld: %s", (long long)u->pk, err.msg);
    err_release(&err);
    if (rc == 0 && u->set_state && c->cb.job_state)
        c->cb.job_state(c->cb.ctx, u->pk, u->state);
    return rc;
}

void controller_stop_job(struct controller *c, struct executor *ex, const struct job *j)
{
    if (controller_stop_requested(c, j->pk))
        return;
    controller_mark_stop(c, j->pk, true);
    struct err err;
    err_init(&err);
    if (ex->stop(ex, j, c->opts.stop_grace_ns, &err) < 0)
        log_warn("controller: stopping job %s: %s", j->id, err.msg);
    err_release(&err);
}

struct rank_counts controller_count_ranks(struct controller *c, int64_t pk)
{
    struct rank_counts n = { 0 };
    struct rank *ranks = NULL;
    if (store_ranks_get(c->st, pk, &ranks, &n.total, NULL) < 0)
        return n;
    for (size_t i = 0; i < n.total; i++) {
        n.terminal += rankstate_terminal(ranks[i].state);
        n.succeeded += ranks[i].state == RANK_SUCCEEDED;
        n.failed += ranks[i].state == RANK_FAILED || ranks[i].state == RANK_LOST;
    }
    ranks_free(ranks, n.total);
    return n;
}

void controller_start_attempt(struct controller *c, struct executor *ex, const struct job *j,
                              const struct spec_view *v, int attempt)
{
    char msg[96];
    if (attempt)
        snprintf(msg, sizeof(msg), "restart %d", attempt);
    else
        snprintf(msg, sizeof(msg), "starting %d ranks", v->nranks);
    struct rank_change reset = { .rank = -1,
                                 .fields = RC_STATE | RC_PID | RC_EXIT | RC_RESTARTS | RC_REASON |
                                           RC_STARTED | RC_FINISHED,
                                 .state = RANK_PENDING,
                                 .exit_code = -1,
                                 .restarts = attempt };
    struct job_update u = { .pk = j->pk,
                            .set_state = true,
                            .state = JOB_STARTING,
                            .reason = attempt ? "Restarting" : "Starting",
                            .message = msg,
                            .set_attempt = true,
                            .attempt = attempt,
                            .ranks = &reset,
                            .nranks = 1 };
    if (controller_commit(c, &u) < 0)
        return;
    controller_mark_stop(c, j->pk, false);
    controller_ending_remove(c, j->pk);
    if (c->opts.health)
        health_attempt(c->opts.health, j, attempt, v->nranks, false);
    struct err err;
    err_init(&err);
    char secret[TOKEN_SECRET_MAX], id[32];
    store_tokens_revoke_job(c->st, j->pk, clock_now_ns(), NULL);
    if (auth_token_create(c->st, "worker", SCOPE_WORKER, j->pk, 0, "controller", secret, id,
                          &err) == 0 &&
        ex->start(ex, j, v, attempt, secret, &err) == 0) {
        c->starts++;
        err_release(&err);
        return;
    }
    log_warn("controller: job %s did not start: %s", j->id, err.msg);
    struct job_update fail = { .pk = j->pk,
                               .set_state = true,
                               .state = JOB_FAILED,
                               .reason = "StartFailed",
                               .message = err.msg };
    if (controller_commit(c, &fail) == 0 && c->opts.health)
        health_forget(c->opts.health, j->pk);
    controller_stop_job(c, ex, j);
    err_release(&err);
}

void controller_finish(struct controller *c, const struct job *j, enum job_state state,
                       const char *reason, const char *message, const char *ff,
                       const struct job_event *events, size_t nevents)
{
    struct job_update u = { .pk = j->pk,
                            .set_state = true,
                            .state = state,
                            .reason = reason,
                            .message = message,
                            .first_failure = ff,
                            .events = events,
                            .nevents = nevents };
    if (controller_commit(c, &u) == 0) {
        store_tokens_revoke_job(c->st, j->pk, clock_now_ns(), NULL);
        c->failures += state == JOB_FAILED;
        c->preemptions += state == JOB_PREEMPTED;
        controller_ending_remove(c, j->pk);
        if (c->opts.health)
            health_forget(c->opts.health, j->pk);
    }
}

/* Starts queued jobs in priority order, per executor, stopping at the first that does not fit
 * so that a large job is never overtaken forever by smaller ones. */
static void admit(struct controller *c, struct job **jobs, size_t n)
{
    for (size_t e = 0; e < c->nexec; e++) {
        struct executor *ex = c->executors[e];
        for (size_t i = 0; i < n; i++) {
            struct job *j = jobs[i];
            if (strcmp(j->executor, ex->name) != 0)
                continue;
            json_t *spec = json_loads(j->spec, 0, NULL);
            struct spec_view v;
            spec_view(spec, &v);
            int fits = ex->fits(ex, j, &v);
            if (fits > 0)
                controller_start_attempt(c, ex, j, &v, j->attempt);
            json_decref(spec);
            if (fits == 0)
                break;
        }
    }
}

static void check_job(struct controller *c, struct job *j, int64_t now)
{
    struct executor *ex = controller_executor(c, j->executor);
    if (!ex)
        return;
    json_t *spec = json_loads(j->spec, 0, NULL);
    struct spec_view v;
    spec_view(spec, &v);
    struct rank_counts n;
    switch (j->state) {
    case JOB_CANCELLING:
        controller_stop_job(c, ex, j);
        n = controller_count_ranks(c, j->pk);
        if (n.terminal == n.total)
            controller_finish(c, j, JOB_CANCELLED, "Cancelled", j->message, NULL, NULL, 0);
        break;
    case JOB_RESTARTING:
        if (ex->manages_restarts)
            break; /* the operator restarts the pods; its executor reports when they run */
        controller_stop_job(c, ex, j);
        n = controller_count_ranks(c, j->pk);
        if (n.terminal == n.total)
            controller_start_attempt(c, ex, j, &v, j->attempt + 1);
        break;
    case JOB_STARTING:
    case JOB_RUNNING:
        if (v.deadline_seconds && j->started_at &&
            now - j->started_at > v.deadline_seconds * NS_PER_SEC) {
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
    json_decref(spec);
}

#define ADMIT_BATCH 256

static void reconcile(struct controller *c)
{
    int64_t t0 = clock_mono_ns();
    struct job **jobs = NULL;
    size_t n = 0;
    struct err err;
    err_init(&err);
    if (store_jobs_in_flight(c->st, &jobs, &n, &err) == 0) {
        int64_t now = clock_now_ns();
        for (size_t i = 0; i < n; i++)
            check_job(c, jobs[i], now);
        jobs_free(jobs, n);
    }
    if (err.code == ERR_NONE && store_jobs_runnable(c->st, ADMIT_BATCH, &jobs, &n, &err) == 0) {
        admit(c, jobs, n);
        jobs_free(jobs, n);
    }
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
        if (dirty || clock_mono_ns() - atomic_load(&c->last_reconcile) > NS_PER_SEC)
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
    pthread_cond_destroy(&c->cond);
    pthread_mutex_destroy(&c->lock);
    free(c);
}

void controller_metrics(struct controller *c, struct buf *out)
{
    int64_t last = atomic_load(&c->last_reconcile);
    buf_printf(out,
               "# HELP trainyard_job_starts_total Job attempts started.\n"
               "# TYPE trainyard_job_starts_total counter\ntrainyard_job_starts_total %llu\n"
               "# HELP trainyard_job_restarts_total Jobs restarted after a rank failed.\n"
               "# TYPE trainyard_job_restarts_total counter\ntrainyard_job_restarts_total %llu\n"
               "# HELP trainyard_job_failures_total Jobs that failed.\n"
               "# TYPE trainyard_job_failures_total counter\ntrainyard_job_failures_total %llu\n"
               "# HELP trainyard_job_preemptions_total Jobs that ended preempted.\n"
               "# TYPE trainyard_job_preemptions_total counter\n"
               "trainyard_job_preemptions_total %llu\n"
               "# HELP trainyard_job_stalls_total Running jobs flagged stalled.\n"
               "# TYPE trainyard_job_stalls_total counter\ntrainyard_job_stalls_total %llu\n"
               "# HELP trainyard_reconcile_lag_seconds Time since the last reconcile pass "
               "ended.\n"
               "# TYPE trainyard_reconcile_lag_seconds gauge\n"
               "trainyard_reconcile_lag_seconds %.6f\n"
               "# HELP trainyard_reconcile_duration_seconds Duration of the last reconcile "
               "pass.\n"
               "# TYPE trainyard_reconcile_duration_seconds gauge\n"
               "trainyard_reconcile_duration_seconds %.6f\n",
               (unsigned long long)c->starts, (unsigned long long)c->restarts,
               (unsigned long long)c->failures, (unsigned long long)c->preemptions,
               (unsigned long long)c->stalls, last ? (double)(clock_mono_ns() - last) / 1e9 : 0.0,
               (double)atomic_load(&c->reconcile_ns) / 1e9);
}
