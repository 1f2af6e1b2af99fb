/*
 * controller: the reconcile loop; see controller.h. Reports from executors are copied into a
 * queue under `lock` and handled on the controller thread, so all job decisions are serial.
 */
#include "server/controller.h"

#include <pthread.h>
#include <stdatomic.h>

#include "api/auth.h"
#include "server/core/clock.h"
#include "server/core/jsonx.h"
#include "server/core/log.h"
#include "server/core/xalloc.h"
#include "store/tokens.h"

struct queued_report {
    bool is_job;
    struct rank_report rank;
    struct job_report job;
    char *strings[5]; /* owned copies of the report's strings */
    struct queued_report *next;
};

struct controller {
    struct store *st;
    struct executor **executors;
    size_t nexec;
    struct controller_options opts;
    struct controller_hooks hooks;
    pthread_t thread;
    bool running;
    pthread_mutex_t lock;
    pthread_cond_t cond;
    bool stopping;
    bool dirty;
    struct queued_report *head, *tail;
    int64_t last_reconcile;
    /* jobs whose stop was already requested, so it is sent once: pk list */
    int64_t *stopping_jobs;
    size_t nstopping, capstopping;
    atomic_ullong starts, restarts, failures; /* read by /metrics on HTTP threads */
};

static char *dup_or_null(const char *s)
{
    return s ? xstrdup(s) : NULL;
}

static void enqueue(struct controller *c, struct queued_report *q)
{
    pthread_mutex_lock(&c->lock);
    if (c->tail)
        c->tail->next = q;
    else
        c->head = q;
    c->tail = q;
    pthread_cond_signal(&c->cond);
    pthread_mutex_unlock(&c->lock);
}

static void on_rank(void *ctx, const struct rank_report *r)
{
    struct queued_report *q = XNEW(struct queued_report);
    q->rank = *r;
    q->rank.node = q->strings[0] = dup_or_null(r->node);
    q->rank.pod = q->strings[1] = dup_or_null(r->pod);
    q->rank.reason = q->strings[2] = dup_or_null(r->reason);
    q->rank.message = q->strings[3] = dup_or_null(r->message);
    if (!q->rank.time)
        q->rank.time = clock_now_ns();
    enqueue(ctx, q);
}

static void on_job(void *ctx, const struct job_report *r)
{
    struct queued_report *q = XNEW(struct queued_report);
    q->is_job = true;
    q->job = *r;
    q->job.reason = q->strings[0] = dup_or_null(r->reason);
    q->job.message = q->strings[1] = dup_or_null(r->message);
    struct job_event *ev = r->nevents ? xcalloc(r->nevents, sizeof(*ev)) : NULL;
    for (size_t i = 0; i < r->nevents; i++) {
        ev[i] = r->events[i];
        ev[i].type = dup_or_null(r->events[i].type);
        ev[i].reason = dup_or_null(r->events[i].reason);
        ev[i].message = dup_or_null(r->events[i].message);
        ev[i].source = dup_or_null(r->events[i].source);
        ev[i].ext_id = dup_or_null(r->events[i].ext_id);
    }
    q->job.events = ev;
    enqueue(ctx, q);
}

static void report_free(struct queued_report *q)
{
    for (int i = 0; i < 5; i++)
        free(q->strings[i]);
    for (size_t i = 0; q->is_job && i < q->job.nevents; i++) {
        free((char *)q->job.events[i].type);
        free((char *)q->job.events[i].reason);
        free((char *)q->job.events[i].message);
        free((char *)q->job.events[i].source);
        free((char *)q->job.events[i].ext_id);
    }
    if (q->is_job)
        free((void *)q->job.events);
    free(q);
}

void executor_report_rank(struct executor *ex, const struct rank_report *r)
{
    if (ex->events.rank)
        ex->events.rank(ex->events.ctx, r);
}

void executor_report_job(struct executor *ex, const struct job_report *r)
{
    if (ex->events.job)
        ex->events.job(ex->events.ctx, r);
}

