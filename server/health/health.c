/*
 * health: the registry of active jobs' diagnoses (see health.h): entries, the ingest hook,
 * attempts, rank placement and endings, summaries (with the replay of stored lines after a
 * daemon restart) and the end of an entry. Persistence is in healthsave.c; stalls, worker
 * reports, GPUs and Prometheus text in healthwatch.c.
 *
 * Threads and locks: see health_internal.h. Feeding holds one entry lock per batch of lines;
 * store writes of metric samples are queued (store_write_async) after it is released. The
 * collector's hook (health_lines, healthfeed.c) only queues batches for the feeder thread.
 */
#include "server/health/health_internal.h"

#include "core/clock.h"
#include "core/log.h"
#include "core/xalloc.h"
#include "store/logs.h"
#include "store/metrics.h"

#define SAMPLES_PER_LINE 16
#define SAMPLES_CHUNK    16384 /* samples stored per store call at most */

static size_t bucket_of(int64_t pk)
{
    return (size_t)((uint64_t)pk * 0x9E3779B97F4A7C15ull >> 56) % HEALTH_BUCKETS;
}

static struct entry *find(struct health *h, int64_t pk)
{
    for (struct entry *e = h->buckets[bucket_of(pk)]; e; e = e->next)
        if (e->pk == pk)
            return e;
    return NULL;
}

struct entry *entry_acquire(struct health *h, int64_t pk)
{
    pthread_mutex_lock(&h->lock);
    struct entry *e = find(h, pk);
    if (e)
        pthread_mutex_lock(&e->lock);
    pthread_mutex_unlock(&h->lock);
    return e;
}

void entry_unlock(struct entry *e)
{
    pthread_mutex_unlock(&e->lock);
}

struct hrank *entry_rank(struct entry *e, int rank)
{
    if (rank < 0 || rank >= PROGRESS_MAX_RANKS)
        return NULL;
    if ((size_t)rank >= e->nranks) {
        size_t n = (size_t)rank + 1 > (size_t)e->world ? (size_t)rank + 1 : (size_t)e->world;
        e->ranks = xrealloc(e->ranks, n * sizeof(*e->ranks));
        memset(e->ranks + e->nranks, 0, (n - e->nranks) * sizeof(*e->ranks));
        e->nranks = n;
    }
    return &e->ranks[rank];
}

struct health *health_new(struct store *st, const struct health_options *o)
{
    struct health *h = XNEW(struct health);
    h->st = st;
    if (o)
        h->o = *o;
    if (h->o.persist_ns <= 0)
        h->o.persist_ns = NS_PER_SEC;
    pthread_mutex_init(&h->lock, NULL);
    pthread_mutex_init(&h->nodes_lock, NULL);
    h->feeder = feeder_new(h);
    return h;
}

static void samples_release(struct samples *sm);

static void events_clear(struct entry *e)
{
    for (size_t i = 0; i < e->nevents; i++) {
        free(e->events[i].node);
        free(e->events[i].reason);
        free(e->events[i].message);
    }
    free(e->events);
    e->events = NULL;
    e->nevents = 0;
}

static void entry_free(struct entry *e)
{
    diag_free(e->d);
    json_decref(e->stall);
    free(e->ranks);
    events_clear(e);
    pthread_mutex_destroy(&e->lock);
    free(e);
}

void health_free(struct health *h)
{
    if (!h)
        return;
    feeder_free(h->feeder); /* first: it feeds entries until it stops */
    for (size_t b = 0; b < HEALTH_BUCKETS; b++) {
        while (h->buckets[b]) {
            struct entry *e = h->buckets[b];
            h->buckets[b] = e->next;
            entry_free(e);
        }
    }
    while (h->nodes) {
        struct nodegpu *n = h->nodes;
        h->nodes = n->next;
        free(n->name);
        json_decref(n->gpus);
        json_decref(n->conditions);
        free(n);
    }
    samples_release(&h->feed);
    pthread_mutex_destroy(&h->nodes_lock);
    pthread_mutex_destroy(&h->lock);
    free(h);
}

