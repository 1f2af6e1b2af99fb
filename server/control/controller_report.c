/*
 * controller_report: what executors report, on its way to the job state machine. Reports are
 * copied into the controller's queue under its lock (from any executor thread) and handled in
 * order on the controller thread (controller_drain): a rank started or ended, a job's own
 * conditions (Kubernetes). Executors that restart ranks themselves (manages_restarts: the
 * Training Operator) decide a job's fate from their own objects, so a rank's end is only
 * recorded for them. The queue owns copies of every string of a report. A report changes the
 * job's state only through controller_state.c's transitions, or controller_end.c's settling.
 */
#include "server/control/controller_report.h"

#include "core/clock.h"
#include "core/jsonx.h"
#include "core/log.h"
#include "core/xalloc.h"
#include "server/control/controller_end.h"
#include "server/health/health.h"
#include "store/usage.h"

struct queued_report {
    bool is_job;
    struct rank_report rank;
    struct job_report job;
    char *strings[7]; /* owned copies of the report's strings */
    struct queued_report *next;
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
    q->rank.instance_type = q->strings[5] = dup_or_null(r->instance_type);
    q->rank.capacity_type = q->strings[6] = dup_or_null(r->capacity_type);
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
    for (int i = 0; i < 7; i++)
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

void controller_listen(struct controller *c, struct executor *ex)
{
    ex->events.ctx = c;
    ex->events.rank = on_rank;
    ex->events.job = on_job;
}

void controller_reports_free(struct controller *c)
{
    while (c->head) {
        struct queued_report *next = c->head->next;
        report_free(c->head);
        c->head = next;
    }
    while (c->pending) {
        struct queued_report *next = c->pending->next;
        report_free(c->pending);
        c->pending = next;
    }
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

static struct job *load(struct controller *c, int64_t pk)
{
    struct err err;
    err_init(&err);
    struct job *j = store_job_get_pk(c->st, pk, &err);
    if (!j && err.code == ERR_UNAVAILABLE)
        c->store_down = true;
    if (!j && err.code != ERR_NOT_FOUND)
        log_error("controller: loading job %lld: %s", (long long)pk, err.msg);
    err_release(&err);
    return j;
}

static bool rank_terminal(struct controller *c, int64_t pk, int rank)
{
    struct rank *ranks = NULL;
    size_t n = 0;
    bool done = false;
    if (store_ranks_get(c->st, pk, &ranks, &n, NULL) == 0)
        for (size_t i = 0; i < n; i++)
            done = done || (ranks[i].rank == rank && rankstate_terminal(ranks[i].state));
    ranks_free(ranks, n);
    return done;
}

static void describe_end(const struct rank_report *r, char *out, size_t size)
{
    if (r->signal)
        snprintf(out, size, "rank %d was killed by signal %d (%s)%s%s", r->rank, r->signal,
                 strsignal(r->signal), r->message && r->message[0] ? ": " : "",
                 r->message ? r->message : "");
    else if (r->exit_code >= 0)
        snprintf(out, size, "rank %d exited with code %d%s%s", r->rank, r->exit_code,
                 r->message && r->message[0] ? ": " : "", r->message ? r->message : "");
    else
        snprintf(out, size, "rank %d ended (%s)%s%s", r->rank, r->reason ? r->reason : "?",
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

static void feed_ending(struct controller *c, const struct rank_report *r, enum rank_state state)
{
    if (!c->opts.health || (r->reason && strcmp(r->reason, "PreflightFailed") == 0))
        return; /* a failed preflight is already an event of the diagnosis */
    struct ending e = { .rank = r->rank,
                        .node = r->node,
                        .pod = r->pod,
                        .time_ns = r->time,
                        .exited = r->exit_code >= 0,
                        .exit_code = r->exit_code,
                        .signal = r->signal,
                        .reason = r->reason,
                        .message = r->message,
                        .stopped = state == RANK_STOPPED,
                        .lost = r->state == RANK_LOST };
    health_rank_ended(c->opts.health, r->job_pk, r->attempt, &e);
}

/* usage: the run that ended, counted with the rank's end in its transaction (store/usage.h). */
static void usage_of(const struct spec_view *v, const struct rank_report *r, struct usage_run *run)
{
    usage_run_init(run, v, r->attempt, r->rank, r->started_at, r->time, r->node, r->instance_type,
                   r->capacity_type);
}

/* An executor that restarts ranks itself (Kubernetes) decides the job's fate from its own
 * objects: a rank's end is recorded, and its failure noted as the first one; only a cancel
 * completes here, once every rank has ended (and a stop trainyard decided: controller_settle). */
static void rank_ended_managed(struct controller *c, struct executor *ex, const struct job *j,
                               const struct spec_view *v, const struct rank_report *r)
{
    char msg[512];
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
    struct usage_run run;
    usage_of(v, r, &run);
    struct job_update u = { .pk = j->pk,
                            .ranks = &rc,
                            .nranks = 1,
                            .events = &e,
                            .nevents = 1,
                            .first_failure = ff,
                            .usage = &run };
    feed_ending(c, r, r->state);
    int rc_commit = controller_commit(c, &u);
    free(ff);
    if (rc_commit < 0)
        return;
    if (j->state == JOB_STARTING || j->state == JOB_RUNNING)
        controller_settle(c, ex, j, v);
    else
        controller_cancel_done(c, j);
}

static void rank_ended(struct controller *c, struct executor *ex, const struct job *j,
                       const struct spec_view *v, const struct rank_report *r)
{
    if (ex->manages_restarts) {
        rank_ended_managed(c, ex, j, v, r);
        return;
    }
    bool stopping = j->state == JOB_CANCELLING || j->state == JOB_RESTARTING ||
                    jobstate_terminal(j->state) || controller_stop_requested(c, j->pk);
    enum rank_state state = r->state;
    if (stopping && state == RANK_FAILED)
        state = RANK_STOPPED; /* it ended because trainyard stopped it */
    /* A rank failed by its preflight report keeps that state and reason. */
    bool known = rank_terminal(c, j->pk, r->rank);
    char msg[512];
    describe_end(r, msg, sizeof(msg));
    struct rank_change rc = { .rank = r->rank,
                              .fields = known ? RC_EXIT | RC_FINISHED
                                              : RC_STATE | RC_EXIT | RC_FINISHED | RC_REASON,
                              .state = state,
                              .exit_code = r->exit_code,
                              .signal = r->signal,
                              .reason = r->reason,
                              .message = r->message,
                              .finished_at = r->time };
    struct job_event e = {
        .type = "rank_exited", .reason = r->reason, .message = msg, .rank = r->rank, .time = r->time
    };
    struct usage_run run;
    usage_of(v, r, &run);
    struct job_update u = {
        .pk = j->pk, .ranks = &rc, .nranks = 1, .events = &e, .nevents = 1, .usage = &run
    };
    if (!known)
        feed_ending(c, r, state);
    if (controller_commit(c, &u) < 0 || jobstate_terminal(j->state))
        return;
    if (j->state == JOB_CANCELLING) {
        controller_cancel_done(c, j);
    } else if (controller_suspend_done(c, j)) {
        /* queued again once its last rank ended */
    } else if (j->state == JOB_RESTARTING) {
        controller_next_attempt(c, ex, j, v, clock_now_ns());
    } else if (j->state == JOB_STARTING || j->state == JOB_RUNNING) {
        controller_settle(c, ex, j, v);
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
    char msg[160];
    if (r->pod && r->pod[0])
        snprintf(msg, sizeof(msg), "rank %d started in pod %s%s%s", r->rank, r->pod,
                 r->node && r->node[0] ? " on " : "", r->node ? r->node : "");
    else
        snprintf(msg, sizeof(msg), "rank %d started (pid %d)%s%s", r->rank, (int)r->pid,
                 r->node && r->node[0] ? " on " : "", r->node ? r->node : "");
    struct job_event e = { .type = "rank_started",
                           .reason = "Started",
                           .message = msg,
                           .rank = r->rank,
                           .time = r->time };
    struct job_update u = { .pk = j->pk, .ranks = &rc, .nranks = 1, .events = &e, .nevents = 1 };
    /* After the operator restarted pods, the job runs again once they all do. */
    bool promotable =
        j->state == JOB_STARTING || (ex->manages_restarts && j->state == JOB_RESTARTING);
    if (controller_commit(c, &u) < 0 || !promotable)
        return;
    struct rank *ranks = NULL;
    size_t n = 0;
    if (store_ranks_get(c->st, j->pk, &ranks, &n, NULL) < 0)
        return;
    size_t running = 0;
    for (size_t i = 0; i < n; i++)
        running += ranks[i].state == RANK_RUNNING || ranks[i].state == RANK_SUCCEEDED;
    ranks_free(ranks, n);
    if (running == n)
        controller_running(c, j, j->state);
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
    struct executor *ex = controller_executor(c, j->executor);
    json_t *spec = json_loads(j->spec, 0, NULL);
    struct spec_view v;
    spec_view(spec, &v);
    /* Where a running rank is goes to the health registry even when the store knows it: after
     * a restart the registry starts empty, and an adopted job's ranks report what the store
     * already says (its nodes' GPUs were never polled again). */
    if (ex && r->attempt == j->attempt && r->state == RANK_RUNNING && c->opts.health)
        health_rank_placed(c->opts.health, j->pk, r->attempt, r->rank, r->node, r->pod);
    /* A rank already running reported running again is the executor adopting it after a
     * daemon restart: nothing happened, so no second rank_started event. */
    bool same = (ex && ex->manages_restarts) || r->state == RANK_RUNNING ? unchanged(c, r) : false;
    if (ex && r->attempt == j->attempt && !same) {
        if (r->state == RANK_RUNNING)
            rank_running(c, ex, j, r);
        else if (rankstate_terminal(r->state))
            rank_ended(c, ex, j, &v, r);
    }
    json_decref(spec);
    job_free(j);
}

/* Kubernetes events and conditions reach the diagnosis as platform events. */
static void feed_events(struct controller *c, const struct job_report *r)
{
    for (size_t i = 0; c->opts.health && i < r->nevents; i++) {
        const struct job_event *e = &r->events[i];
        struct ending_event ev = { .rank = e->rank,
                                   .time_ns = e->time ? e->time : clock_now_ns(),
                                   .reason = e->reason,
                                   .message = e->message };
        health_event(c->opts.health, r->job_pk, r->attempt, &ev);
    }
}

static void handle_job(struct controller *c, const struct job_report *r)
{
    struct job *j = load(c, r->job_pk);
    if (!j)
        return;
    if (r->attempt == j->attempt) {
        feed_events(c, r);
        controller_reported(c, j, r);
    }
    job_free(j);
}

/* Handles reports in order. When the store refuses a write (disk full, database locked) the
 * report and every later one wait and are tried again a second later, so that a rank's end is
 * never dropped, nor applied before its start. (A report that had committed part of its work
 * before the failure may then repeat an event.) */
void controller_drain(struct controller *c)
{
    pthread_mutex_lock(&c->lock);
    struct queued_report *q = c->head, *last = c->tail;
    c->head = c->tail = NULL;
    pthread_mutex_unlock(&c->lock);
    if (q) {
        if (c->pending_tail)
            c->pending_tail->next = q;
        else
            c->pending = q;
        c->pending_tail = last;
    }
    if (c->pending && clock_mono_ns() < c->retry_at)
        return;
    while ((q = c->pending)) {
        c->store_down = false;
        if (q->is_job)
            handle_job(c, &q->job);
        else
            handle_rank(c, &q->rank);
        if (c->store_down) {
            c->retry_at = clock_mono_ns() + NS_PER_SEC;
            return;
        }
        c->pending = q->next;
        if (!c->pending)
            c->pending_tail = NULL;
        report_free(q);
    }
}

void controller_rank_failed(struct controller *c, int64_t job_pk, int attempt, int rank,
                            const char *reason, const char *message)
{
    struct rank_report r = { .job_pk = job_pk,
                             .attempt = attempt,
                             .rank = rank,
                             .state = RANK_FAILED,
                             .exit_code = -1,
                             .reason = reason,
                             .message = message };
    on_rank(c, &r);
}