struct controller *controller_new(struct store *st, struct executor **executors, size_t n,
                                  const struct controller_options *opts,
                                  const struct controller_hooks *hooks)
{
    struct controller *c = XNEW(struct controller);
    c->st = st;
    c->executors = executors;
    c->nexec = n;
    c->opts = *opts;
    if (c->opts.tick_ns <= 0)
        c->opts.tick_ns = 100 * NS_PER_MS;
    if (hooks)
        c->hooks = *hooks;
    pthread_mutex_init(&c->lock, NULL);
    pthread_cond_init(&c->cond, NULL);
    c->dirty = true;
    for (size_t i = 0; i < n; i++) {
        executors[i]->events.ctx = c;
        executors[i]->events.rank = on_rank;
        executors[i]->events.job = on_job;
    }
    return c;
}

static struct executor *executor_for(struct controller *c, const char *name)
{
    for (size_t i = 0; i < c->nexec; i++)
        if (strcmp(c->executors[i]->name, name) == 0)
            return c->executors[i];
    return NULL;
}

static bool stop_requested(struct controller *c, int64_t pk)
{
    for (size_t i = 0; i < c->nstopping; i++)
        if (c->stopping_jobs[i] == pk)
            return true;
    return false;
}

static void mark_stop(struct controller *c, int64_t pk, bool on)
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
static int commit(struct controller *c, struct job_update *u)
{
    struct err err;
    err_init(&err);
    int rc = store_job_update(c->st, u, &err);
    if (rc < 0 && err.code != ERR_CONFLICT)
        log_error("controller: job %lld: %s", (long long)u->pk, err.msg);
    err_release(&err);
    if (rc == 0 && u->set_state && c->hooks.job_state)
        c->hooks.job_state(c->hooks.ctx, u->pk, u->state);
    return rc;
}

static void stop_job(struct controller *c, struct executor *ex, const struct job *j)
{
    if (stop_requested(c, j->pk))
        return;
    mark_stop(c, j->pk, true);
    struct err err;
    err_init(&err);
    if (ex->stop(ex, j, c->opts.stop_grace_ns, &err) < 0)
        log_warn("controller: stopping job %s: %s", j->id, err.msg);
    err_release(&err);
}

static struct job *load(struct controller *c, int64_t pk)
{
    struct err err;
    err_init(&err);
    struct job *j = store_job_get_pk(c->st, pk, &err);
    if (!j && err.code != ERR_NOT_FOUND)
        log_error("controller: loading job %lld: %s", (long long)pk, err.msg);
    err_release(&err);
    return j;
}

struct rank_counts {
    size_t total, terminal, succeeded;
};

static struct rank_counts count_ranks(struct controller *c, int64_t pk)
{
    struct rank_counts n = { 0 };
    struct rank *ranks = NULL;
    if (store_ranks_get(c->st, pk, &ranks, &n.total, NULL) < 0)
        return n;
    for (size_t i = 0; i < n.total; i++) {
        n.terminal += rankstate_terminal(ranks[i].state);
        n.succeeded += ranks[i].state == RANK_SUCCEEDED;
    }
    ranks_free(ranks, n.total);
    return n;
}

/* Kubeflow's ExitCode policy: codes from signals an operator sends are worth retrying. */
static bool retryable_exit(const struct spec_view *v, int exit_code, int sig)
{
    if (v->restart_exit_codes) {
        size_t i;
        json_t *code;
        json_array_foreach(v->restart_exit_codes, i,
                           code) if (json_integer_value(code) == exit_code) return true;
        return false;
    }
    int code = sig ? 128 + sig : exit_code;
    return code == 130 || code == 137 || code == 143 || code == 138;
}

static bool restart_allowed(const struct spec_view *v, int attempt, const struct rank_report *r)
{
    if (attempt >= v->max_restarts)
        return false;
    if (strcmp(v->restart_policy, "on_failure") == 0)
        return true;
    if (strcmp(v->restart_policy, "exit_code") == 0)
        return retryable_exit(v, r->exit_code, r->signal);
    return false;
}

