/*
 * controller_state: every job state change the controller makes, one function per transition
 * (see controller_state.h for who calls which), and the bookkeeping they share: the jobs whose
 * stop was sent, the jobs whose end is being decided, the counters /metrics shows. Each change
 * is committed to the store before the executor is told to act on it, so a daemon that dies in
 * between finds the decision on restart (controller.c's adoption). Controller thread only.
 */
#include "server/control/controller_state.h"

#include "api/auth.h"
#include "core/clock.h"
#include "core/log.h"
#include "core/xalloc.h"
#include "server/health/health.h"
#include "store/tokens.h"

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

void controller_stop_forget(struct controller *c, int64_t pk)
{
    for (size_t i = 0; i < c->nstopping; i++) {
        if (c->stopping_jobs[i] == pk) {
            c->stopping_jobs[i] = c->stopping_jobs[--c->nstopping];
            return;
        }
    }
}

void controller_stop_job(struct controller *c, struct executor *ex, const struct job *j)
{
    if (controller_stop_requested(c, j->pk))
        return;
    XGROW(c->stopping_jobs, c->nstopping, c->capstopping);
    c->stopping_jobs[c->nstopping++] = j->pk;
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
        if (rankstate_terminal(ranks[i].state) && ranks[i].finished_at > n.last_finished)
            n.last_finished = ranks[i].finished_at;
    }
    ranks_free(ranks, n.total);
    return n;
}

#define BACKOFF_LIMIT_NS (366 * 86400 * NS_PER_SEC)

int64_t controller_restart_at(const struct controller *c, const struct spec_view *v, int restart,
                              int64_t ended_at)
{
    int64_t base =
        v->backoff_seconds >= 0 ? v->backoff_seconds * NS_PER_SEC : c->opts.restart_backoff_ns;
    int64_t cap = v->max_backoff_seconds >= 0 ? v->max_backoff_seconds * NS_PER_SEC
                                              : c->opts.restart_backoff_max_ns;
    if (cap < base) /* a spec's first delay above the daemon's longest: the spec asked for it */
        cap = base;
    if (cap > BACKOFF_LIMIT_NS) /* a daemon's flag, however large: no overflow below */
        cap = BACKOFF_LIMIT_NS;
    int64_t wait = base < cap ? base : cap;
    for (int i = 1; i < restart && wait > 0 && wait < cap; i++)
        wait = wait < cap / 2 ? wait * 2 : cap;
    return ended_at + wait;
}

void controller_wake_at(struct controller *c, int64_t mono)
{
    if (!c->wake_at || mono < c->wake_at)
        c->wake_at = mono;
}

bool controller_wake_due(struct controller *c)
{
    if (!c->wake_at || clock_mono_ns() < c->wake_at)
        return false;
    c->wake_at = 0;
    return true;
}

struct ending_job *controller_ending_get(struct controller *c, int64_t pk)
{
    for (size_t i = 0; i < c->nending; i++)
        if (c->ending[i].pk == pk)
            return &c->ending[i];
    return NULL;
}

struct ending_job *controller_ending_add(struct controller *c, int64_t pk, bool stop)
{
    struct ending_job *e = controller_ending_get(c, pk);
    if (!e) {
        XGROW(c->ending, c->nending, c->capending);
        e = &c->ending[c->nending++];
        *e = (struct ending_job){ .pk = pk, .since = clock_mono_ns() };
    }
    e->stop = e->stop || stop;
    return e;
}

void controller_ending_remove(struct controller *c, int64_t pk)
{
    struct ending_job *e = controller_ending_get(c, pk);
    if (e)
        *e = c->ending[--c->nending];
}

/* Issues the attempt's worker token and has ex start every rank; fills err when either fails. */
static int launch(struct controller *c, struct executor *ex, const struct job *j,
                  const struct spec_view *v, int attempt, struct err *err)
{
    char secret[TOKEN_SECRET_MAX], id[32];
    store_tokens_revoke_job(c->st, j->pk, clock_now_ns(), NULL); /* the last attempt's */
    if (auth_token_create(c->st, "worker", SCOPE_WORKER, j->pk, 0, "controller", secret, id, err) <
        0)
        return -1;
    return ex->start(ex, j, v, attempt, secret, err);
}

static void start(struct controller *c, struct executor *ex, const struct job *j,
                  const struct spec_view *v, int attempt, const char *desired)
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
                            .desired = desired,
                            .ranks = &reset,
                            .nranks = 1 };
    if (controller_commit(c, &u) < 0)
        return;
    controller_stop_forget(c, j->pk);
    controller_ending_remove(c, j->pk);
    if (c->opts.health)
        health_attempt(c->opts.health, j, attempt, v->nranks, false);
    struct err err;
    err_init(&err);
    if (launch(c, ex, j, v, attempt, &err) == 0) {
        c->starts++;
        goto out;
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
out:
    err_release(&err);
}

void controller_start_attempt(struct controller *c, struct executor *ex, const struct job *j,
                              const struct spec_view *v, int attempt)
{
    start(c, ex, j, v, attempt, NULL);
}

void controller_start_backfill(struct controller *c, struct executor *ex, const struct job *j,
                               const struct spec_view *v)
{
    start(c, ex, j, v, j->attempt, "backfill");
}

void controller_running(struct controller *c, const struct job *j, enum job_state from)
{
    struct job_update u = { .pk = j->pk,
                            .set_state = true,
                            .state = JOB_RUNNING,
                            .only_if_state = true,
                            .if_state = from,
                            .reason = "Running",
                            .message = "every rank is running" };
    controller_commit(c, &u);
}

