/*
 * healthfeed: the feeder thread of the health registry (see health.h, health_start). The
 * collector's hook copies each committed batch of a job's lines into a FIFO; the feeder feeds
 * them to the job's diagnosis in that order, so the analysis of one batch overlaps the reading
 * and storing of the next. The queue is bounded in bytes: when the analysis falls behind, the
 * collector waits (lines are never dropped from the diagnosis).
 *
 * Threads: health_lines on the collector thread, the feeder on its own, health_pending from
 * the controller. qlock guards the queue.
 */
#include "server/health/health_internal.h"

#include "core/xalloc.h"

#define QUEUE_BUDGET (64ll << 20)

struct hbatch {
    int64_t pk;
    struct log_line *lines;
    size_t n, cap_lines;
    char *text;
    size_t cap_text;
    int64_t bytes;
    struct hbatch *next;
};

#define POOL_MAX 4

/* A batch's buffers, from the pool when one is big enough (fresh multi-megabyte buffers cost
 * page faults on every batch). Caller holds qlock. */
static struct hbatch *batch_get(struct health *h, size_t n, size_t total)
{
    for (struct hbatch **pp = &h->pool; *pp; pp = &(*pp)->next) {
        struct hbatch *b = *pp;
        if (b->cap_lines >= n && b->cap_text >= total) {
            *pp = b->next;
            h->npool--;
            b->next = NULL;
            return b;
        }
    }
    struct hbatch *b = XNEW(struct hbatch);
    b->cap_lines = n ? n : 1;
    b->cap_text = total ? total : 1;
    b->lines = xmalloc(b->cap_lines * sizeof(*b->lines));
    b->text = xmalloc(b->cap_text);
    return b;
}

static struct hbatch *batch_copy(struct health *h, int64_t pk, const struct log_line *lines,
                                 size_t n)
{
    size_t total = 0;
    for (size_t i = 0; i < n; i++)
        total += lines[i].len;
    pthread_mutex_lock(&h->qlock);
    struct hbatch *b = batch_get(h, n, total);
    pthread_mutex_unlock(&h->qlock);
    b->pk = pk;
    b->n = n;
    size_t off = 0;
    for (size_t i = 0; i < n; i++) {
        b->lines[i] = lines[i];
        b->lines[i].pod = NULL;
        memcpy(b->text + off, lines[i].text, lines[i].len);
        b->lines[i].text = b->text + off;
        off += lines[i].len;
    }
    b->bytes = (int64_t)(total + n * sizeof(*b->lines));
    return b;
}

static void batch_free(struct hbatch *b)
{
    free(b->lines);
    free(b->text);
    free(b);
}

/* Keeps b's buffers for the next batch, or frees them. Caller holds qlock. */
static void batch_put(struct health *h, struct hbatch *b)
{
    if (h->npool >= POOL_MAX || h->qstop) {
        batch_free(b);
        return;
    }
    b->next = h->pool;
    h->pool = b;
    h->npool++;
}

void health_lines(void *ctx, int64_t job_pk, const struct log_line *lines, size_t n)
{
    struct health *h = ctx;
    pthread_mutex_lock(&h->qlock);
    bool feeding = h->feeding;
    pthread_mutex_unlock(&h->qlock);
    if (!feeding) {
        health_feed(h, job_pk, lines, n);
        return;
    }
    struct hbatch *b = batch_copy(h, job_pk, lines, n);
    pthread_mutex_lock(&h->qlock);
    if (h->qbytes > QUEUE_BUDGET)
        atomic_fetch_add(&h->queue_waits, 1);
    while (h->qbytes > QUEUE_BUDGET && !h->qstop)
        pthread_cond_wait(&h->qspace, &h->qlock);
    if (h->qtail)
        h->qtail->next = b;
    else
        h->qhead = b;
    h->qtail = b;
    h->qbytes += b->bytes;
    pthread_cond_signal(&h->qwork);
    pthread_mutex_unlock(&h->qlock);
}

static void *feeder_main(void *arg)
{
    pthread_setname_np(pthread_self(), "ty-healthfeed");
    struct health *h = arg;
    pthread_mutex_lock(&h->qlock);
    for (;;) {
        while (!h->qhead && !h->qstop)
            pthread_cond_wait(&h->qwork, &h->qlock);
        struct hbatch *b = h->qhead;
        if (!b)
            break; /* stopping, and everything queued was fed */
        h->qhead = b->next;
        if (!h->qhead)
            h->qtail = NULL;
        h->busy_pk = b->pk;
        pthread_mutex_unlock(&h->qlock);
        health_feed(h, b->pk, b->lines, b->n);
        pthread_mutex_lock(&h->qlock);
        h->busy_pk = 0;
        h->qbytes -= b->bytes;
        pthread_cond_broadcast(&h->qspace);
        batch_put(h, b);
    }
    pthread_mutex_unlock(&h->qlock);
    return NULL;
}

int health_start(struct health *h, struct err *err)
{
    pthread_mutex_lock(&h->qlock);
    h->feeding = true;
    pthread_mutex_unlock(&h->qlock);
    if (pthread_create(&h->feeder, NULL, feeder_main, h) == 0)
        return 0;
    pthread_mutex_lock(&h->qlock);
    h->feeding = false;
    pthread_mutex_unlock(&h->qlock);
    return err_set(err, ERR_INTERNAL, "cannot start the diagnosis feeder thread");
}

void health_feeder_stop(struct health *h)
{
    pthread_mutex_lock(&h->qlock);
    bool feeding = h->feeding;
    h->qstop = true;
    pthread_cond_broadcast(&h->qwork);
    pthread_cond_broadcast(&h->qspace);
    pthread_mutex_unlock(&h->qlock);
    if (feeding)
        pthread_join(h->feeder, NULL);
    pthread_mutex_lock(&h->qlock);
    h->feeding = false;
    while (h->qhead) { /* queued after the feeder stopped: nothing reads them any more */
        struct hbatch *b = h->qhead;
        h->qhead = b->next;
        batch_free(b);
    }
    h->qtail = NULL;
    while (h->pool) {
        struct hbatch *b = h->pool;
        h->pool = b->next;
        batch_free(b);
    }
    h->npool = 0;
    pthread_mutex_unlock(&h->qlock);
}

bool health_pending(struct health *h, int64_t job_pk)
{
    pthread_mutex_lock(&h->qlock);
    bool pending = h->busy_pk == job_pk;
    for (struct hbatch *b = h->qhead; b && !pending; b = b->next)
        pending = b->pk == job_pk;
    pthread_mutex_unlock(&h->qlock);
    return pending;
}

void health_drain(struct health *h)
{
    pthread_mutex_lock(&h->qlock);
    while (h->feeding && (h->qhead || h->busy_pk))
        pthread_cond_wait(&h->qspace, &h->qlock);
    pthread_mutex_unlock(&h->qlock);
}