static void describe_end(const struct rank_report *r, char *out, size_t size)
{
    if (r->signal)
        snprintf(out, size, "rank %d was killed by signal %d (%s)%s%s", r->rank, r->signal,
                 strsignal(r->signal), r->message && r->message[0] ? ": " : "",
                 r->message ? r->message : "");
    else
        snprintf(out, size, "rank %d exited with code %d%s%s", r->rank, r->exit_code,
                 r->message && r->message[0] ? ": " : "", r->message ? r->message : "");
}

static char *first_failure(const struct rank_report *r)
{
    char ts[CLOCK_RFC3339_MAX];
    json_t *o = json_pack(
        "{s:i,s:s,s:o,s:o,s:s}", "rank", r->rank, "reason", r->reason ? r->reason : "Error",
        "exit_code", r->exit_code >= 0 ? json_integer(r->exit_code) : json_null(), "signal",
        r->signal ? json_integer(r->signal) : json_null(), "at", clock_format(r->time, ts));
    if (r->node)
        json_object_set_new(o, "node", json_string(r->node));
    if (r->pod)
        json_object_set_new(o, "pod", json_string(r->pod));
    char *text = jsonx_dumps(o);
    json_decref(o);
    return text;
}

static void start_attempt(struct controller *c, struct executor *ex, const struct job *j,
                          const struct spec_view *v, int attempt)
{
    char msg[96];
    if (attempt)
        snprintf(msg, sizeof(msg), "restart %d of %d", attempt, v->max_restarts);
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
    if (commit(c, &u) < 0)
        return;
    mark_stop(c, j->pk, false);
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
    commit(c, &fail);
    stop_job(c, ex, j);
    err_release(&err);
}

static void finish(struct controller *c, const struct job *j, enum job_state state,
                   const char *reason, const char *message, const char *ff)
{
    struct job_update u = { .pk = j->pk,
                            .set_state = true,
                            .state = state,
                            .reason = reason,
                            .message = message,
                            .first_failure = ff };
    if (commit(c, &u) == 0) {
        store_tokens_revoke_job(c->st, j->pk, clock_now_ns(), NULL);
        if (state == JOB_FAILED)
            c->failures++;
    }
}

/* A rank of a job that is starting or running failed. */
static void rank_failed(struct controller *c, struct executor *ex, const struct job *j,
                        const struct spec_view *v, const struct rank_report *r)
{
    char msg[512];
    describe_end(r, msg, sizeof(msg));
    char *ff = first_failure(r);
    const char *reason = r->reason && strcmp(r->reason, "Error") != 0 ? r->reason : "RankFailed";
    if (!ex->manages_restarts && restart_allowed(v, j->attempt, r)) {
        struct job_update u = { .pk = j->pk,
                                .set_state = true,
                                .state = JOB_RESTARTING,
                                .reason = reason,
                                .message = msg,
                                .first_failure = ff };
        if (commit(c, &u) == 0) {
            c->restarts++;
            stop_job(c, ex, j);
        }
    } else {
        finish(c, j, JOB_FAILED, reason, msg, ff);
        stop_job(c, ex, j);
    }
    free(ff);
}

/* An executor that restarts ranks itself (Kubernetes) decides the job's fate from its own
 * objects: a rank's end is recorded, and its failure noted as the first one; only a cancel
 * completes here, once every rank has ended. */
static void rank_ended_managed(struct controller *c, const struct job *j,
                               const struct rank_report *r)
{
    char msg[512];
    if (r->exit_code < 0 && !r->signal) /* lost or stopped: no exit status */
        snprintf(msg, sizeof(msg), "rank %d ended (%s)%s%s", r->rank,
                 r->reason ? r->reason : "unknown", r->message && r->message[0] ? ": " : "",
                 r->message ? r->message : "");
    else
        describe_end(r, msg, sizeof(msg));
    bool failed = r->state == RANK_FAILED || r->state == RANK_LOST;
    char *ff = failed && j->state != JOB_CANCELLING && j->state != JOB_CANCELLED &&
                       j->state != JOB_SUCCEEDED
                   ? first_failure(r)
                   : NULL;
    struct rank_change rc = { .rank = r->rank,
                              .fields = RC_STATE | RC_EXIT | RC_FINISHED | RC_REASON | RC_NODE |
                                        RC_POD | RC_RESTARTS,
                              .state = r->state,
                              .node = r->node,
                              .pod = r->pod,
                              .exit_code = r->exit_code,
                              .signal = r->signal,
                              .restarts = r->restarts,
                              .reason = r->reason,
                              .message = r->message,
                              .finished_at = r->time };
    struct job_event e = {
        .type = "rank_exited", .reason = r->reason, .message = msg, .rank = r->rank, .time = r->time
    };
    struct job_update u = {
        .pk = j->pk, .ranks = &rc, .nranks = 1, .events = &e, .nevents = 1, .first_failure = ff
    };
    int rc_commit = commit(c, &u);
    free(ff);
    if (rc_commit < 0 || j->state != JOB_CANCELLING)
        return;
    struct rank_counts n = count_ranks(c, j->pk);
    if (n.terminal == n.total) {
        finish(c, j, JOB_CANCELLED, "Cancelled", j->message, NULL);
        mark_stop(c, j->pk, false);
    }
}

