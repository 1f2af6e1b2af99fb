/*
 * collect: see collect.h. The collector thread's rounds: read every file source from its
 * committed offset, take the pushed batches (collect_sources.c), order each job's lines by time,
 * store them with their positions in one transaction, then retire finished sources. Only the
 * collector thread frees sources, so it may use them without the lock between rounds.
 *
 * A rank's file is only the way from its shim to the store: once a round's lines are committed
 * their bytes are punched out of the file (fallocate PUNCH_HOLE: the size and every offset
 * stay, the blocks are freed), so the file holds on disk only what is not stored yet, which
 * the shim keeps within the job's --log-max-bytes (server/local/shim.c). Lines past the
 * retention limits are the store's to drop; without this the raw files kept every byte a rank
 * ever wrote.
 */
#include "server/ingest/collect.h"
#include "server/ingest/collect_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/falloc.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/prom.h"
#include "core/linesplit.h"
#include "core/log.h"
#include "core/wakeups.h"
#include "core/parse.h"
#include "core/xalloc.h"
#include "store/logs.h"

#define READ_CHUNK (4u << 20) /* per file per round; larger than any record */
#define PUNCH_MIN  (64 << 10) /* punch once this much more is stored (a call per round else) */
#define BLOCK      4096       /* punches end on a block boundary while the file may grow */

static struct gathered *gathered_for(struct collect *c, int64_t pk)
{
    for (size_t i = 0; i < c->njobs; i++)
        if (c->jobs[i].job_pk == pk)
            return &c->jobs[i];
    if (c->njobs == c->capjobs) {
        c->capjobs = c->capjobs ? c->capjobs * 2 : 16;
        c->jobs = xrealloc(c->jobs, c->capjobs * sizeof(*c->jobs));
    }
    struct gathered *g = &c->jobs[c->njobs++];
    memset(g, 0, sizeof(*g));
    g->job_pk = pk;
    return g;
}

static void gather_line(struct gathered *g, int src, const struct log_origin *o,
                        const struct logrec *r)
{
    if (g->n == g->cap) {
        g->cap = g->cap ? g->cap * 2 : 256;
        g->lines = xrealloc(g->lines, g->cap * sizeof(*g->lines));
    }
    int flags = (r->stream == STREAM_STDERR ? LOGF_STDERR : 0) |
                (r->flags & LINE_PROGRESS ? LOGF_PROGRESS : 0) |
                (r->flags & LINE_PARTIAL ? LOGF_PARTIAL : 0);
    g->lines[g->n++] = (struct log_line){ .time = r->time,
                                          .src = src,
                                          .flags = flags,
                                          .text = (const char *)(uintptr_t)g->text.len,
                                          .len = r->len,
                                          .rank = o->rank,
                                          .attempt = o->attempt };
    buf_append(&g->text, r->text, r->len);
}

static void add_position(struct gathered *g, const char *key, const char *position)
{
    g->positions = xrealloc(g->positions, (g->npositions + 1) * sizeof(*g->positions));
    g->positions[g->npositions].key = xstrdup(key);
    g->positions[g->npositions++].position = xstrdup(position);
}

static void add_source(struct gathered *g, int src, const char *key, const struct log_origin *o)
{
    g->sources = xrealloc(g->sources, (g->nsources + 1) * sizeof(*g->sources));
    g->sources[g->nsources++] = (struct log_source_new){ .src = src,
                                                         .key = xstrdup(key),
                                                         .rank = o->rank,
                                                         .attempt = o->attempt,
                                                         .pid = o->pid,
                                                         .pod = o->pod ? xstrdup(o->pod) : NULL };
}

static void gathered_reset(struct collect *c)
{
    for (size_t i = 0; i < c->njobs; i++) {
        struct gathered *g = &c->jobs[i];
        free(g->lines);
        buf_release(&g->text);
        for (size_t k = 0; k < g->nsources; k++) {
            free((char *)g->sources[k].key);
            free((char *)g->sources[k].pod);
        }
        free(g->sources);
        for (size_t k = 0; k < g->npositions; k++) {
            free((char *)g->positions[k].key);
            free((char *)g->positions[k].position);
        }
        free(g->positions);
    }
    c->njobs = 0;
}

