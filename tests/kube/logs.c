/*
 * logs: reads struct podlog under the world lock. A non-follow read is rendered in memory; a
 * follow read becomes a stream that waits on the world's condition variable for new lines.
 * Ownership: struct follower belongs to the reply stream (follower_free()).
 */
#include "tests/kube/logs.h"

#include "core/clock.h"
#include "core/jsonx.h"
#include "core/parse.h"
#include "core/xalloc.h"
#include "tests/kube/podlog.h"
#include "tests/kube/status.h"
#include "tests/kube/store.h"
#include "tests/kube/world.h"

struct log_opts {
    char container[254];
    bool follow, previous, timestamps;
    int64_t since_ns; /* 0 = from the start */
    int64_t tail;     /* -1 = all */
    int64_t limit;    /* -1 = no limit */
};

struct follower {
    struct world *w;
    char uid[64];
    struct log_opts o;
    int64_t seq;     /* the instance followed */
    size_t next;     /* index of the next line to send */
    int64_t written; /* bytes, for limitBytes */
    struct buf out;
    size_t sent;
    bool ending;
};

static bool qflag(struct request *req, const char *key)
{
    const char *v = request_query(req, key);
    return v && (!strcmp(v, "true") || !strcmp(v, "1"));
}

static int parse_opts(struct request *req, const char *container, struct log_opts *o,
                      struct err *err)
{
    memset(o, 0, sizeof(*o));
    o->tail = o->limit = -1;
    const char *c = container ? container : request_query(req, "container");
    snprintf(o->container, sizeof(o->container), "%s", c ? c : "");
    o->follow = qflag(req, "follow");
    o->previous = qflag(req, "previous");
    o->timestamps = qflag(req, "timestamps");
    const char *ss = request_query(req, "sinceSeconds"), *st = request_query(req, "sinceTime");
    const char *tl = request_query(req, "tailLines"), *lb = request_query(req, "limitBytes");
    int64_t secs;
    if (ss && st)
        return status_set(err, ERR_VALIDATION, "Invalid",
                          "PodLogOptions \"\" is invalid: sinceSeconds: Forbidden: at most one of "
                          "sinceTime or sinceSeconds may be specified");
    if (ss && (parse_int64(ss, 1, INT32_MAX, &secs) < 0))
        return status_set(err, ERR_INVALID, "BadRequest", "invalid sinceSeconds: %s", ss);
    if (ss)
        o->since_ns = clock_now_ns() - secs * NS_PER_SEC;
    if (st && clock_parse(st, &o->since_ns) < 0)
        return status_set(err, ERR_INVALID, "BadRequest", "invalid sinceTime: %s", st);
    /* sinceTime is a metav1.Time, which the API server re-encodes in whole seconds when it
     * forwards the request to the kubelet: a client resuming from a line's nanosecond timestamp
     * gets the earlier lines of that second again and must drop the duplicates itself. */
    if (st)
        o->since_ns -= o->since_ns % NS_PER_SEC;
    if (tl && parse_int64(tl, 0, INT64_MAX, &o->tail) < 0)
        return status_set(err, ERR_INVALID, "BadRequest", "invalid tailLines: %s", tl);
    if (lb && parse_int64(lb, 1, INT64_MAX, &o->limit) < 0)
        return status_set(err, ERR_INVALID, "BadRequest", "invalid limitBytes: %s", lb);
    return 0;
}

static int64_t restarts(const json_t *cs)
{
    return jsonx_int(cs, "restartCount", 0);
}

/* Picks the container and checks it can be read, in the kubelet's words. */
static int check_container(const json_t *pod, struct log_opts *o, struct err *err)
{
    const char *pname = kstr(json_object_get(pod, "metadata"), "name");
    json_t *ctrs = kpath(pod, "spec.containers");
    if (!o->container[0] && json_array_size(ctrs) == 1)
        snprintf(o->container, sizeof(o->container), "%s", kstr(json_array_get(ctrs, 0), "name"));
    if (!o->container[0])
        return status_set(err, ERR_INVALID, "BadRequest",
                          "a container name must be specified for pod %s", pname);
    json_t *cs = NULL, *c;
    size_t i;
    json_array_foreach (kpath(pod, "status.containerStatuses"), i, c)
        if (!strcmp(kstr(c, "name"), o->container))
            cs = c;
    bool known = false;
    json_array_foreach (ctrs, i, c)
        known |= !strcmp(kstr(c, "name"), o->container);
    if (!known)
        return status_set(err, ERR_INVALID, "BadRequest", "container %s is not valid for pod %s",
                          o->container, pname);
    if (o->previous && restarts(cs) == 0)
        return status_set(err, ERR_INVALID, "BadRequest",
                          "previous terminated container \"%s\" in pod \"%s\" not found",
                          o->container, pname);
    const char *waiting = json_string_value(kpath(cs, "state.waiting.reason"));
    if (!o->previous && (!cs || (waiting && !restarts(cs)))) {
        const char *why = !waiting                           ? "ContainerCreating"
                          : !strcmp(waiting, "ErrImagePull") ? "image can't be pulled"
                          : !strcmp(waiting, "ImagePullBackOff")
                              ? "trying and failing to pull image"
                              : waiting;
        return status_set(err, ERR_INVALID, "BadRequest",
                          "container \"%s\" in pod \"%s\" is waiting to start: %s", o->container,
                          pname, why);
    }
    return 0;
}

