/*
 * logs: the log routes. GET /v1/jobs/{id}/logs reads a page of the merged timeline (or the
 * last N lines) with filters, or follows it live (follow=true: Server-Sent Events or chunked
 * text/NDJSON) until the job ends; /logs/search finds lines with context; /logs/download
 * streams a whole log. Followers read from the store, woken by the collector's notifications,
 * so a slow follower only slows itself.
 */
#include <pthread.h>
#include <strings.h>

#include "api/handlers.h"
#include "api/job_json.h"
#include "api/logfmt.h"
#include "api/logquery.h"
#include "core/clock.h"
#include "core/wakeups.h"
#include "core/xalloc.h"
#include "store/jobs.h"

#define FOLLOW_BATCH 2000
#define KEEPALIVE_NS (15 * NS_PER_SEC)

struct page {
    struct buf *out;
    const struct logfmt *fmt;
    int64_t last_seq, prev_seq;
    int count;
};

static int page_line(void *ctx, const struct log_line *l)
{
    struct page *p = ctx;
    logfmt_line(p->fmt, p->out, l);
    p->prev_seq = p->last_seq;
    p->last_seq = l->seq;
    p->count++;
    return 0;
}

static void set_log_headers(struct response *res, const struct log_stats *st, int64_t next)
{
    char v[32];
    snprintf(v, sizeof(v), "%lld", (long long)st->first_seq);
    response_header(res, "Trainyard-First-Seq", v);
    if (st->dropped_lines) {
        snprintf(v, sizeof(v), "%lld", (long long)st->dropped_lines);
        response_header(res, "Trainyard-Dropped-Lines", v);
    }
    if (next) {
        snprintf(v, sizeof(v), "%lld", (long long)next);
        response_header(res, "Trainyard-Next-After", v);
    }
    response_header(res, "Trainyard-Log-Complete", st->complete ? "true" : "false");
    response_header(res, "X-Content-Type-Options", "nosniff"); /* log lines are data */
}

/* A page of lines, buffered. */
static void read_page(struct request *req, struct response *res, struct logquery *lq,
                      const struct job *j)
{
    struct err err;
    err_init(&err);
    struct log_stats st;
    struct page p = { .out = &res->body, .fmt = &lq->fmt };
    struct log_query q = lq->q;
    bool paged = q.tail == 0 && q.limit > 0;
    if (paged)
        q.limit++; /* one more tells whether there is a next page */
    if (store_log_stats(req->api->store, j->pk, &st, &err) < 0 ||
        store_logs_read(req->api->store, j->pk, &q, page_line, &p, NULL, &err) < 0) {
        problem_respond(req, res, &err);
        err_release(&err);
        return;
    }
    int64_t next = 0;
    if (paged && p.count > lq->q.limit) {
        /* Drop the extra line again: it only told us a next page exists. */
        size_t cut = res->body.len;
        while (cut > 0 && res->body.data[cut - 1] == '\n')
            cut--;
        while (cut > 0 && res->body.data[cut - 1] != '\n')
            cut--;
        res->body.len = cut;
        res->body.data[cut] = '\0';
        next = p.prev_seq;
    }
    res->status = 200;
    res->content_type =
        lq->fmt.format == LOGFMT_TEXT ? "text/plain; charset=utf-8" : "application/x-ndjson";
    set_log_headers(res, &st, next);
    err_release(&err);
}

/* A live (or whole-log) stream. */
struct logstream {
    struct stream base;
    struct api *api;
    int64_t pk;
    struct logquery lq;
    bool follow;
    struct buf out;
    size_t out_off;
    struct wakeup waiter;
    int64_t last_write;
    bool ended;
    bool announced_drop;
    char client[64];
};

static void logstream_woken(void *ctx)
{
    struct logstream *s = ctx;
    stream_wake(&s->base);
}