/* Samples found while feeding (struct samples, health_internal.h) are stored in chunks from a
 * fixed buffer, so that feeding a large batch never allocates (and faults in) megabytes. */

static void samples_init(struct samples *sm)
{
    sm->cap = SAMPLES_CHUNK;
    sm->n = 0;
    sm->s = xmalloc(sm->cap * sizeof(*sm->s));
    sm->p = xmalloc(sm->cap * sizeof(*sm->p));
}

static void samples_release(struct samples *sm)
{
    free(sm->s);
    free(sm->p);
}

static void samples_store(struct health *h, int64_t pk, struct samples *sm)
{
    if (sm->n == 0)
        return;
    for (size_t i = 0; i < sm->n; i++)
        sm->p[i] = (struct metric_point){ .name = sm->s[i].name,
                                          .rank = sm->s[i].rank,
                                          .step = sm->s[i].step,
                                          .value = sm->s[i].value,
                                          .time = sm->s[i].time_ns,
                                          .seq = sm->s[i].seq };
    store_metrics_append_async(h->st, pk, sm->p, sm->n);
    atomic_fetch_add(&h->samples_stored, sm->n);
    sm->n = 0;
}

static void feed_line(struct health *h, int64_t pk, struct diag *d, const struct log_line *l,
                      struct samples *sm)
{
    if (sm->cap - sm->n < SAMPLES_PER_LINE)
        samples_store(h, pk, sm);
    struct diag_line dl = {
        .rank = l->rank, .seq = l->seq, .time_ns = l->time, .text = l->text, .len = l->len
    };
    sm->n += diag_feed(d, &dl, sm->s + sm->n, SAMPLES_PER_LINE);
}

void health_feed(struct health *h, int64_t job_pk, const struct log_line *lines, size_t n)
{
    struct entry *e = entry_acquire(h, job_pk);
    if (!e)
        return;
    if (!h->feed.s)
        samples_init(&h->feed); /* one feeding thread at a time: the buffer is reused */
    size_t fed = 0;
    for (size_t i = 0; i < n; i++) {
        if (lines[i].attempt != e->attempt)
            continue; /* a late line of an earlier attempt */
        feed_line(h, job_pk, e->d, &lines[i], &h->feed);
        fed++;
    }
    if (fed)
        e->dirty = true;
    entry_unlock(e);
    atomic_fetch_add(&h->lines_fed, fed);
    samples_store(h, job_pk, &h->feed);
}

static struct diag *new_diag(int world)
{
    struct diag_options o;
    diag_options_default(&o);
    o.world_size = world;
    return diag_new(&o);
}

void health_attempt(struct health *h, const struct job *j, int attempt, int world_size,
                    bool adopted)
{
    pthread_mutex_lock(&h->lock);
    struct entry *e = find(h, j->pk);
    if (!e) {
        e = XNEW(struct entry);
        e->pk = j->pk;
        pthread_mutex_init(&e->lock, NULL);
        size_t b = bucket_of(j->pk);
        e->next = h->buckets[b];
        h->buckets[b] = e;
    }
    pthread_mutex_lock(&e->lock);
    pthread_mutex_unlock(&h->lock);
    snprintf(e->id, sizeof(e->id), "%s", j->id);
    snprintf(e->name, sizeof(e->name), "%s", j->name);
    diag_free(e->d);
    e->d = new_diag(world_size);
    e->attempt = attempt;
    e->world = world_size;
    e->partial = adopted;
    e->dirty = true;
    e->saved_ns = 0;
    memset(e->saved_hash, 0, sizeof(e->saved_hash));
    e->stalled = false;
    json_decref(e->stall);
    e->stall = NULL;
    free(e->ranks);
    e->ranks = NULL;
    e->nranks = 0;
    events_clear(e);
    entry_unlock(e);
}