/* Finds (or assigns) the src number of a source; a new one is recorded with this round. */
static int resolve_src(struct collect *c, int64_t pk, const char *key, bool *is_new)
{
    int src = -1, next = 0;
    /* A source first seen earlier in this round (two pushed batches of a new pod) is not
     * stored yet: it keeps the number it was given. */
    struct gathered *round = gathered_for(c, pk);
    for (size_t i = 0; i < round->nsources; i++) {
        if (strcmp(round->sources[i].key, key) == 0) {
            *is_new = false;
            return round->sources[i].src;
        }
    }
    struct err err;
    err_init(&err);
    store_log_source_find(c->st, pk, key, &src, &next, &err);
    err_release(&err);
    *is_new = src < 0;
    if (src >= 0)
        return src;
    /* Sources made earlier in this round are not stored yet: count them too. */
    struct gathered *g = gathered_for(c, pk);
    for (size_t i = 0; i < g->nsources; i++)
        if (g->sources[i].src >= next)
            next = g->sources[i].src + 1;
    return next;
}

/* Loads a file's committed offset from the store, once. */
static void position_file(struct collect *c, struct fsource *f)
{
    struct err err;
    err_init(&err);
    char *pos = store_log_position(c->st, f->job_pk, f->key, &err);
    int64_t off = 0;
    if (pos && parse_int64(pos, 0, INT64_MAX, &off) < 0)
        off = 0;
    free(pos);
    err_release(&err);
    f->offset = f->pending = off;
    f->positioned = true;
}

/* Reads what the file holds beyond its offset into the round; returns bytes taken. */
static int64_t read_file(struct collect *c, struct fsource *f)
{
    if (f->fd < 0) {
        f->fd = open(f->path, O_RDWR | O_CLOEXEC);
        f->punch = f->fd >= 0;
        if (f->fd < 0)
            f->fd = open(f->path, O_RDONLY | O_CLOEXEC); /* read, never punched */
        if (f->fd < 0)
            return 0;
    }
    if (!f->positioned)
        position_file(c, f);
    ssize_t n = pread(f->fd, c->buf, READ_CHUNK, f->offset);
    if (n <= 0)
        return 0;
    struct gathered *g = NULL;
    size_t off = 0;
    while (off < (size_t)n) {
        struct logrec r;
        long used = logrec_parse(c->buf + off, (size_t)n - off, &r);
        if (used == 0)
            break;
        if (used > 0) {
            if (f->src < 0) {
                f->src = resolve_src(c, f->job_pk, f->key, &f->src_new);
            }
            if (!g)
                g = gathered_for(c, f->job_pk);
            gather_line(g, f->src, &f->origin, &r);
        }
        off += (size_t)(used > 0 ? used : -used);
    }
    if (off == 0 && (size_t)n == READ_CHUNK)
        off = (size_t)n; /* no record fits the chunk: the bytes are not records; skip them */
    f->pending = f->offset + (int64_t)off;
    return (int64_t)off;
}

static void note_file_positions(struct collect *c, struct fsource *f)
{
    if (f->src_new && f->src >= 0)
        add_source(gathered_for(c, f->job_pk), f->src, f->key, &f->origin);
    if (f->pending != f->offset) {
        char pos[32];
        snprintf(pos, sizeof(pos), "%" PRId64, f->pending);
        add_position(gathered_for(c, f->job_pk), f->key, pos);
    }
}

static void gather_pushed(struct collect *c, struct pushed *p)
{
    for (; p; p = p->next) {
        bool is_new;
        int src = resolve_src(c, p->job_pk, p->key, &is_new);
        struct gathered *g = gathered_for(c, p->job_pk);
        if (is_new)
            add_source(g, src, p->key, &p->origin);
        for (size_t i = 0; i < p->n; i++) {
            struct logrec r = { .time = p->lines[i].time,
                                .stream =
                                    p->lines[i].flags & LOGF_STDERR ? STREAM_STDERR : STREAM_STDOUT,
                                .flags = (p->lines[i].flags & LOGF_PROGRESS ? LINE_PROGRESS : 0) |
                                         (p->lines[i].flags & LOGF_PARTIAL ? LINE_PARTIAL : 0),
                                .text = buf_cstr(&p->text) + (uintptr_t)p->lines[i].text,
                                .len = p->lines[i].len };
            gather_line(g, src, &p->origin, &r);
        }
        if (p->position)
            add_position(g, p->key, p->position);
    }
}