/* Reads the next batch of lines into s->out; returns lines added, -1 on error. */
static int refill(struct logstream *s)
{
    struct page p = { .out = &s->out, .fmt = &s->lq.fmt };
    struct log_query q = s->lq.q;
    q.tail = 0;
    q.limit = FOLLOW_BATCH;
    struct log_read_stats stats = { 0 };
    struct err err;
    err_init(&err);
    int rc = store_logs_read(s->api->store, s->pk, &q, page_line, &p, &stats, &err);
    err_release(&err);
    if (rc < 0)
        return -1;
    int64_t seen = stats.max_seq > p.last_seq ? stats.max_seq : p.last_seq;
    if (seen > s->lq.q.after)
        s->lq.q.after = seen;
    return p.count;
}

/* Ends the stream: for SSE an "end" event carrying the job's final state. */
static void finish_stream(struct logstream *s)
{
    s->ended = true;
    if (s->lq.fmt.format != LOGFMT_SSE)
        return;
    struct job *j = store_job_get_pk(s->api->store, s->pk, NULL);
    buf_printf(&s->out, "event: end\ndata: {\"state\":\"%s\"}\n\n",
               j ? jobstate_name(j->state) : "deleted");
    job_free(j);
}

/* Tells an SSE client once that lines it asked for were dropped by retention. */
static void announce_drop(struct logstream *s, const struct log_stats *st)
{
    if (s->announced_drop || s->lq.fmt.format != LOGFMT_SSE || st->first_seq <= 1 ||
        s->lq.q.after + 1 >= st->first_seq)
        return;
    buf_printf(&s->out, "event: dropped\ndata: {\"first_seq\":%lld,\"dropped_lines\":%lld}\n\n",
               (long long)st->first_seq, (long long)st->dropped_lines);
    s->announced_drop = true;
}

/* Following one attempt: it is over once the job moved on to a later one (the controller
 * starts the next attempt only after the last one's ranks ended and their lines were stored). */
static bool attempt_over(struct logstream *s)
{
    if (!s->lq.q.by_attempt)
        return false;
    struct job *j = store_job_get_pk(s->api->store, s->pk, NULL);
    bool over = !j || j->attempt > s->lq.q.attempt;
    job_free(j);
    return over;
}

/* Refills s->out; returns -1 on error, 0 when nothing is available yet. */
static int produce(struct logstream *s)
{
    struct log_stats st;
    if (store_log_stats(s->api->store, s->pk, &st, NULL) < 0) {
        finish_stream(s); /* the job was deleted */
        return 0;
    }
    announce_drop(s, &st);
    int n = refill(s);
    if (n < 0)
        return -1;
    if (n > 0 || s->out.len > s->out_off)
        return 0;
    /* Nothing new: the end when the log is complete, or the attempt followed is over (or we
     * are not following). */
    if (st.complete || !s->follow || attempt_over(s)) {
        if (refill(s) == 0) /* lines committed just before completion */
            finish_stream(s);
        return 0;
    }
    int64_t now = clock_mono_ns();
    if (s->lq.fmt.format == LOGFMT_SSE && now - s->last_write > KEEPALIVE_NS)
        buf_puts(&s->out, ": keep-alive\n\n");
    return 0;
}

static ssize_t logstream_read(struct stream *base, char *buf, size_t max)
{
    struct logstream *s = (struct logstream *)base;
    if (s->out_off >= s->out.len) {
        buf_reset(&s->out);
        s->out_off = 0;
        if (s->ended)
            return STREAM_END;
        if (produce(s) < 0)
            return STREAM_ERROR;
    }
    size_t n = s->out.len - s->out_off;
    if (n == 0)
        return s->ended ? STREAM_END : 0;
    if (n > max)
        n = max;
    memcpy(buf, s->out.data + s->out_off, n);
    s->out_off += n;
    s->last_write = clock_mono_ns();
    return (ssize_t)n;
}

/* Followers per client address, to bound what one client can hold open. */
static pthread_mutex_t followers_lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
    char addr[64];
    int count;
} followers[256];

static bool follower_take(const char *addr, int max)
{
    bool ok = false;
    pthread_mutex_lock(&followers_lock);
    int free_slot = -1;
    for (int i = 0; i < 256; i++) {
        if (followers[i].count && strcmp(followers[i].addr, addr) == 0) {
            ok = followers[i].count < max;
            followers[i].count += ok;
            free_slot = -2;
            break;
        }
        if (!followers[i].count && free_slot == -1)
            free_slot = i;
    }
    if (free_slot >= 0) {
        snprintf(followers[free_slot].addr, sizeof(followers[free_slot].addr), "%s", addr);
        followers[free_slot].count = 1;
        ok = true;
    }
    pthread_mutex_unlock(&followers_lock);
    return ok;
}