void health_rank_placed(struct health *h, int64_t pk, int attempt, int rank, const char *node,
                        const char *pod)
{
    struct entry *e = entry_acquire(h, pk);
    if (!e)
        return;
    struct hrank *r = entry_rank(e, rank);
    if (e->attempt == attempt && r) {
        diag_rank_info(e->d, rank, pod, node);
        snprintf(r->node, sizeof(r->node), "%s", node ? node : "");
        snprintf(r->pod, sizeof(r->pod), "%s", pod ? pod : "");
        e->dirty = true;
    }
    entry_unlock(e);
}

void health_rank_ended(struct health *h, int64_t pk, int attempt, const struct ending *end)
{
    struct entry *e = entry_acquire(h, pk);
    if (!e)
        return;
    if (e->attempt == attempt) {
        diag_ending(e->d, end);
        e->dirty = true;
    }
    entry_unlock(e);
}

static void keep_event(struct entry *e, const struct ending_event *ev)
{
    e->events = xrealloc(e->events, (e->nevents + 1) * sizeof(*e->events));
    e->events[e->nevents++] =
        (struct hevent){ .rank = ev->rank,
                         .time_ns = ev->time_ns,
                         .node = ev->node ? xstrdup(ev->node) : NULL,
                         .reason = ev->reason ? xstrdup(ev->reason) : NULL,
                         .message = ev->message ? xstrdup(ev->message) : NULL };
}

/* Records a platform event (entry lock held). */
static void entry_event(struct entry *e, const struct ending_event *ev)
{
    diag_event(e->d, ev);
    keep_event(e, ev);
    e->dirty = true;
}

void health_event(struct health *h, int64_t pk, int attempt, const struct ending_event *ev)
{
    struct entry *e = entry_acquire(h, pk);
    if (!e)
        return;
    if (e->attempt == attempt)
        entry_event(e, ev);
    entry_unlock(e);
}

/* Replay of an attempt's stored lines into a fresh diagnosis. */
struct replay {
    struct health *h;
    struct diag *d;
    int attempt;
    struct samples sm;
    int64_t pk;
};

static int replay_line(void *ctx, const struct log_line *l)
{
    struct replay *r = ctx;
    if (l->attempt != r->attempt)
        return 0;
    /* Samples the killed daemon may not have stored are stored again: shown once. */
    feed_line(r->h, r->pk, r->d, l, &r->sm);
    return 0;
}

static void replay_endings(struct diag *d, const struct rank *ranks, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        const struct rank *k = &ranks[i];
        diag_rank_info(d, k->rank, k->pod[0] ? k->pod : NULL, k->node[0] ? k->node : NULL);
        if (!rankstate_terminal(k->state) || !k->finished_at)
            continue;
        struct ending end = { .rank = k->rank,
                              .node = k->node[0] ? k->node : NULL,
                              .pod = k->pod[0] ? k->pod : NULL,
                              .time_ns = k->finished_at,
                              .exited = k->exit_code >= 0,
                              .exit_code = k->exit_code,
                              .signal = k->signal,
                              .reason = k->reason,
                              .message = k->message,
                              .stopped = k->state == RANK_STOPPED,
                              .lost = k->state == RANK_LOST };
        diag_ending(d, &end);
    }
}

/* A complete diagnosis of the attempt from the store (lines, rank endings) and the events the
 * entry kept. Runs without the entry lock: the attempt's ranks have ended. */
