/*
 * logs: one follower per (pod, container); see logs.h. A follower makes one request at a time:
 * previous=true for an unread terminated instance, a follow of the running one, or a plain
 * read of a terminated one; what to do next is decided from the latest pod status whenever no
 * request is in flight (decide()).
 */
#include "server/kube/logs.h"

#include <stdatomic.h>

#include "core/buf.h"
#include "core/clock.h"
#include "core/jsonx.h"
#include "core/linesplit.h"
#include "core/xalloc.h"
#include "server/kube/watch.h"

#define BACKOFF_MIN  (250 * NS_PER_MS)
#define BACKOFF_MAX  (10 * NS_PER_SEC)
#define REFOLLOW_GAP (1 * NS_PER_SEC) /* between follows of a container still running */
#define REFOLLOW_MAX (8 * NS_PER_SEC) /* ... doubling while follows bring no new line */

enum fetch { F_NONE, F_PREVIOUS, F_FOLLOW, F_CURRENT };

struct kube_follow {
    struct kube_follow_options o;
    char key[48];
    struct kube_cstatus st;
    struct kube_call *call;
    enum fetch fetch;
    char fetching_id[128]; /* the instance the request reads */
    char read_prev[128];   /* last lastState instance read completely */
    char read_cur[128];    /* last terminated instance read completely */
    int64_t pos_ts;
    int pos_n, seen;
    struct linesplit split;
    struct buf partial;    /* bytes after the last newline of the stream */
    struct buf batch_text; /* lines of one chunk, for push() */
    struct logrec *batch;
    size_t nbatch, capbatch;
    int64_t line_ts;
    bool done;
    bool starved; /* running, but every stream is taken */
    int64_t next_try, backoff, last_follow_end, wake_at;
    int64_t refollow_gap; /* the wait before the next follow of a running container */
    int took;             /* new lines the request in flight brought */
};

static atomic_ullong total_lines, total_dups, total_requests, total_prev, total_push_ns;
/* Follow streams open at once (loop thread only). Past the limit a running container waits for
 * a free stream; its lines are not lost, only read later (or in one read once it ends). */
static int follows_open, follows_max = 1000;

void kube_follow_set_limit(int max_streams)
{
    follows_max = max_streams > 0 ? max_streams : 1000;
}

void kube_log_stats(struct kube_log_stats *out)
{
    out->lines = atomic_load(&total_lines);
    out->duplicates = atomic_load(&total_dups);
    out->requests = atomic_load(&total_requests);
    out->previous_fetches = atomic_load(&total_prev);
    out->push_ns = atomic_load(&total_push_ns);
}

bool kube_log_take(int64_t ts, int64_t *pos_ts, int *pos_n, int *seen)
{
    if (ts < *pos_ts)
        return false;
    if (ts == *pos_ts) {
        if (++*seen <= *pos_n)
            return false;
        *pos_n = *seen;
        return true;
    }
    *pos_ts = ts;
    *pos_n = *seen = 1;
    return true;
}

long kube_log_parse_ts(const char *line, size_t len, int64_t *ts)
{
    const char *sp = memchr(line, ' ', len < 64 ? len : 64);
    if (!sp)
        return -1;
    char text[64];
    snprintf(text, sizeof(text), "%.*s", (int)(sp - line), line);
    if (clock_parse(text, ts) < 0)
        return -1;
    return (long)(sp - line) + 1;
}

static const char *id_of(const json_t *state)
{
    const char *id = jsonx_str(state, "containerID");
    if (!id || !*id)
        id = jsonx_str(state, "finishedAt");
    if (!id || !*id)
        id = jsonx_str(state, "startedAt");
    return id ? id : "";
}