/* Renders line i with the options; returns false when limitBytes is reached. */
static bool put_line(struct buf *out, const struct podlog_line *l, const struct log_opts *o,
                     int64_t *written)
{
    size_t before = out->len;
    if (o->timestamps) {
        char ts[48];
        buf_printf(out, "%s ", ktime_nano(l->ts, ts));
    }
    buf_printf(out, "%s\n", l->text);
    int64_t n = (int64_t)(out->len - before);
    if (o->limit >= 0 && *written + n >= o->limit) { /* cut inside the line, as the kubelet does */
        out->len = before + (size_t)(o->limit - *written);
        out->data[out->len] = '\0';
        *written = o->limit;
        return false;
    }
    *written += n;
    return true;
}

/* The first index to send: after sinceTime, then the last tailLines of those. */
static size_t first_line(const struct podlog_instance *in, const struct log_opts *o)
{
    size_t i = 0;
    while (i < in->n && in->lines[i].ts < o->since_ns)
        i++;
    if (o->tail >= 0 && in->n - i > (size_t)o->tail)
        i = in->n - (size_t)o->tail;
    return i;
}

static const struct podlog_instance *followed(struct follower *f)
{
    const struct podlog *log = podlogs_get(f->w->logs, f->uid, f->o.container);
    if (!log)
        return NULL;
    if (log->cur.seq == f->seq)
        return &log->cur;
    return log->prev.seq == f->seq ? &log->prev : NULL;
}

static void pump(struct follower *f)
{
    for (;;) {
        const struct podlog_instance *in = followed(f);
        if (!in || f->w->stopping) {
            f->ending = true;
            return;
        }
        while (f->next < in->n && !f->ending)
            f->ending = !put_line(&f->out, &in->lines[f->next++], &f->o, &f->written);
        if (in->done && f->next >= in->n)
            f->ending = true;
        if (f->out.len || f->ending)
            return;
        world_wait(f->w, clock_mono_ns() + NS_PER_SEC);
    }
}

static ssize_t follow_read(void *ctx, char *out, size_t max)
{
    struct follower *f = ctx;
    if (f->sent == f->out.len) {
        buf_reset(&f->out);
        f->sent = 0;
        if (f->ending)
            return -1;
        world_lock(f->w);
        pump(f);
        world_unlock(f->w);
        if (!f->out.len)
            return -1;
    }
    size_t n = f->out.len - f->sent < max ? f->out.len - f->sent : max;
    memcpy(out, f->out.data + f->sent, n);
    f->sent += n;
    return (ssize_t)n;
}

static void follower_free(void *ctx)
{
    struct follower *f = ctx;
    buf_release(&f->out);
    free(f);
}

void logs_handle(struct request *req, const struct target *t, struct reply *rep)
{
    logs_serve(req, t, NULL, rep);
}

void logs_serve(struct request *req, const struct target *t, const char *container,
                struct reply *rep)
{
    struct err err;
    err_init(&err);
    struct follower *f = XNEW(struct follower);
    f->w = req->w;
    if (parse_opts(req, container, &f->o, &err) < 0)
        goto fail;
    world_lock(req->w);
    json_t *pod = store_get(req->w->store, t->res, t->ns, t->name);
    const struct podlog *log = NULL;
    if (!pod)
        store_not_found(&err, t->res, t->name);
    else if (kstr(kpath(pod, "spec"), "nodeName")[0] && check_container(pod, &f->o, &err) == 0)
        log = podlogs_get(req->w->logs, kstr(json_object_get(pod, "metadata"), "uid"),
                          f->o.container);
    if (log) {
        const struct podlog_instance *in = f->o.previous ? &log->prev : &log->cur;
        snprintf(f->uid, sizeof(f->uid), "%s", kstr(json_object_get(pod, "metadata"), "uid"));
        f->seq = in->seq;
        f->next = first_line(in, &f->o);
        f->ending = !f->o.follow || in->done;
        while (f->next < in->n && put_line(&f->out, &in->lines[f->next], &f->o, &f->written))
            f->next++;
        if (f->o.limit >= 0 && f->written >= f->o.limit)
            f->ending = true;
    }
    world_unlock(req->w);
    if (err_is_set(&err))
        goto fail;
    rep->content_type = "text/plain";
    if (!log || f->ending) {
        reply_text(rep, 200, buf_cstr(&f->out), f->out.len);
        follower_free(f);
    } else {
        rep->stream = follow_read;
        rep->stream_free = follower_free;
        rep->stream_ctx = f;
    }
    err_release(&err);
    return;
fail:
    rest_error(rep, t, &err);
    follower_free(f);
    err_release(&err);
}
