/*
 * scheduler: the decisions of one pass (see scheduler.h). O(n log n) in the waiting jobs (one
 * sort), plus one sort of the running ones for the head's shadow time. No allocation survives the
 * call; nothing here knows of the store or the executors.
 */
#include "server/control/scheduler.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/xalloc.h"

#define NEVER INT64_MAX
/* A preemptible backfill starts only when the head cannot start for at least this long: one it
 * would have to give back sooner is not worth starting (and stopping) at all. */
#define BACKFILL_MIN_NS (600 * 1000000000LL)

static bool fits(struct sched_res need, struct sched_res free)
{
    return (free.slots < 0 || need.slots <= free.slots) &&
           (free.gpus < 0 || need.gpus <= free.gpus);
}

static void take(struct sched_res *free, struct sched_res need)
{
    if (free->slots >= 0)
        free->slots -= need.slots;
    if (free->gpus >= 0)
        free->gpus -= need.gpus;
}

static void give(struct sched_res *free, struct sched_res r)
{
    if (free->slots >= 0)
        free->slots += r.slots;
    if (free->gpus >= 0)
        free->gpus += r.gpus;
}

static int queue_of(const struct sched_input *in, const char *name)
{
    for (size_t q = 0; name && *name && q < in->nqueues; q++)
        if (strcmp(in->queues[q].name, name) == 0)
            return (int)q;
    return -1;
}

/* The order key: queue priority, job priority (both higher first), then age, then pk. */
struct key {
    int qprio, prio;
    int64_t created, pk;
};

static struct key key_of(const struct sched_input *in, const struct sched_job *j)
{
    int q = queue_of(in, j->queue);
    return (struct key){ q >= 0 ? in->queues[q].priority : 0, j->priority, j->created, j->pk };
}

/* <0 when a goes before b. */
static int key_cmp(struct key a, struct key b)
{
    if (a.qprio != b.qprio)
        return a.qprio > b.qprio ? -1 : 1;
    if (a.prio != b.prio)
        return a.prio > b.prio ? -1 : 1;
    if (a.created != b.created)
        return a.created < b.created ? -1 : 1;
    return a.pk < b.pk ? -1 : a.pk > b.pk;
}

struct ordered {
    struct key key;
    size_t i;
};

static int ordered_cmp(const void *a, const void *b)
{
    return key_cmp(((const struct ordered *)a)->key, ((const struct ordered *)b)->key);
}

/* A resource holder for the shadow time: what it holds and when it lets go. */
struct release {
    int64_t end;
    struct sched_res need;
};

static int release_cmp(const void *a, const void *b)
{
    int64_t x = ((const struct release *)a)->end, y = ((const struct release *)b)->end;
    return x < y ? -1 : x > y;
}

/* The state of one pass. */
struct pass {
    const struct sched_input *in;
    struct sched_decision *out;
    struct sched_res free;
    int64_t *qused;      /* GPUs per queue */
    struct release *rel; /* running, and started this pass before the head */
    size_t nrel;
    bool have_head;
    struct key head_key;
    int64_t shadow; /* NEVER: unknown */
    struct sched_res extra;
};

static int64_t end_of(const struct sched_input *in, const struct sched_job *j, int64_t started)
{
    if (j->stopping || j->preemptible)
        return in->now; /* free now or on demand */
    return j->runtime_ns > 0 ? started + j->runtime_ns : NEVER;
}

/* The head's shadow time and what it leaves over then. */
static void shadow(struct pass *p, struct sched_res need)
{
    if (p->nrel)
        qsort(p->rel, p->nrel, sizeof(*p->rel), release_cmp);
    struct sched_res acc = p->free;
    p->shadow = NEVER;
    p->extra = (struct sched_res){ 0, 0 };
    for (size_t k = 0; k < p->nrel && p->rel[k].end != NEVER; k++) {
        give(&acc, p->rel[k].need);
        if (fits(need, acc)) {
            p->shadow = p->rel[k].end;
            p->extra = (struct sched_res){ acc.slots < 0 ? -1 : acc.slots - need.slots,
                                           acc.gpus < 0 ? -1 : acc.gpus - need.gpus };
            return;
        }
    }
}

