/*
 * controller_admit: admission, once per reconcile pass. For each executor it hands the scheduler
 * (scheduler.h) the in-flight jobs' resources and the waiting jobs (store_jobs_waiting: a light
 * read, the spec's GPUs and deadline taken where the canonical text holds them), then carries out
 * what it decides: starts (backfills marked desired "backfill" when the scheduler may take them
 * back), suspensions of backfilled jobs for a job ahead, and the reason each waiting job is given,
 * kept for the API (controller_queue_status) instead of written to every queued job's row on
 * every pass. The executor's own fits() has the last word on a start: the scheduler plans with
 * what the store says runs, the executor knows what its processes or the cluster hold.
 */
#include "server/control/controller_admit.h"

#include <stdlib.h>

#include "core/clock.h"
#include "core/jsonx.h"
#include "core/log.h"
#include "core/xalloc.h"
#include "store/queues.h"

/* At most this many starts per pass: a pass stays short; the next one goes on. */
#define ADMIT_MAX_STARTS 256

static int64_t gpus_per_rank(const json_t *resources)
{
    return jsonx_int(resources, "gpus", 0);
}

void controller_admit_running(struct admit_running *r, struct executor *ex, const struct job *j,
                              const struct spec_view *v)
{
    if (r->n == r->cap) {
        r->cap = r->cap ? r->cap * 2 : 64;
        r->jobs = xrealloc(r->jobs, r->cap * sizeof(*r->jobs));
        r->exec = xrealloc(r->exec, r->cap * sizeof(*r->exec));
        r->queue = xrealloc(r->queue, r->cap * sizeof(*r->queue));
    }
    size_t i = r->n++;
    snprintf(r->queue[i], sizeof(r->queue[i]), "%s", j->queue ? j->queue : "");
    bool stopping = j->state == JOB_CANCELLING ||
                    (j->state == JOB_RESTARTING && j->desired && strcmp(j->desired, "run") != 0 &&
                     strcmp(j->desired, "backfill") != 0);
    r->jobs[i] = (struct sched_job){
        .pk = j->pk,
        .priority = j->priority,
        .created = j->created_at,
        .need = { v->nranks, v->nranks * gpus_per_rank(v->resources) },
        .runtime_ns = v->deadline_seconds * NS_PER_SEC,
        .started = j->started_at ? j->started_at : j->updated_at,
        .preemptible = j->desired && strcmp(j->desired, "backfill") == 0,
        .stopping = stopping,
    };
    r->exec[i] = ex;
}

void controller_admit_release(struct admit_running *r)
{
    free(r->jobs);
    free(r->exec);
    free(r->queue);
    *r = (struct admit_running){ 0 };
}

/* One executor's pass: its inputs, the decisions, and where they go. */
struct exec_pass {
    struct controller *c;
    struct executor *ex;
    struct sched_input in;
    struct sched_job *running, *waiting;
    const struct waiting_job **src; /* waiting[i] came from src[i] */
    struct sched_decision *out;
    int64_t *preempt;
    int starts;
    bool full; /* the executor said no room (fits 0): no more starts on it this pass */
};

/* Starts job pk as the scheduler decided, if the executor agrees. */
static void start_job(struct exec_pass *p, int64_t pk, const struct sched_decision *d)
{
    struct job *j = store_job_get_pk(p->c->st, pk, NULL);
    if (!j || j->state != JOB_QUEUED) { /* cancelled or started meanwhile */
        job_free(j);
        return;
    }
    json_t *spec = json_loads(j->spec, 0, NULL);
    struct spec_view v;
    spec_view(spec, &v);
    int fits = p->ex->fits(p->ex, j, &v);
    if (fits > 0 && d->preemptible) {
        controller_start_backfill(p->c, p->ex, j, &v);
        p->c->backfills++;
    } else if (fits > 0) {
        controller_start_attempt(p->c, p->ex, j, &v, j->attempt);
        p->c->backfills += d->backfill;
    } else if (fits == 0) {
        p->full = true;
    }
    p->starts += fits > 0;
    json_decref(spec);
    job_free(j);
}

/* Suspends the backfilled job pk to make room for the head (the waiting job at `head`). */
static void take_back(struct exec_pass *p, int64_t pk, const struct waiting_job *head)
{
    struct job *j = store_job_get_pk(p->c->st, pk, NULL);
    if (j && (j->state == JOB_STARTING || j->state == JOB_RUNNING)) {
        char msg[200];
        snprintf(msg, sizeof(msg), "suspended to make room for job %s, ahead of it in queue %s",
                 head->id, head->queue[0] ? head->queue : "default");
        controller_suspend(p->c, p->ex, j, "requeue", "Preempted", msg);
        p->c->requeues++;
    }
    job_free(j);
}

static void decide(struct exec_pass *p, size_t nwaiting)
{
    size_t n = sched_decide(&p->in, p->out, p->preempt);
    const struct waiting_job *head = NULL;
    for (size_t i = 0; i < nwaiting; i++)
        if (p->out[i].head)
            head = p->src[i];
    for (size_t k = 0; k < n && head; k++)
        take_back(p, p->preempt[k], head);
    for (size_t i = 0; i < nwaiting; i++) {
        if (p->out[i].why != SCHED_START)
            continue;
        if (p->full || p->starts >= ADMIT_MAX_STARTS) {
            p->out[i].why = SCHED_RESOURCES; /* the executor had no room after all */
            continue;
        }
        start_job(p, p->waiting[i].pk, &p->out[i]);
    }
}