static void follower_release(const char *addr)
{
    pthread_mutex_lock(&followers_lock);
    for (int i = 0; i < 256; i++)
        if (followers[i].count && strcmp(followers[i].addr, addr) == 0) {
            followers[i].count--;
            break;
        }
    pthread_mutex_unlock(&followers_lock);
}

static void logstream_free(struct stream *base)
{
    struct logstream *s = (struct logstream *)base;
    if (s->follow) {
        wakeups_remove(s->api->wakeups, &s->waiter);
        follower_release(s->client);
    }
    logquery_release(&s->lq);
    buf_release(&s->out);
    free(s);
}

static void start_stream(struct request *req, struct response *res, struct logquery *lq,
                         const struct job *j, bool follow)
{
    const char *client = req->client_addr ? req->client_addr : "";
    if (follow && !follower_take(client, req->api->limits.max_followers_per_client)) {
        logquery_release(lq);
        problem(req, res, ERR_RATE_LIMITED, "this client already follows %d logs",
                req->api->limits.max_followers_per_client);
        return;
    }
    struct logstream *s = XNEW(struct logstream);
    s->base.read = logstream_read;
    s->base.free = logstream_free;
    s->api = req->api;
    s->pk = j->pk;
    s->lq = *lq; /* takes ownership */
    s->follow = follow;
    s->last_write = clock_mono_ns();
    snprintf(s->client, sizeof(s->client), "%s", client);
    s->waiter = (struct wakeup){ .key = j->pk, .fn = logstream_woken, .ctx = s };
    if (follow)
        wakeups_add(req->api->wakeups, &s->waiter);
    res->status = 200;
    res->stream = &s->base;
    res->content_type = s->lq.fmt.format == LOGFMT_SSE    ? "text/event-stream"
                        : s->lq.fmt.format == LOGFMT_TEXT ? "text/plain; charset=utf-8"
                                                          : "application/x-ndjson";
    response_header(res, "Cache-Control", "no-cache");
    response_header(res, "X-Accel-Buffering", "no");
    response_header(res, "X-Content-Type-Options", "nosniff");
}

static int first_seq_of(void *ctx, const struct log_line *l)
{
    int64_t *first = ctx;
    if (!*first)
        *first = l->seq;
    return 0;
}

/* follow with tail=N: start from the first of the last N lines, then keep going. */
static void start_at_tail(struct api *api, int64_t pk, struct logquery *lq)
{
    int64_t first = 0;
    store_logs_read(api->store, pk, &lq->q, first_seq_of, &first, NULL, NULL);
    if (first)
        lq->q.after = first - 1;
    else if (lq->q.tail) {
        struct log_stats st;
        if (store_log_stats(api->store, pk, &st, NULL) == 0)
            lq->q.after = st.next_seq - 1;
    }
    lq->q.tail = 0;
}

void jobs_logs(struct request *req, struct response *res)
{
    struct job *j = job_from_path(req, res);
    if (!j)
        return;
    struct logquery lq;
    if (logquery_parse(req, res, j, LOGQ_READ, &lq) == 0) {
        if (lq.follow) {
            if (lq.q.tail)
                start_at_tail(req->api, j->pk, &lq);
            start_stream(req, res, &lq, j, true);
        } else {
            read_page(req, res, &lq, j);
            logquery_release(&lq);
        }
    }
    job_free(j);
}

void jobs_logs_download(struct request *req, struct response *res)
{
    struct job *j = job_from_path(req, res);
    if (!j)
        return;
    struct logquery lq;
    if (logquery_parse(req, res, j, LOGQ_DOWNLOAD, &lq) == 0) {
        start_stream(req, res, &lq, j, false);
        char disposition[160];
        snprintf(disposition, sizeof(disposition), "attachment; filename=\"%s-%s.log\"", j->name,
                 j->id);
        response_header(res, "Content-Disposition", disposition);
    }
    job_free(j);
}