/* Preemptible running jobs behind the head, last in order first, until it fits; 0 when even
 * all of them would not make room (then none is suspended). */
static size_t victims(struct pass *p, const struct sched_job *head, int64_t *preempt)
{
    const struct sched_input *in = p->in;
    struct sched_res avail = p->free;
    for (size_t r = 0; r < in->nrunning; r++)
        if (in->running[r].stopping)
            give(&avail, in->running[r].need);
    if (fits(head->need, avail))
        return 0; /* what is being stopped already makes room */
    struct ordered *cand = xcalloc(in->nrunning + 1, sizeof(*cand));
    size_t n = 0, taken = 0;
    for (size_t r = 0; r < in->nrunning; r++) {
        const struct sched_job *j = &in->running[r];
        struct key k = key_of(in, j);
        if (j->preemptible && !j->stopping && key_cmp(k, p->head_key) > 0)
            cand[n++] = (struct ordered){ k, r };
    }
    if (n)
        qsort(cand, n, sizeof(*cand), ordered_cmp);
    while (taken < n && !fits(head->need, avail)) {
        const struct sched_job *j = &in->running[cand[n - 1 - taken].i];
        give(&avail, j->need);
        preempt[taken++] = j->pk;
    }
    free(cand);
    return fits(head->need, avail) ? taken : 0;
}

static void start(struct pass *p, const struct sched_job *w, struct sched_decision *d, int q)
{
    d->why = SCHED_START;
    take(&p->free, w->need);
    if (q >= 0)
        p->qused[q] += w->need.gpus;
    if (!p->have_head) /* ahead of the head: it holds resources until its end */
        p->rel[p->nrel++] = (struct release){ end_of(p->in, w, p->in->now), w->need };
}

/* A job behind the head that fits now: how it may start without delaying the head. */
static void backfill(struct pass *p, const struct sched_job *w, struct sched_decision *d, int q)
{
    int64_t end = w->runtime_ns > 0 ? p->in->now + w->runtime_ns : NEVER;
    d->backfill = true;
    if (end != NEVER && end <= p->shadow) {
        /* done before the head could start */
    } else if (p->shadow != NEVER && fits(w->need, p->extra)) {
        take(&p->extra, w->need);
    } else if (p->shadow == NEVER || p->shadow - p->in->now >= BACKFILL_MIN_NS) {
        d->preemptible = true;
    } else {
        d->backfill = false;
        d->why = SCHED_RESOURCES; /* the head starts soon: it keeps what it needs */
        return;
    }
    start(p, w, d, q);
}

static size_t head(struct pass *p, const struct sched_job *w, struct sched_decision *d,
                   int64_t *preempt)
{
    p->have_head = true;
    p->head_key = key_of(p->in, w);
    d->head = d->reserved = true;
    d->why = SCHED_RESOURCES;
    shadow(p, w->need);
    size_t n = victims(p, w, preempt);
    d->preempting = (int)n;
    return n;
}

static size_t decide(struct pass *p, const struct ordered *order, int64_t *preempt)
{
    const struct sched_input *in = p->in;
    size_t npreempt = 0;
    for (size_t k = 0; k < in->nwaiting; k++) {
        const struct sched_job *w = &in->waiting[order[k].i];
        struct sched_decision *d = &p->out[order[k].i];
        int q = queue_of(in, w->queue);
        *d = (struct sched_decision){ .need = w->need, .free = p->free, .queue_quota = -1 };
        if (q >= 0 && in->queues[q].gpu_quota >= 0 &&
            p->qused[q] + w->need.gpus > in->queues[q].gpu_quota) {
            d->why = SCHED_QUOTA;
            d->queue_used = p->qused[q];
            d->queue_quota = in->queues[q].gpu_quota;
        } else if (fits(w->need, p->free)) {
            if (p->have_head)
                backfill(p, w, d, q);
            else
                start(p, w, d, q);
        } else if (!p->have_head) {
            npreempt = head(p, w, d, preempt);
        } else {
            d->why = SCHED_RESOURCES;
        }
    }
    return npreempt;
}