/* The waiting jobs that run on ex, as the scheduler reads them. */
static size_t gather(struct exec_pass *p, const struct waiting_job *w, size_t nw)
{
    size_t n = 0;
    for (size_t i = 0; i < nw; i++) {
        if (strcmp(w[i].executor, p->ex->name) != 0)
            continue;
        p->src[n] = &w[i];
        p->waiting[n++] = (struct sched_job){
            .pk = w[i].pk,
            .queue = w[i].queue,
            .priority = w[i].priority,
            .created = w[i].created_at,
            .need = { w[i].nranks, (int64_t)w[i].nranks * w[i].gpus_per_rank },
            .runtime_ns = w[i].deadline_seconds * NS_PER_SEC,
        };
    }
    return n;
}

static size_t gather_running(struct exec_pass *p, const struct admit_running *r)
{
    size_t n = 0;
    for (size_t i = 0; i < r->n; i++) {
        if (r->exec[i] != p->ex)
            continue;
        p->running[n] = r->jobs[i];
        p->running[n++].queue = r->queue[i];
    }
    return n;
}

/* Keeps the decisions for the jobs left waiting (appended to *waits). */
static void keep(struct exec_pass *p, size_t nwaiting, struct job_wait **waits, size_t *nwaits,
                 size_t *cap)
{
    for (size_t i = 0; i < nwaiting; i++) {
        if (p->out[i].why == SCHED_START)
            continue;
        XGROW(*waits, *nwaits, *cap);
        struct job_wait *w = &(*waits)[(*nwaits)++];
        w->pk = p->waiting[i].pk;
        w->d = p->out[i];
        snprintf(w->queue, sizeof(w->queue), "%s", p->src[i]->queue);
    }
}

static int by_pk(const void *a, const void *b)
{
    int64_t x = ((const struct job_wait *)a)->pk, y = ((const struct job_wait *)b)->pk;
    return x < y ? -1 : x > y;
}

static void publish(struct controller *c, struct job_wait *waits, size_t n)
{
    if (n)
        qsort(waits, n, sizeof(*waits), by_pk);
    pthread_mutex_lock(&c->wait_lock);
    struct job_wait *old = c->waits;
    c->waits = waits;
    c->nwaits = n;
    pthread_mutex_unlock(&c->wait_lock);
    free(old);
}

/* The configured queues, as the scheduler reads them (names borrowed from defs). */
static struct sched_queue *queues_in(const struct queue_def *defs, size_t n)
{
    struct sched_queue *q = xcalloc(n + 1, sizeof(*q));
    for (size_t i = 0; i < n; i++)
        q[i] = (struct sched_queue){ defs[i].name, defs[i].priority, defs[i].gpu_quota };
    return q;
}

void controller_admit(struct controller *c, const struct admit_running *r)
{
    struct waiting_job *w = NULL;
    struct queue_def *defs = NULL;
    size_t nw = 0, nq = 0, nwaits = 0, cap = 0;
    struct err err;
    err_init(&err);
    if (store_jobs_waiting(c->st, &w, &nw, &err) < 0 ||
        store_queues_list(c->st, &defs, &nq, &err) < 0) {
        log_error("controller: listing waiting jobs: %s", err.msg);
        goto out;
    }
    struct sched_queue *queues = queues_in(defs, nq);
    struct job_wait *waits = NULL;
    for (size_t e = 0; e < c->nexec; e++) {
        struct exec_pass p = { .c = c, .ex = c->executors[e] };
        p.running = xcalloc(r->n + 1, sizeof(*p.running));
        p.waiting = xcalloc(nw + 1, sizeof(*p.waiting));
        p.src = xcalloc(nw + 1, sizeof(*p.src));
        p.out = xcalloc(nw + 1, sizeof(*p.out));
        p.preempt = xcalloc(r->n + 1, sizeof(*p.preempt));
        int64_t slots = -1, gpus = -1;
        if (p.ex->capacity)
            p.ex->capacity(p.ex, &slots, &gpus);
        size_t nr = gather_running(&p, r), n = gather(&p, w, nw);
        p.in = (struct sched_input){ .capacity = { slots, gpus },
                                     .queues = queues,
                                     .nqueues = nq,
                                     .running = p.running,
                                     .nrunning = nr,
                                     .waiting = p.waiting,
                                     .nwaiting = n,
                                     .now = clock_now_ns() };
        decide(&p, n);
        keep(&p, n, &waits, &nwaits, &cap);
        free(p.running);
        free(p.waiting);
        free(p.src);
        free(p.out);
        free(p.preempt);
    }
    publish(c, waits, nwaits);
    free(queues);
out:
    free(w);
    queues_free(defs, nq);
    err_release(&err);
}

bool controller_queue_status(struct controller *c, int64_t pk, char *reason, size_t rlen,
                             char *message, size_t mlen, int *position)
{
    struct job_wait key = { .pk = pk };
    pthread_mutex_lock(&c->wait_lock);
    const struct job_wait *w =
        c->nwaits ? bsearch(&key, c->waits, c->nwaits, sizeof(key), by_pk) : NULL;
    if (w) {
        snprintf(reason, rlen, "%s", sched_reason(&w->d));
        sched_message(&w->d, w->queue, message, mlen);
        *position = w->d.position;
    }
    pthread_mutex_unlock(&c->wait_lock);
    return w != NULL;
}
