/*
 * collect_sources: the struct log_sources the collector hands to executors (collect.h): files to
 * follow (a local rank's log) and batches pushed by followers (a pod's log stream). Called on the
 * executors' threads; everything here takes `lock`. A push blocks while more than PUSH_BUDGET
 * bytes wait for the collector, so a fast pod cannot grow the daemon's memory without bound.
 */
#include "server/ingest/collect_internal.h"

#include "core/linesplit.h"
#include "core/xalloc.h"

#define PUSH_BUDGET (64ll << 20) /* pushed bytes waiting before push() blocks */

/* Takes the pushed batches queued so far into the round. */
struct pushed *collect_take_pushed(struct collect *c)
{
    pthread_mutex_lock(&c->lock);
    struct pushed *p = c->pushed_head;
    c->pushed_head = c->pushed_tail = NULL;
    c->pushed_bytes = 0;
    pthread_cond_broadcast(&c->cond);
    pthread_mutex_unlock(&c->lock);
    return p;
}

void collect_pushed_free(struct pushed *p)
{
    while (p) {
        struct pushed *next = p->next;
        free(p->pod);
        free(p->position);
        free(p->lines);
        buf_release(&p->text);
        free(p);
        p = next;
    }
}

static struct fsource *find_file(struct collect *c, int64_t pk, const char *key)
{
    for (struct fsource *f = c->files; f; f = f->next)
        if (f->job_pk == pk && strcmp(f->key, key) == 0)
            return f;
    return NULL;
}

static void src_add_file(void *ctx, int64_t job_pk, const char *key, const char *path,
                         const struct log_origin *origin)
{
    struct collect *c = ctx;
    pthread_mutex_lock(&c->lock);
    struct fsource *f = find_file(c, job_pk, key);
    if (f) {
        if (origin->pid && origin->pid != f->origin.pid) {
            f->origin.pid = origin->pid;
            f->src_new = f->src >= 0; /* rewrite the source row with its pid */
        }
    } else {
        f = XNEW(struct fsource);
        f->job_pk = job_pk;
        snprintf(f->key, sizeof(f->key), "%s", key);
        f->path = path ? xstrdup(path) : NULL;
        f->origin = *origin;
        f->origin.pod = origin->pod ? xstrdup(origin->pod) : NULL;
        f->fd = -1;
        f->src = -1;
        f->next = c->files;
        c->files = f;
    }
    pthread_mutex_unlock(&c->lock);
}

static void src_file_done(void *ctx, int64_t job_pk, const char *key)
{
    struct collect *c = ctx;
    pthread_mutex_lock(&c->lock);
    struct fsource *f = find_file(c, job_pk, key);
    if (f)
        f->done = true;
    pthread_mutex_unlock(&c->lock);
}

static void src_push(void *ctx, int64_t job_pk, const char *key, const struct log_origin *origin,
                     const struct logrec *lines, size_t n, const char *position)
{
    struct collect *c = ctx;
    struct pushed *p = XNEW(struct pushed);
    p->job_pk = job_pk;
    snprintf(p->key, sizeof(p->key), "%s", key);
    p->origin = *origin;
    p->pod = origin->pod ? xstrdup(origin->pod) : NULL;
    p->origin.pod = p->pod;
    p->position = position ? xstrdup(position) : NULL;
    p->lines = xcalloc(n ? n : 1, sizeof(*p->lines));
    p->n = n;
    for (size_t i = 0; i < n; i++) {
        p->lines[i] =
            (struct log_line){ .time = lines[i].time,
                               .len = lines[i].len,
                               .flags = (lines[i].stream == STREAM_STDERR ? LOGF_STDERR : 0) |
                                        (lines[i].flags & LINE_PROGRESS ? LOGF_PROGRESS : 0) |
                                        (lines[i].flags & LINE_PARTIAL ? LOGF_PARTIAL : 0),
                               .text = (const char *)(uintptr_t)p->text.len };
        buf_append(&p->text, lines[i].text, lines[i].len);
    }
    pthread_mutex_lock(&c->lock);
    while (c->pushed_bytes > PUSH_BUDGET && !c->stopping)
        pthread_cond_wait(&c->cond, &c->lock);
    if (c->pushed_tail)
        c->pushed_tail->next = p;
    else
        c->pushed_head = p;
    c->pushed_tail = p;
    c->pushed_bytes += (int64_t)p->text.len;
    pthread_mutex_unlock(&c->lock);
}

static char *src_position(void *ctx, int64_t job_pk, const char *key)
{
    struct collect *c = ctx;
    return store_log_position(c->st, job_pk, key, NULL);
}

struct log_sources collect_sources(struct collect *c)
{
    return (struct log_sources){ .ctx = c,
                                 .add_file = src_add_file,
                                 .file_done = src_file_done,
                                 .push = src_push,
                                 .position = src_position };
}