static int by_time(const void *a, const void *b)
{
    const struct log_line *x = a, *y = b;
    if (x->time != y->time)
        return x->time < y->time ? -1 : 1;
    /* Same time: keep the order of reading (seq holds the gather index during sorting). */
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* Orders each job's lines into one timeline and fixes text pointers. */
static void prepare(struct collect *c)
{
    for (size_t i = 0; i < c->njobs; i++) {
        struct gathered *g = &c->jobs[i];
        const char *base = buf_cstr(&g->text);
        for (size_t k = 0; k < g->n; k++) {
            g->lines[k].seq = (int64_t)k;
            g->lines[k].text = base + (uintptr_t)g->lines[k].text;
        }
        if (g->n > 1)
            qsort(g->lines, g->n, sizeof(*g->lines), by_time);
    }
}

static void after_commit(struct collect *c, struct log_append *apps)
{
    uint64_t lines = 0, bytes = 0;
    for (size_t i = 0; i < c->njobs; i++) {
        lines += c->jobs[i].n;
        for (size_t k = 0; k < c->jobs[i].n; k++)
            bytes += c->jobs[i].lines[k].len;
        if (c->jobs[i].n && c->opts.stored.lines)
            c->opts.stored.lines(c->opts.stored.ctx, c->jobs[i].job_pk, apps[i].lines, apps[i].n);
        wakeups_key(c->wakeups, c->jobs[i].job_pk);
    }
    atomic_fetch_add(&c->lines_total, lines);
    atomic_fetch_add(&c->bytes_total, bytes);
    atomic_fetch_add(&c->flushes_total, 1);
}

/* Stores the round; returns 0 or -1 (nothing was stored then). */
static int store_round(struct collect *c)
{
    prepare(c);
    struct log_append *apps = xcalloc(c->njobs ? c->njobs : 1, sizeof(*apps));
    for (size_t i = 0; i < c->njobs; i++) {
        struct gathered *g = &c->jobs[i];
        apps[i] = (struct log_append){ .job_pk = g->job_pk,
                                       .lines = g->lines,
                                       .n = g->n,
                                       .sources = g->sources,
                                       .nsources = g->nsources,
                                       .positions = g->positions,
                                       .npositions = g->npositions };
    }
    struct err err;
    err_init(&err);
    int64_t t0 = clock_mono_ns();
    int rc = store_logs_append(c->st, apps, c->njobs, &err);
    atomic_store(&c->last_flush_ns, clock_mono_ns() - t0);
    if (rc == 0) {
        after_commit(c, apps);
        if (c->retry_ns)
            log_info("logs: storing lines works again");
        c->retry_ns = 0;
    } else {
        /* Nothing is lost: sources stay at their committed positions and are read again. A
         * full disk or a locked database lasts a while: back off, and say so now and then. */
        atomic_fetch_add(&c->errors_total, 1);
        int64_t now = clock_mono_ns();
        c->retry_ns = c->retry_ns ? c->retry_ns * 2 : 100 * NS_PER_MS;
        if (c->retry_ns > 5 * NS_PER_SEC)
            c->retry_ns = 5 * NS_PER_SEC;
        c->retry_at = now + c->retry_ns;
        if (!c->last_error_log || now - c->last_error_log > 30 * NS_PER_SEC) {
            log_error("logs: storing lines failed (they will be read again): %s", err.msg);
            c->last_error_log = now;
        }
    }
    err_release(&err);
    free(apps);
    return rc;
}

/* Frees the blocks of what is stored: up to the committed offset (its last block too when
 * the file is done growing). A file system that cannot punch is not asked again. */
static void punch_stored(struct fsource *f, bool all)
{
    int64_t end = all ? f->offset : f->offset - f->offset % BLOCK;
    if (!f->punch || f->fd < 0 || end - f->punched < (all ? 1 : PUNCH_MIN))
        return;
    if (fallocate(f->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, f->punched,
                  end - f->punched) == 0)
        f->punched = end;
    else
        f->punch = false;
}

static void unlink_file(struct collect *c, struct fsource *f)
{
    pthread_mutex_lock(&c->lock);
    for (struct fsource **p = &c->files; *p; p = &(*p)->next) {
        if (*p == f) {
            *p = f->next;
            break;
        }
    }
    pthread_mutex_unlock(&c->lock);
    if (f->fd >= 0)
        close(f->fd);
    free(f->path);
    free((char *)f->origin.pod);
    free(f);
}

/* One round: read every source, store what was read. Returns true when anything was read. */
static bool round_once(struct collect *c)
{
    pthread_mutex_lock(&c->lock);
    struct fsource *files = c->files;
    pthread_mutex_unlock(&c->lock);
    struct fsource *retire[256];
    size_t nretire = 0;
    for (struct fsource *f = files; f; f = f->next) {
        bool done = f->done; /* read before reading: a later "done" waits a round */
        int64_t taken = f->path ? read_file(c, f) : 0;
        note_file_positions(c, f);
        if (done && taken == 0 && nretire < 256 && (f->path || done))
            retire[nretire++] = f;
    }
    struct pushed *pushed = collect_take_pushed(c);
    gather_pushed(c, pushed);
    bool any = c->njobs > 0;
    int rc = any ? store_round(c) : 0;
    for (struct fsource *f = files; f; f = f->next) {
        if (rc == 0) {
            f->offset = f->pending;
            f->src_new = false;
            punch_stored(f, false);
        } else {
            f->pending = f->offset;
        }
    }
    if (rc == 0) {
        collect_pushed_free(pushed);
        for (size_t i = 0; i < nretire; i++) {
            punch_stored(retire[i], true);
            unlink_file(c, retire[i]);
        }
    } else if (pushed) {
        pthread_mutex_lock(&c->lock); /* put them back in front, in order, still counted */
        struct pushed *last = pushed;
        c->pushed_bytes += (int64_t)last->text.len;
        while (last->next) {
            last = last->next;
            c->pushed_bytes += (int64_t)last->text.len;
        }
        last->next = c->pushed_head;
        c->pushed_head = pushed;
        if (!c->pushed_tail)
            c->pushed_tail = last;
        pthread_mutex_unlock(&c->lock);
    }
    gathered_reset(c);
    return any && rc == 0;
}

static bool has_source(struct collect *c, int64_t pk)
{
    bool found = false;
    pthread_mutex_lock(&c->lock);
    for (struct fsource *f = c->files; f && !found; f = f->next)
        found = f->job_pk == pk;
    for (struct pushed *p = c->pushed_head; p && !found; p = p->next)
        found = p->job_pk == pk;
    pthread_mutex_unlock(&c->lock);
    return found;
}

/* Marks finished jobs whose sources are all read complete, which ends their followers. */
static void complete_finished(struct collect *c)
{
    int64_t *pks = NULL;
    size_t n = 0;
    if (store_logs_unfinished(c->st, &pks, &n, NULL) < 0)
        return;
    for (size_t i = 0; i < n; i++) {
        if (has_source(c, pks[i]))
            continue;
        if (store_log_complete(c->st, pks[i], NULL) == 0)
            wakeups_key(c->wakeups, pks[i]);
    }
    free(pks);
}

static void retain(struct collect *c)
{
    int64_t *pks = NULL;
    size_t n = 0;
    int64_t min_time = clock_now_ns() - c->opts.max_age_ns;
    if (store_logs_over_limits(c->st, c->opts.max_bytes, min_time, &pks, &n, NULL) < 0)
        return;
    for (size_t i = 0; i < n; i++) {
        struct err err;
        err_init(&err);
        if (store_logs_retain(c->st, pks[i], c->opts.max_bytes, min_time, &err) < 0)
            log_warn("logs: retention of job %lld: %s", (long long)pks[i], err.msg);
        err_release(&err);
    }
    free(pks);
}

static void housekeeping(struct collect *c)
{
    int64_t now = clock_mono_ns();
    if (c->adopted && now - c->last_complete_check > 500 * NS_PER_MS) {
        complete_finished(c);
        c->last_complete_check = now;
    }
    if (now - c->last_retention > 10 * NS_PER_SEC) {
        retain(c);
        c->last_retention = now;
    }
}

static void *collect_main(void *arg)
{
    pthread_setname_np(pthread_self(), "ty-collect");
    struct collect *c = arg;
    for (;;) {
        pthread_mutex_lock(&c->lock);
        bool stopping = c->stopping;
        pthread_mutex_unlock(&c->lock);
        bool busy = !stopping && clock_mono_ns() < c->retry_at ? false : round_once(c);
        housekeeping(c);
        if (stopping)
            break;
        if (!busy)
            clock_sleep_ms(c->opts.poll_ns / NS_PER_MS > 0 ? c->opts.poll_ns / NS_PER_MS : 1);
    }
    return NULL;
}

struct collect *collect_new(struct store *st, struct wakeups *n, const struct collect_options *o)
{
    struct collect *c = XNEW(struct collect);
    c->st = st;
    c->wakeups = n;
    c->opts = *o;
    if (c->opts.poll_ns <= 0)
        c->opts.poll_ns = 20 * NS_PER_MS;
    c->buf = xmalloc(READ_CHUNK);
    pthread_mutex_init(&c->lock, NULL);
    pthread_cond_init(&c->cond, NULL);
    return c;
}

int collect_start(struct collect *c, struct err *err)
{
    if (pthread_create(&c->thread, NULL, collect_main, c) != 0)
        return err_set(err, ERR_INTERNAL, "cannot start the log collector thread");
    c->running = true;
    return 0;
}

void collect_adopted(struct collect *c)
{
    pthread_mutex_lock(&c->lock);
    c->adopted = true;
    pthread_mutex_unlock(&c->lock);
}

bool collect_pending(struct collect *c, int64_t job_pk)
{
    return has_source(c, job_pk);
}

void collect_flush(struct collect *c)
{
    while (round_once(c)) {
    }
}

void collect_free(struct collect *c)
{
    if (!c)
        return;
    if (c->running) {
        pthread_mutex_lock(&c->lock);
        c->stopping = true;
        pthread_cond_broadcast(&c->cond);
        pthread_mutex_unlock(&c->lock);
        pthread_join(c->thread, NULL);
    }
    while (c->files)
        unlink_file(c, c->files);
    collect_pushed_free(c->pushed_head);
    gathered_reset(c);
    free(c->jobs);
    free(c->buf);
    pthread_cond_destroy(&c->cond);
    pthread_mutex_destroy(&c->lock);
    free(c);
}

void collect_metrics(struct collect *c, struct buf *out)
{
    int sources = 0;
    pthread_mutex_lock(&c->lock);
    for (struct fsource *f = c->files; f; f = f->next)
        sources++;
    pthread_mutex_unlock(&c->lock);
    struct prom p;
    prom_init(&p, out);
    prom_scalar(&p, "trainyard_log_lines_ingested_total", PROM_COUNTER, "Log lines stored.",
                (double)atomic_load(&c->lines_total));
    prom_scalar(&p, "trainyard_log_bytes_ingested_total", PROM_COUNTER, "Log bytes stored.",
                (double)atomic_load(&c->bytes_total));
    prom_scalar(&p, "trainyard_log_flushes_total", PROM_COUNTER, "Log transactions committed.",
                (double)atomic_load(&c->flushes_total));
    prom_scalar(&p, "trainyard_log_store_errors_total", PROM_COUNTER, "Log flushes that failed.",
                (double)atomic_load(&c->errors_total));
    prom_scalar(&p, "trainyard_log_sources", PROM_GAUGE, "Rank log streams being followed.",
                sources);
    prom_scalar(&p, "trainyard_log_last_flush_seconds", PROM_GAUGE,
                "Duration of the last log commit.", (double)atomic_load(&c->last_flush_ns) / 1e9);
}