void kube_cstatus_from_pod(const json_t *pod, const char *name, struct kube_cstatus *out)
{
    memset(out, 0, sizeof(*out));
    const json_t *status = json_object_get(pod, "status");
    const char *phase = jsonx_str(status, "phase");
    out->final = phase && (!strcmp(phase, "Succeeded") || !strcmp(phase, "Failed"));
    size_t i;
    json_t *cs;
    json_array_foreach(json_object_get(status, "containerStatuses"), i, cs)
    {
        if (!jsonx_str(cs, "name") || strcmp(jsonx_str(cs, "name"), name) != 0)
            continue;
        const json_t *state = json_object_get(cs, "state");
        json_t *run = json_object_get(state, "running"),
               *term = json_object_get(state, "terminated");
        out->known = true;
        out->running = run != NULL;
        out->terminated = term != NULL;
        out->waiting = json_object_get(state, "waiting") != NULL;
        const char *cid = jsonx_str(cs, "containerID");
        snprintf(out->cur_id, sizeof(out->cur_id), "%s",
                 term          ? id_of(term)
                 : cid && *cid ? cid
                               : id_of(run));
        const json_t *last = json_object_get(json_object_get(cs, "lastState"), "terminated");
        if (last)
            snprintf(out->last_id, sizeof(out->last_id), "%s", id_of(last));
    }
}

static void emit(void *ctx, const char *line, size_t len, int flags)
{
    struct kube_follow *f = ctx;
    if (f->nbatch == f->capbatch) {
        f->capbatch = f->capbatch ? f->capbatch * 2 : 64;
        f->batch = xrealloc(f->batch, f->capbatch * sizeof(*f->batch));
    }
    f->batch[f->nbatch++] = (struct logrec){ .time = f->line_ts,
                                             .stream = STREAM_STDOUT,
                                             .flags = flags,
                                             .text = (const char *)(uintptr_t)f->batch_text.len,
                                             .len = len };
    buf_append(&f->batch_text, line, len);
}

/* One line of the API's output (without its newline). */
static void take_line(struct kube_follow *f, const char *line, size_t len)
{
    int64_t ts;
    long off = kube_log_parse_ts(line, len, &ts);
    if (off < 0)
        return; /* not a timestamped line: a cut by limitBytes, never sent by us */
    if (!kube_log_take(ts, &f->pos_ts, &f->pos_n, &f->seen)) {
        atomic_fetch_add(&total_dups, 1);
        return;
    }
    f->line_ts = ts;
    f->took++;
    linesplit_feed(&f->split, line + off, len - (size_t)off, ts, emit, f);
    linesplit_feed(&f->split, "\n", 1, ts, emit, f);
}

static void push_batch(struct kube_follow *f)
{
    if (!f->nbatch)
        return;
    for (size_t i = 0; i < f->nbatch; i++)
        f->batch[i].text = buf_cstr(&f->batch_text) + (uintptr_t)f->batch[i].text;
    char pos[48];
    snprintf(pos, sizeof(pos), "%lld %d", (long long)f->pos_ts, f->pos_n);
    struct log_origin origin = { .rank = f->o.rank, .attempt = f->o.attempt, .pod = f->o.pod };
    int64_t t0 = clock_mono_ns();
    f->o.sources.push(f->o.sources.ctx, f->o.job_pk, f->key, &origin, f->batch, f->nbatch, pos);
    atomic_fetch_add(&total_push_ns, (unsigned long long)(clock_mono_ns() - t0));
    atomic_fetch_add(&total_lines, f->nbatch);
    f->nbatch = 0;
    buf_reset(&f->batch_text);
}

static void on_data(void *ctx, const char *data, size_t len)
{
    struct kube_follow *f = ctx;
    buf_append(&f->partial, data, len);
    size_t start = 0;
    for (size_t i = 0; i < f->partial.len; i++) {
        if (f->partial.data[i] == '\n') {
            take_line(f, f->partial.data + start, i - start);
            start = i + 1;
        }
    }
    buf_consume(&f->partial, start);
    push_batch(f);
}

static void decide(struct kube_follow *f);

static void retry_later(struct kube_follow *f, int64_t delay)
{
    f->next_try = clock_mono_ns() + delay;
}

