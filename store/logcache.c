/* logcache: see logcache.h. A ring of lines per job; jobs evicted least recently used. */
#include "store/logcache.h"

#include <pthread.h>

#include "core/clock.h"
#include "core/xalloc.h"

#define JOB_MAX_LINES 4096
#define JOB_MAX_BYTES (2u << 20)

struct cline {
    int64_t seq, time;
    int src, rank, flags;
    size_t len;
    char text[];
};

struct csource {
    int src, rank, pid, attempt;
    char *pod;
};

struct cjob {
    int64_t pk;
    struct cline *ring[JOB_MAX_LINES];
    size_t head, n, bytes; /* ring[head] is the oldest of n lines */
    int64_t next_seq;      /* one past the newest line */
    struct csource *sources;
    size_t nsources;
    int64_t used;
    struct cjob *next;
};

struct logcache {
    pthread_mutex_t lock;
    struct cjob *jobs;
    size_t bytes, max_bytes;
};

struct logcache *logcache_new(size_t max_bytes)
{
    struct logcache *lc = XNEW(struct logcache);
    pthread_mutex_init(&lc->lock, NULL);
    lc->max_bytes = max_bytes;
    return lc;
}

static void drop_oldest(struct logcache *lc, struct cjob *j)
{
    struct cline *l = j->ring[j->head];
    j->bytes -= sizeof(*l) + l->len;
    lc->bytes -= sizeof(*l) + l->len;
    free(l);
    j->head = (j->head + 1) % JOB_MAX_LINES;
    j->n--;
}

static void clear_job(struct logcache *lc, struct cjob *j)
{
    while (j->n)
        drop_oldest(lc, j);
}

static void free_job(struct logcache *lc, struct cjob *j)
{
    clear_job(lc, j);
    lc->bytes -= sizeof(*j);
    for (size_t i = 0; i < j->nsources; i++)
        free(j->sources[i].pod);
    free(j->sources);
    free(j);
}

static void unlink_job(struct logcache *lc, struct cjob *j)
{
    for (struct cjob **p = &lc->jobs; *p; p = &(*p)->next)
        if (*p == j) {
            *p = j->next;
            return;
        }
}

void logcache_free(struct logcache *lc)
{
    if (!lc)
        return;
    while (lc->jobs) {
        struct cjob *j = lc->jobs;
        lc->jobs = j->next;
        free_job(lc, j);
    }
    pthread_mutex_destroy(&lc->lock);
    free(lc);
}

static struct cjob *find(struct logcache *lc, int64_t pk)
{
    for (struct cjob *j = lc->jobs; j; j = j->next)
        if (j->pk == pk)
            return j;
    return NULL;
}

static void add_sources(struct cjob *j, const struct log_source_new *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        size_t k = 0;
        while (k < j->nsources && j->sources[k].src != s[i].src)
            k++;
        if (k == j->nsources) {
            j->sources = xrealloc(j->sources, (j->nsources + 1) * sizeof(*j->sources));
            j->nsources++;
        } else {
            free(j->sources[k].pod);
        }
        j->sources[k] =
            (struct csource){ .src = s[i].src,
                              .rank = s[i].rank,
                              .pid = s[i].pid,
                              .attempt = s[i].attempt,
                              .pod = s[i].pod && s[i].pod[0] ? xstrdup(s[i].pod) : NULL };
    }
}

/* Evicts the least recently used jobs while the cache is over its budget. */
static void evict(struct logcache *lc, struct cjob *keep)
{
    while (lc->bytes > lc->max_bytes) {
        struct cjob *lru = NULL;
        for (struct cjob *j = lc->jobs; j; j = j->next)
            if (j != keep && (!lru || j->used < lru->used))
                lru = j;
        if (!lru)
            break;
        unlink_job(lc, lru);
        free_job(lc, lru);
    }
}