/* Positions in each queue, among the jobs that still wait. */
static void positions(struct pass *p, const struct ordered *order)
{
    const struct sched_input *in = p->in;
    int *count = xcalloc(in->nqueues + 1, sizeof(int));
    for (size_t k = 0; k < in->nwaiting; k++) {
        struct sched_decision *d = &p->out[order[k].i];
        int q = queue_of(in, in->waiting[order[k].i].queue);
        if (d->why != SCHED_START)
            d->position = ++count[q + 1];
    }
    free(count);
}

size_t sched_decide(const struct sched_input *in, struct sched_decision *out, int64_t *preempt)
{
    struct pass p = { .in = in, .out = out, .free = in->capacity };
    p.qused = xcalloc(in->nqueues + 1, sizeof(int64_t));
    p.rel = xcalloc(in->nrunning + in->nwaiting + 1, sizeof(*p.rel));
    for (size_t r = 0; r < in->nrunning; r++) {
        const struct sched_job *j = &in->running[r];
        take(&p.free, j->need);
        int q = queue_of(in, j->queue);
        if (q >= 0)
            p.qused[q] += j->need.gpus;
        p.rel[p.nrel++] = (struct release){ end_of(in, j, j->started), j->need };
    }
    struct ordered *order = xcalloc(in->nwaiting + 1, sizeof(*order));
    for (size_t i = 0; i < in->nwaiting; i++)
        order[i] = (struct ordered){ key_of(in, &in->waiting[i]), i };
    if (in->nwaiting)
        qsort(order, in->nwaiting, sizeof(*order), ordered_cmp);
    size_t n = decide(&p, order, preempt);
    positions(&p, order);
    free(order);
    free(p.rel);
    free(p.qused);
    return n;
}

const char *sched_reason(const struct sched_decision *d)
{
    return d->why == SCHED_QUOTA       ? "QueueQuota"
           : d->why == SCHED_RESOURCES ? "WaitingForResources"
                                       : "Starting";
}

static const char *ordinal_suffix(int n)
{
    if (n % 100 >= 11 && n % 100 <= 13)
        return "th";
    return n % 10 == 1 ? "st" : n % 10 == 2 ? "nd" : n % 10 == 3 ? "rd" : "th";
}

/* "8 GPUs, 2 free" / "4 rank slots, 1 free" / both, for what is short. */
static const char *plural(int64_t n)
{
    return n == 1 ? "" : "s";
}

static void shortage(const struct sched_decision *d, char *out, size_t len)
{
    bool gpus = d->free.gpus >= 0 && d->need.gpus > d->free.gpus;
    bool slots = d->free.slots >= 0 && d->need.slots > d->free.slots;
    if (gpus && slots)
        snprintf(out, len, "%lld GPU%s and %lld rank slot%s, %lld and %lld free",
                 (long long)d->need.gpus, plural(d->need.gpus), (long long)d->need.slots,
                 plural(d->need.slots), (long long)d->free.gpus, (long long)d->free.slots);
    else if (gpus)
        snprintf(out, len, "%lld GPU%s, %lld free", (long long)d->need.gpus, plural(d->need.gpus),
                 (long long)d->free.gpus);
    else if (slots)
        snprintf(out, len, "%lld rank slot%s, %lld free", (long long)d->need.slots,
                 plural(d->need.slots), (long long)d->free.slots);
    else
        snprintf(out, len, "its turn behind the jobs ahead");
}

void sched_message(const struct sched_decision *d, const char *queue, char *out, size_t len)
{
    const char *q = queue && *queue ? queue : "default";
    char what[160] = "";
    if (d->why == SCHED_QUOTA)
        snprintf(what, sizeof(what), "queue %s's GPU quota: %lld of %lld in use, it needs %lld", q,
                 (long long)d->queue_used, (long long)d->queue_quota, (long long)d->need.gpus);
    else
        shortage(d, what, sizeof(what));
    char extra[96] = "";
    if (d->head && d->preempting)
        snprintf(extra, sizeof(extra), "; next to start, suspending %d backfilled job%s for it",
                 d->preempting, d->preempting == 1 ? "" : "s");
    else if (d->head)
        snprintf(extra, sizeof(extra), "; next to start (jobs behind it cannot delay it)");
    snprintf(out, len, "waiting for %s%s; %d%s in queue %s", what, extra, d->position,
             ordinal_suffix(d->position), q);
}