/* A follow ended cleanly while the pod may still say running: most often the container has
 * just ended and its status is on its way, late when the API server is busy (1-5 s with 8,000
 * pods starting). Following again at once would read nothing new, so a follow that brought no
 * new line doubles the wait before the next (1 s up to REFOLLOW_MAX); the status, when it
 * comes, is acted on at once. A stream cut while lines flow is followed again after 1 s. */
static void follow_ended(struct kube_follow *f)
{
    f->last_follow_end = clock_mono_ns();
    if (f->took || !f->refollow_gap)
        f->refollow_gap = REFOLLOW_GAP;
    else if ((f->refollow_gap *= 2) > REFOLLOW_MAX)
        f->refollow_gap = REFOLLOW_MAX;
}

static void on_done(void *ctx, long status, const struct buf *body, struct err *err)
{
    struct kube_follow *f = ctx;
    enum fetch was = f->fetch;
    f->call = NULL;
    f->fetch = F_NONE;
    if (was == F_FOLLOW)
        follows_open--;
    if (!err_is_set(err)) {
        if (body && body->len)
            on_data(f, body->data, body->len);
        /* A read that ended cleanly: its last line may lack a newline. */
        if (was != F_FOLLOW && f->partial.len) {
            take_line(f, f->partial.data, f->partial.len);
            push_batch(f);
        }
        buf_reset(&f->partial);
        f->backoff = 0;
        if (was == F_PREVIOUS)
            snprintf(f->read_prev, sizeof(f->read_prev), "%s", f->fetching_id);
        else if (was == F_CURRENT)
            snprintf(f->read_cur, sizeof(f->read_cur), "%s", f->fetching_id);
        else
            follow_ended(f);
        decide(f);
        return;
    }
    buf_reset(&f->partial);
    if (status == 404) { /* the pod is gone, and its logs with it */
        f->done = true;
        return;
    }
    if (status == 400 && was == F_PREVIOUS && strstr(err->msg, "not found")) {
        snprintf(f->read_prev, sizeof(f->read_prev), "%s", f->fetching_id);
        decide(f);
        return;
    }
    f->backoff = f->backoff ? f->backoff * 2 : BACKOFF_MIN;
    if (f->backoff > BACKOFF_MAX)
        f->backoff = BACKOFF_MAX;
    retry_later(f, f->backoff);
    (void)status;
}

static void request(struct kube_follow *f, enum fetch what, const char *id)
{
    struct buf q = BUF_INIT;
    buf_printf(&q, "/api/v1/namespaces/%s/pods/%s/log?container=", f->o.ns, f->o.pod);
    kube_query_escape(&q, f->o.container);
    buf_puts(&q, "&timestamps=true");
    if (what == F_FOLLOW)
        buf_puts(&q, "&follow=true");
    if (what == F_PREVIOUS)
        buf_puts(&q, "&previous=true");
    if (f->pos_ts > 0) { /* whole seconds, as the API server passes it on to the kubelet */
        char ts[CLOCK_RFC3339_MAX];
        clock_format(f->pos_ts / NS_PER_SEC * NS_PER_SEC, ts);
        char *dot = strchr(ts, '.');
        if (dot)
            snprintf(dot, 2, "Z");
        buf_puts(&q, "&sinceTime=");
        kube_query_escape(&q, ts);
    }
    f->seen = 0;
    f->took = 0;
    f->fetch = what;
    snprintf(f->fetching_id, sizeof(f->fetching_id), "%s", id);
    struct kube_request r = { .method = "GET",
                              .path = buf_cstr(&q),
                              .timeout_ms = what == F_FOLLOW ? -1 : 120000 };
    atomic_fetch_add(&total_requests, 1);
    if (what == F_PREVIOUS)
        atomic_fetch_add(&total_prev, 1);
    if (what == F_FOLLOW)
        follows_open++;
    f->call = kube_call_start(f->o.client, &r, what == F_FOLLOW ? on_data : NULL, on_done, f);
    buf_release(&q);
}