static struct diag *rebuild(struct health *h, const struct job *j, int attempt, int world,
                            const struct hevent *ev, size_t nev)
{
    struct replay r = { .h = h, .d = new_diag(world), .attempt = attempt, .pk = j->pk };
    samples_init(&r.sm);
    struct rank *ranks = NULL;
    size_t n = 0;
    struct err err;
    err_init(&err);
    store_ranks_get(h->st, j->pk, &ranks, &n, NULL);
    for (size_t i = 0; i < n; i++) /* placement first: findings name their node */
        diag_rank_info(r.d, ranks[i].rank, ranks[i].pod[0] ? ranks[i].pod : NULL,
                       ranks[i].node[0] ? ranks[i].node : NULL);
    struct log_query q = { .stream = -1 };
    if (!h->o.skip_logs && store_logs_read(h->st, j->pk, &q, replay_line, &r, NULL, &err) < 0)
        log_warn("health: replaying the log of job %s: %s", j->id, err.msg);
    err_release(&err);
    samples_store(h, j->pk, &r.sm);
    samples_release(&r.sm);
    replay_endings(r.d, ranks, n);
    ranks_free(ranks, n);
    for (size_t i = 0; i < nev; i++) {
        struct ending_event e = { .rank = ev[i].rank,
                                  .time_ns = ev[i].time_ns,
                                  .node = ev[i].node,
                                  .reason = ev[i].reason,
                                  .message = ev[i].message };
        diag_event(r.d, &e);
    }
    atomic_fetch_add(&h->replays, 1);
    return r.d;
}

/* Swaps in a rebuilt diagnosis when the entry missed lines (controller thread). */
static void complete(struct health *h, const struct job *j, struct entry *e)
{
    int attempt = e->attempt, world = e->world;
    size_t nev = e->nevents;
    struct hevent *ev = xcalloc(nev ? nev : 1, sizeof(*ev));
    for (size_t i = 0; i < nev; i++) /* copies: the entry may change meanwhile */
        ev[i] =
            (struct hevent){ .rank = e->events[i].rank,
                             .time_ns = e->events[i].time_ns,
                             .node = e->events[i].node ? xstrdup(e->events[i].node) : NULL,
                             .reason = e->events[i].reason ? xstrdup(e->events[i].reason) : NULL,
                             .message =
                                 e->events[i].message ? xstrdup(e->events[i].message) : NULL };
    entry_unlock(e);
    struct diag *d = rebuild(h, j, attempt, world, ev, nev);
    for (size_t i = 0; i < nev; i++) {
        free(ev[i].node);
        free(ev[i].reason);
        free(ev[i].message);
    }
    free(ev);
    pthread_mutex_lock(&e->lock);
    if (e->attempt == attempt) {
        diag_free(e->d);
        e->d = d;
        e->partial = false;
        e->dirty = true;
    } else {
        diag_free(d);
    }
}

bool health_summarize(struct health *h, const struct job *j, struct health_summary *out)
{
    memset(out, 0, sizeof(*out));
    struct entry *e = entry_acquire(h, j->pk);
    if (!e)
        return false;
    if (e->partial)
        complete(h, j, e); /* returns with the lock held again */
    diag_summarize(e->d, &out->s);
    snprintf(out->node, sizeof(out->node), "%s", out->s.node ? out->s.node : "");
    snprintf(out->pod, sizeof(out->pod), "%s", out->s.pod ? out->s.pod : "");
    out->s.node = out->s.node ? out->node : NULL;
    out->s.pod = out->s.pod ? out->pod : NULL;
    entry_unlock(e);
    return true;
}

void health_attempt_done(struct health *h, int64_t pk, const json_t *decision)
{
    struct entry *e = entry_acquire(h, pk);
    if (!e)
        return;
    struct health_save *p = health_save_prepare(h, e, true, decision);
    entry_unlock(e);
    health_save_commit(h, p, true);
}

void health_forget(struct health *h, int64_t pk)
{
    pthread_mutex_lock(&h->lock);
    struct entry **pp = &h->buckets[bucket_of(pk)];
    while (*pp && (*pp)->pk != pk)
        pp = &(*pp)->next;
    struct entry *e = *pp;
    if (e) {
        *pp = e->next;
        pthread_mutex_lock(&e->lock); /* waits for a batch being fed */
    }
    pthread_mutex_unlock(&h->lock);
    if (!e)
        return;
    struct health_save *p = e->dirty ? health_save_prepare(h, e, false, NULL) : NULL;
    pthread_mutex_unlock(&e->lock);
    health_save_commit(h, p, true);
    entry_free(e);
}
