/*
 * healthfeed: the feeder thread of the health registry (see health.h, health_start). The
 * collector's hook copies each committed batch of a job's lines into a FIFO; the feeder feeds
 * them to the job's diagnosis in that order, so the analysis of one batch overlaps the reading
 * and storing of the next. The queue is bounded in bytes: when the analysis falls behind, the
 * collector waits (lines are never dropped from the diagnosis).
 *
 * Threads: health_lines on the collector thread, the feeder on its own, health_pending from
 * the controller. The feeder's lock guards the queue; its state is this file's alone.
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

/* The queue and the thread; private to this file (health.c holds only the pointer). */
struct feeder {
    struct health *h;
    pthread_mutex_t lock; /* a leaf lock: see health_internal.h */
    pthread_cond_t work;  /* a batch was queued, or stopping */
    pthread_cond_t space; /* a batch was fed */
    struct hbatch *head, *tail;
    struct hbatch *pool; /* fed batches whose buffers are reused */
    size_t npool;
    int64_t bytes;
    int64_t busy_pk; /* the job of the batch being fed, 0: none */
    bool stop, feeding;
    pthread_t thread;
};

struct feeder *feeder_new(struct health *h)
{
    struct feeder *f = XNEW(struct feeder);
    f->h = h;
    pthread_mutex_init(&f->lock, NULL);
    pthread_cond_init(&f->work, NULL);
    pthread_cond_init(&f->space, NULL);
    return f;
}

/* A batch's buffers, from the pool when one is big enough (fresh multi-megabyte buffers cost
 * page faults on every batch). Caller holds qlock. */
static struct hbatch *batch_get(struct feeder *f, size_t n, size_t total)
{
    for (struct hbatch **pp = &f->pool; *pp; pp = &(*pp)->next) {
        struct hbatch *b = *pp;
        if (b->cap_lines >= n && b->cap_text >= total) {
            *pp = b->next;
            f->npool--;
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

static struct hbatch *batch_copy(struct feeder *f, int64_t pk, const struct log_line *lines,
                                 size_t n)
{
    size_t total = 0;
    for (size_t i = 0; i < n; i++)
        total += lines[i].len;
    pthread_mutex_lock(&f->lock);
    struct hbatch *b = batch_get(f, n, total);
    pthread_mutex_unlock(&f->lock);
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
static void batch_put(struct feeder *f, struct hbatch *b)
{
    if (f->npool >= POOL_MAX || f->stop) {
        batch_free(b);
        return;
    }
    b->next = f->pool;
    f->pool = b;
    f->npool++;
}

void health_lines(void *ctx, int64_t job_pk, const struct log_line *lines, size_t n)
{
    struct health *h = ctx;
    struct feeder *f = h->feeder;
    pthread_mutex_lock(&f->lock);
    bool feeding = f->feeding;
    pthread_mutex_unlock(&f->lock);
    if (!feeding) {
        health_feed(h, job_pk, lines, n);
        return;
    }
    struct hbatch *b = batch_copy(f, job_pk, lines, n);
    pthread_mutex_lock(&f->lock);
    while (f->bytes > QUEUE_BUDGET && !f->stop)
        pthread_cond_wait(&f->space, &f->lock);
    if (f->tail)
        f->tail->next = b;
    else
        f->head = b;
    f->tail = b;
    f->bytes += b->bytes;
    pthread_cond_signal(&f->work);
    pthread_mutex_unlock(&f->lock);
}

static void *feeder_main(void *arg)
{
    pthread_setname_np(pthread_self(), "ty-healthfeed");
    struct feeder *f = arg;
    pthread_mutex_lock(&f->lock);
    for (;;) {
        while (!f->head && !f->stop)
            pthread_cond_wait(&f->work, &f->lock);
        struct hbatch *b = f->head;
        if (!b)
            break; /* stopping, and everything queued was fed */
        f->head = b->next;
        if (!f->head)
            f->tail = NULL;
        f->busy_pk = b->pk;
        pthread_mutex_unlock(&f->lock);
        health_feed(f->h, b->pk, b->lines, b->n);
        pthread_mutex_lock(&f->lock);
        f->busy_pk = 0;
        f->bytes -= b->bytes;
        pthread_cond_broadcast(&f->space);
        batch_put(f, b);
    }
    pthread_mutex_unlock(&f->lock);
    return NULL;
}

int health_start(struct health *h, struct err *err)
{
    struct feeder *f = h->feeder;
    pthread_mutex_lock(&f->lock);
    f->feeding = true;
    pthread_mutex_unlock(&f->lock);
    if (pthread_create(&f->thread, NULL, feeder_main, f) == 0)
        return 0;
    pthread_mutex_lock(&f->lock);
    f->feeding = false;
    pthread_mutex_unlock(&f->lock);
    return err_set(err, ERR_INTERNAL, "cannot start the diagnosis feeder thread");
}

void feeder_free(struct feeder *f)
{
    if (!f)
        return;
    pthread_mutex_lock(&f->lock);
    bool feeding = f->feeding;
    f->stop = true;
    pthread_cond_broadcast(&f->work);
    pthread_cond_broadcast(&f->space);
    pthread_mutex_unlock(&f->lock);
    if (feeding)
        pthread_join(f->thread, NULL);
    pthread_mutex_lock(&f->lock);
    f->feeding = false;
    while (f->head) { /* queued after the feeder stopped: nothing reads them any more */
        struct hbatch *b = f->head;
        f->head = b->next;
        batch_free(b);
    }
    f->tail = NULL;
    while (f->pool) {
        struct hbatch *b = f->pool;
        f->pool = b->next;
        batch_free(b);
    }
    f->npool = 0;
    pthread_mutex_unlock(&f->lock);
    pthread_cond_destroy(&f->space);
    pthread_cond_destroy(&f->work);
    pthread_mutex_destroy(&f->lock);
    free(f);
}

bool health_pending(struct health *h, int64_t job_pk)
{
    struct feeder *f = h->feeder;
    pthread_mutex_lock(&f->lock);
    bool pending = f->busy_pk == job_pk;
    for (struct hbatch *b = f->head; b && !pending; b = b->next)
        pending = b->pk == job_pk;
    pthread_mutex_unlock(&f->lock);
    return pending;
}

void health_drain(struct health *h)
{
    struct feeder *f = h->feeder;
    pthread_mutex_lock(&f->lock);
    while (f->feeding && (f->head || f->busy_pk))
        pthread_cond_wait(&f->space, &f->lock);
    pthread_mutex_unlock(&f->lock);
}