/* The next request, from the latest status; see the file comment. */
static void decide(struct kube_follow *f)
{
    const struct kube_cstatus *s = &f->st;
    if (f->call || f->done)
        return;
    if (s->gone) {
        f->done = true;
        return;
    }
    if (!s->known || clock_mono_ns() < f->next_try)
        return;
    bool last_unread = s->last_id[0] && strcmp(s->last_id, f->read_prev) != 0 &&
                       strcmp(s->last_id, f->read_cur) != 0;
    if (s->running) {
        /* A follow that ended while the pod still says running: the container has most likely
         * just ended (its status follows soon), or the stream was cut; wait a moment. */
        int64_t again = f->last_follow_end + f->refollow_gap;
        if (last_unread)
            request(f, F_PREVIOUS, s->last_id);
        else if (f->last_follow_end && clock_mono_ns() < again)
            f->wake_at = again;
        else if ((f->starved = follows_open >= follows_max))
            f->wake_at = clock_mono_ns() + REFOLLOW_GAP; /* every stream is taken: wait */
        else
            request(f, F_FOLLOW, s->cur_id);
    } else if (s->terminated) {
        if (last_unread)
            request(f, F_PREVIOUS, s->last_id);
        else if (strcmp(s->cur_id, f->read_cur) != 0)
            request(f, F_CURRENT, s->cur_id);
        else if (s->final)
            f->done = true;
    } else if (s->waiting && last_unread) {
        /* between restarts the current log is the last terminated run's */
        request(f, F_CURRENT, s->last_id);
    } else if (s->final) {
        f->done = true;
    }
}

struct kube_follow *kube_follow_new(const struct kube_follow_options *o)
{
    struct kube_follow *f = XNEW(struct kube_follow);
    f->o = *o;
    f->o.ns = xstrdup(o->ns);
    f->o.pod = xstrdup(o->pod);
    f->o.uid = xstrdup(o->uid);
    f->o.container = xstrdup(o->container);
    snprintf(f->key, sizeof(f->key), "k/%s", o->uid);
    linesplit_init(&f->split, o->max_line);
    struct log_origin origin = { .rank = o->rank, .attempt = o->attempt, .pod = o->pod };
    if (o->sources.add_file)
        o->sources.add_file(o->sources.ctx, o->job_pk, f->key, NULL, &origin);
    char *pos = o->sources.position ? o->sources.position(o->sources.ctx, o->job_pk, f->key) : NULL;
    long long ts = 0;
    int n = 0;
    if (pos && sscanf(pos, "%lld %d", &ts, &n) == 2 && ts > 0 && n > 0) {
        f->pos_ts = ts;
        f->pos_n = n;
    }
    free(pos);
    return f;
}

void kube_follow_free(struct kube_follow *f, bool force)
{
    if (!f)
        return;
    if (f->call && f->fetch == F_FOLLOW)
        follows_open--;
    kube_call_cancel(f->o.client, f->call);
    if ((f->done || force) && f->o.sources.file_done)
        f->o.sources.file_done(f->o.sources.ctx, f->o.job_pk, f->key);
    linesplit_release(&f->split);
    buf_release(&f->partial);
    buf_release(&f->batch_text);
    free(f->batch);
    free((char *)f->o.ns);
    free((char *)f->o.pod);
    free((char *)f->o.uid);
    free((char *)f->o.container);
    free(f);
}

void kube_follow_update(struct kube_follow *f, const struct kube_cstatus *st)
{
    bool gone = f->st.gone || st->gone;
    f->st = *st;
    f->st.gone = gone;
    decide(f);
}

void kube_follow_tick(struct kube_follow *f, int64_t now_mono)
{
    if (f->call || f->done)
        return;
    if ((f->next_try && now_mono >= f->next_try) || (f->wake_at && now_mono >= f->wake_at)) {
        f->next_try = f->wake_at = 0;
        decide(f);
    }
}

bool kube_follow_done(const struct kube_follow *f)
{
    return f->done;
}

int kube_follow_waiting(const struct kube_follow *f)
{
    return !f->call && !f->done && f->starved && f->st.running;
}

bool kube_follow_streaming(const struct kube_follow *f)
{
    return f->call && f->fetch == F_FOLLOW;
}