/* "10s", "90s", "5m", "2m30s", "0.5s": a backoff in the job's message. */
static void format_wait(int64_t ns, char *out, size_t size)
{
    long long sec = (long long)(ns / NS_PER_SEC);
    if (ns % NS_PER_SEC)
        snprintf(out, size, "%.1fs", (double)ns / NS_PER_SEC);
    else if (sec < 120)
        snprintf(out, size, "%llds", sec);
    else if (sec % 60 == 0)
        snprintf(out, size, "%lldm", sec / 60);
    else
        snprintf(out, size, "%lldm%llds", sec / 60, sec % 60);
}

void controller_restart(struct controller *c, struct executor *ex, const struct job *j,
                        const struct spec_view *v, const char *reason, const char *message,
                        const char *first_failure, const struct job_event *events, size_t nevents)
{
    int64_t now = clock_now_ns();
    struct rank_counts n = controller_count_ranks(c, j->pk);
    int64_t ended = n.last_finished ? n.last_finished : now;
    int64_t at = controller_restart_at(c, v, j->attempt + 1, ended);
    char text[768], ts[CLOCK_RFC3339_MAX], wait[32];
    if (at > now) {
        format_wait(at - ended, wait, sizeof(wait));
        snprintf(text, sizeof(text), "%s; restart %d at %s (backoff %s)", message, j->attempt + 1,
                 clock_format(at, ts), wait);
        message = text;
    }
    struct job_update u = { .pk = j->pk,
                            .set_state = true,
                            .state = JOB_RESTARTING,
                            .reason = reason,
                            .message = message,
                            .first_failure = first_failure,
                            .events = events,
                            .nevents = nevents };
    if (controller_commit(c, &u) < 0)
        return;
    c->restarts++;
    controller_ending_remove(c, j->pk);
    if (at <= now)
        controller_start_attempt(c, ex, j, v, j->attempt + 1);
    else
        controller_wake_at(c, clock_mono_ns() + (at - now));
}

/* A job that ended keeps neither a worker token nor a diagnosis in memory. */
static void ended(struct controller *c, int64_t pk)
{
    store_tokens_revoke_job(c->st, pk, clock_now_ns(), NULL);
    if (c->opts.health)
        health_forget(c->opts.health, pk);
}

void controller_finish(struct controller *c, const struct job *j, enum job_state state,
                       const char *reason, const char *message, const char *first_failure,
                       const struct job_event *events, size_t nevents)
{
    struct job_update u = { .pk = j->pk,
                            .set_state = true,
                            .state = state,
                            .reason = reason,
                            .message = message,
                            .first_failure = first_failure,
                            .events = events,
                            .nevents = nevents };
    if (controller_commit(c, &u) < 0)
        return;
    c->failures += state == JOB_FAILED;
    c->preemptions += state == JOB_PREEMPTED;
    controller_ending_remove(c, j->pk);
    ended(c, j->pk);
}

void controller_suspend(struct controller *c, struct executor *ex, const struct job *j,
                        const char *desired, const char *reason, const char *message)
{
    struct job_update u = { .pk = j->pk,
                            .set_state = true,
                            .state = JOB_RESTARTING,
                            .only_if_state = true,
                            .if_state = j->state,
                            .reason = reason,
                            .message = message,
                            .desired = desired };
    if (controller_commit(c, &u) < 0)
        return;
    controller_ending_remove(c, j->pk);
    controller_stop_job(c, ex, j);
}

static bool suspending(const struct job *j)
{
    return j->state == JOB_RESTARTING && j->desired &&
           (strcmp(j->desired, "hold") == 0 || strcmp(j->desired, "requeue") == 0);
}

bool controller_suspend_done(struct controller *c, const struct job *j)
{
    if (!suspending(j))
        return false;
    struct rank_counts n = controller_count_ranks(c, j->pk);
    if (n.terminal < n.total)
        return true;
    bool hold = strcmp(j->desired, "hold") == 0;
    char msg[160];
    snprintf(msg, sizeof(msg), "%s; the next attempt (%d) resumes from the checkpoint",
             hold ? "suspended: POST /resume starts it again" : "its resources went to a job ahead",
             j->attempt + 1);
    /* store_job_suspensions counts these state events: the attempt spends no restart */
    struct job_update u = { .pk = j->pk,
                            .set_state = true,
                            .state = JOB_QUEUED,
                            .reason = hold ? "Suspended" : "Requeued",
                            .message = msg,
                            .desired = hold ? "hold" : "run",
                            .set_attempt = true,
                            .attempt = j->attempt + 1 };
    if (controller_commit(c, &u) == 0) {
        controller_stop_forget(c, j->pk);
        ended(c, j->pk); /* no worker token or diagnosis while it waits */
    }
    return true;
}

bool controller_cancel_done(struct controller *c, const struct job *j)
{
    struct rank_counts n = controller_count_ranks(c, j->pk);
    if (j->state != JOB_CANCELLING || n.terminal < n.total)
        return false;
    controller_finish(c, j, JOB_CANCELLED, "Cancelled", j->message, NULL, NULL, 0);
    controller_stop_forget(c, j->pk);
    return true;
}

void controller_reported(struct controller *c, const struct job *j, const struct job_report *r)
{
    struct job_update u = { .pk = j->pk,
                            .set_state = r->set_state,
                            .state = r->state,
                            .reason = r->reason,
                            .message = r->message,
                            .events = r->events,
                            .nevents = r->nevents };
    if (r->set_state && r->state == JOB_RESTARTING) { /* the operator restarts the pods */
        u.set_attempt = true;
        u.attempt = j->attempt + 1;
    }
    if (controller_commit(c, &u) < 0)
        return;
    if (u.set_attempt && c->opts.health)
        health_attempt(c->opts.health, j, u.attempt, j->nranks, false);
    if (r->set_state && jobstate_terminal(r->state))
        ended(c, j->pk);
}