static void rank_ended(struct controller *c, struct executor *ex, const struct job *j,
                       const struct spec_view *v, const struct rank_report *r)
{
    if (ex->manages_restarts) {
        rank_ended_managed(c, j, r);
        return;
    }
    bool stopping =
        j->state == JOB_CANCELLING || j->state == JOB_RESTARTING || jobstate_terminal(j->state);
    enum rank_state state = r->state;
    if (stopping && state == RANK_FAILED)
        state = RANK_STOPPED; /* it ended because trainyard stopped it */
    char msg[512];
    describe_end(r, msg, sizeof(msg));
    struct rank_change rc = { .rank = r->rank,
                              .fields = RC_STATE | RC_EXIT | RC_FINISHED | RC_REASON,
                              .state = state,
                              .exit_code = r->exit_code,
                              .signal = r->signal,
                              .reason = r->reason,
                              .message = r->message,
                              .finished_at = r->time };
    struct job_event e = {
        .type = "rank_exited", .reason = r->reason, .message = msg, .rank = r->rank, .time = r->time
    };
    struct job_update u = { .pk = j->pk, .ranks = &rc, .nranks = 1, .events = &e, .nevents = 1 };
    if (commit(c, &u) < 0 || jobstate_terminal(j->state))
        return;
    struct rank_counts n = count_ranks(c, j->pk);
    if (j->state == JOB_CANCELLING && n.terminal == n.total) {
        finish(c, j, JOB_CANCELLED, "Cancelled", j->message, NULL);
        mark_stop(c, j->pk, false);
    } else if (j->state == JOB_RESTARTING && n.terminal == n.total) {
        start_attempt(c, ex, j, v, j->attempt + 1);
    } else if (!stopping && state == RANK_SUCCEEDED && n.succeeded == n.total) {
        finish(c, j, JOB_SUCCEEDED, "Completed", "every rank exited with code 0", NULL);
    } else if (!stopping && state != RANK_SUCCEEDED) {
        rank_failed(c, ex, j, v, r);
    }
}

static void rank_running(struct controller *c, struct executor *ex, const struct job *j,
                         const struct rank_report *r)
{
    struct rank_change rc = { .rank = r->rank,
                              .fields = RC_STATE | RC_PID | RC_NODE | RC_POD | RC_STARTED |
                                        (ex->manages_restarts ? RC_RESTARTS : 0),
                              .restarts = r->restarts,
                              .state = RANK_RUNNING,
                              .pid = r->pid,
                              .node = r->node,
                              .pod = r->pod,
                              .started_at = r->time };
    struct job_event e = {
        .type = "rank_started", .reason = "Started", .rank = r->rank, .time = r->time
    };
    struct job_update u = { .pk = j->pk, .ranks = &rc, .nranks = 1, .events = &e, .nevents = 1 };
    /* After the operator restarted pods, the job runs again once they all do. */
    bool promotable =
        j->state == JOB_STARTING || (ex->manages_restarts && j->state == JOB_RESTARTING);
    if (commit(c, &u) < 0 || !promotable)
        return;
    struct rank *ranks = NULL;
    size_t n = 0;
    if (store_ranks_get(c->st, j->pk, &ranks, &n, NULL) < 0)
        return;
    size_t running = 0;
    for (size_t i = 0; i < n; i++)
        running += ranks[i].state == RANK_RUNNING || ranks[i].state == RANK_SUCCEEDED;
    ranks_free(ranks, n);
    if (running == n) {
        struct job_update run = { .pk = j->pk,
                                  .set_state = true,
                                  .state = JOB_RUNNING,
                                  .only_if_state = true,
                                  .if_state = j->state,
                                  .reason = "Running",
                                  .message = "every rank is running" };
        commit(c, &run);
    }
}