void logcache_put(struct logcache *lc, int64_t job_pk, const struct log_line *lines, size_t n,
                  const struct log_source_new *sources, size_t nsources)
{
    if (n == 0 && nsources == 0)
        return;
    pthread_mutex_lock(&lc->lock);
    struct cjob *j = find(lc, job_pk);
    if (!j) {
        j = XNEW(struct cjob);
        lc->bytes += sizeof(*j); /* 32 KiB of ring: many small jobs must count too */
        j->pk = job_pk;
        j->next = lc->jobs;
        lc->jobs = j;
    }
    j->used = clock_mono_ns();
    add_sources(j, sources, nsources);
    if (n && j->n && lines[0].seq != j->next_seq)
        clear_job(lc, j); /* a gap: the cache only ever holds a contiguous run */
    for (size_t i = 0; i < n; i++) {
        if (j->n == JOB_MAX_LINES || j->bytes > JOB_MAX_BYTES)
            drop_oldest(lc, j);
        struct cline *l = xmalloc(sizeof(*l) + lines[i].len);
        *l = (struct cline){ .seq = lines[i].seq,
                             .time = lines[i].time,
                             .src = lines[i].src,
                             .rank = lines[i].rank,
                             .flags = lines[i].flags,
                             .len = lines[i].len };
        memcpy(l->text, lines[i].text, lines[i].len);
        j->ring[(j->head + j->n) % JOB_MAX_LINES] = l;
        j->n++;
        j->bytes += sizeof(*l) + l->len;
        lc->bytes += sizeof(*l) + l->len;
        j->next_seq = lines[i].seq + 1;
    }
    evict(lc, j);
    pthread_mutex_unlock(&lc->lock);
}

size_t logcache_bytes(struct logcache *lc)
{
    pthread_mutex_lock(&lc->lock);
    size_t n = lc->bytes;
    pthread_mutex_unlock(&lc->lock);
    return n;
}

void logcache_drop(struct logcache *lc, int64_t job_pk)
{
    pthread_mutex_lock(&lc->lock);
    struct cjob *j = find(lc, job_pk);
    if (j) {
        unlink_job(lc, j);
        free_job(lc, j);
    }
    pthread_mutex_unlock(&lc->lock);
}

static const struct csource *source_of(const struct cjob *j, int src)
{
    for (size_t i = 0; i < j->nsources; i++)
        if (j->sources[i].src == src)
            return &j->sources[i];
    return NULL;
}

/* Index in the ring of the first line after `after`, or -1 when the cache does not reach back
 * that far. */
static long start_index(const struct cjob *j, int64_t after)
{
    if (j->n == 0)
        return -1;
    int64_t first = j->ring[j->head]->seq;
    if (after + 1 < first)
        return -1;
    int64_t skip = after + 1 - first;
    return skip > (int64_t)j->n ? (long)j->n : (long)skip;
}

int logcache_read(struct logcache *lc, int64_t job_pk, const struct log_query *q,
                  bool (*wanted)(const struct log_query *q, const struct log_line *l),
                  log_line_fn fn, void *ctx, struct log_read_stats *stats)
{
    if (q->tail || q->before)
        return 0;
    pthread_mutex_lock(&lc->lock);
    struct cjob *j = find(lc, job_pk);
    long start = j ? start_index(j, q->after) : -1;
    for (long i = start; i >= 0 && i < (long)j->n; i++)
        if (!source_of(j, j->ring[(j->head + (size_t)i) % JOB_MAX_LINES]->src))
            start = -1; /* a source from before the cache: the store knows it */
    if (start < 0) {
        pthread_mutex_unlock(&lc->lock);
        return 0;
    }
    j->used = clock_mono_ns();
    int emitted = 0;
    for (size_t i = (size_t)start; i < j->n; i++) {
        const struct cline *c = j->ring[(j->head + i) % JOB_MAX_LINES];
        const struct csource *src = source_of(j, c->src);
        struct log_line l = { .seq = c->seq,
                              .time = c->time,
                              .src = c->src,
                              .flags = c->flags,
                              .text = c->text,
                              .len = c->len,
                              .rank = src->rank,
                              .pid = src->pid,
                              .attempt = src->attempt,
                              .pod = src->pod };
        stats->lines_scanned++;
        stats->max_seq = c->seq;
        if (!wanted(q, &l))
            continue;
        emitted++;
        if (fn(ctx, &l) || (q->limit && emitted >= q->limit))
            break;
    }
    pthread_mutex_unlock(&lc->lock);
    return 1;
}