/* True when the stored rank already says what r says (an executor that reports its view again
 * after a restart of the daemon, or a watch event that changed nothing for the rank). */
static bool unchanged(struct controller *c, const struct rank_report *r)
{
    struct rank *ranks = NULL;
    size_t n = 0;
    bool same = false;
    if (store_ranks_get(c->st, r->job_pk, &ranks, &n, NULL) == 0 && r->rank >= 0 &&
        (size_t)r->rank < n) {
        const struct rank *s = &ranks[r->rank];
        same = s->state == r->state && s->restarts == r->restarts &&
               strcmp(s->pod ? s->pod : "", r->pod ? r->pod : "") == 0 &&
               (r->state == RANK_RUNNING || s->exit_code == r->exit_code);
    }
    ranks_free(ranks, n);
    return same;
}

static void handle_rank(struct controller *c, const struct rank_report *r)
{
    struct job *j = load(c, r->job_pk);
    if (!j)
        return;
    struct executor *ex = executor_for(c, j->executor);
    json_t *spec = json_loads(j->spec, 0, NULL);
    struct spec_view v;
    spec_view(spec, &v);
    if (ex && r->attempt == j->attempt && !(ex->manages_restarts && unchanged(c, r))) {
        if (r->state == RANK_RUNNING)
            rank_running(c, ex, j, r);
        else if (rankstate_terminal(r->state))
            rank_ended(c, ex, j, &v, r);
    }
    json_decref(spec);
    job_free(j);
}

static void handle_job(struct controller *c, const struct job_report *r)
{
    struct job *j = load(c, r->job_pk);
    if (!j)
        return;
    if (r->attempt == j->attempt) {
        struct job_update u = { .pk = j->pk,
                                .set_state = r->set_state,
                                .state = r->state,
                                .reason = r->reason,
                                .message = r->message,
                                .events = r->events,
                                .nevents = r->nevents };
        if (r->set_state && r->state == JOB_RESTARTING) {
            u.set_attempt = true;
            u.attempt = j->attempt + 1;
        }
        commit(c, &u);
        if (r->set_state && jobstate_terminal(r->state))
            store_tokens_revoke_job(c->st, j->pk, clock_now_ns(), NULL);
    }
    job_free(j);
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
                start_attempt(c, ex, j, &v, j->attempt);
            json_decref(spec);
            if (fits == 0)
                break;
        }
    }
}

static void check_job(struct controller *c, struct job *j, int64_t now)
{
    struct executor *ex = executor_for(c, j->executor);
    if (!ex)
        return;
    json_t *spec = json_loads(j->spec, 0, NULL);
    struct spec_view v;
    spec_view(spec, &v);
    struct rank_counts n;
    switch (j->state) {
    case JOB_CANCELLING:
        stop_job(c, ex, j);
        n = count_ranks(c, j->pk);
        if (n.terminal == n.total)
            finish(c, j, JOB_CANCELLED, "Cancelled", j->message, NULL);
        break;
    case JOB_RESTARTING:
        if (ex->manages_restarts)
            break; /* the operator restarts the pods; its executor reports when they run */
        stop_job(c, ex, j);
        n = count_ranks(c, j->pk);
        if (n.terminal == n.total)
            start_attempt(c, ex, j, &v, j->attempt + 1);
        break;
    case JOB_STARTING:
    case JOB_RUNNING:
        if (v.deadline_seconds && j->started_at &&
            now - j->started_at > v.deadline_seconds * NS_PER_SEC) {
            char msg[128];
            snprintf(msg, sizeof(msg), "ran longer than deadline_seconds (%lld s)",
                     (long long)v.deadline_seconds);
            finish(c, j, JOB_FAILED, "DeadlineExceeded", msg, NULL);
            stop_job(c, ex, j);
        }
        break;
    default:
        break;
    }
    json_decref(spec);
}

#define ADMIT_BATCH 256

static void reconcile(struct controller *c)
{
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
    c->last_reconcile = clock_mono_ns();
}

static void drain(struct controller *c)
{
    pthread_mutex_lock(&c->lock);
    struct queued_report *q = c->head;
    c->head = c->tail = NULL;
    pthread_mutex_unlock(&c->lock);
    while (q) {
        struct queued_report *next = q->next;
        if (q->is_job)
            handle_job(c, &q->job);
        else
            handle_rank(c, &q->rank);
        report_free(q);
        q = next;
    }
}

static void *loop(void *arg)
{
    struct controller *c = arg;
    for (;;) {
        pthread_mutex_lock(&c->lock);
        if (!c->stopping && !c->head && !c->dirty) {
            struct timespec until;
            clock_gettime(CLOCK_REALTIME, &until);
            int64_t ns = until.tv_nsec + c->opts.tick_ns;
            until.tv_sec += ns / NS_PER_SEC;
            until.tv_nsec = ns % NS_PER_SEC;
            pthread_cond_timedwait(&c->cond, &c->lock, &until);
        }
        bool stopping = c->stopping, dirty = c->dirty;
        c->dirty = false;
        pthread_mutex_unlock(&c->lock);
        if (stopping)
            break;
        for (size_t e = 0; e < c->nexec; e++)
            c->executors[e]->poll(c->executors[e]);
        drain(c);
        if (dirty || clock_mono_ns() - c->last_reconcile > NS_PER_SEC)
            reconcile(c);
        drain(c);
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
        struct executor *ex = executor_for(c, j->executor);
        if (!ex)
            continue;
        json_t *spec = json_loads(j->spec, 0, NULL);
        struct spec_view v;
        spec_view(spec, &v);
        struct err err;
        err_init(&err);
        int rc = ex->adopt(ex, j, &v, &err);
        if (rc < 0)
            log_warn("controller: adopting job %s: %s", j->id, err.msg);
        else if (rc == 1 && j->state == JOB_CANCELLING)
            finish(c, j, JOB_CANCELLED, "Cancelled", j->message, NULL);
        else if (rc == 1 && (j->state == JOB_STARTING || j->state == JOB_RUNNING))
            start_attempt(c, ex, j, &v, j->attempt);
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
    drain(c);
    if (pthread_create(&c->thread, NULL, loop, c) != 0)
        return err_set(err, ERR_INTERNAL, "cannot start the controller thread");
    c->running = true;
    return 0;
}

void controller_wake(struct controller *c, int64_t job_pk)
{
    (void)job_pk;
    pthread_mutex_lock(&c->lock);
    c->dirty = true;
    pthread_cond_signal(&c->cond);
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
    while (c->head) {
        struct queued_report *next = c->head->next;
        report_free(c->head);
        c->head = next;
    }
    free(c->stopping_jobs);
    pthread_cond_destroy(&c->cond);
    pthread_mutex_destroy(&c->lock);
    free(c);
}

void controller_metrics(struct controller *c, struct buf *out)
{
    buf_printf(out,
               "# HELP trainyard_job_starts_total Job attempts started.\n"
               "# TYPE trainyard_job_starts_total counter\ntrainyard_job_starts_total %llu\n"
               "# HELP trainyard_job_restarts_total Jobs restarted after a rank failed.\n"
               "# TYPE trainyard_job_restarts_total counter\ntrainyard_job_restarts_total %llu\n"
               "# HELP trainyard_job_failures_total Jobs that failed.\n"
               "# TYPE trainyard_job_failures_total counter\ntrainyard_job_failures_total %llu\n",
               (unsigned long long)atomic_load(&c->starts),
               (unsigned long long)atomic_load(&c->restarts),
               (unsigned long long)atomic_load(&c->failures));
}
