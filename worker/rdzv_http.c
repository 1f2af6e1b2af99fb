/*
 * rdzv_http: the rendezvous over the daemon's API (contract in docs/worker.md):
 *   PUT  /v1/jobs/{id}/rendezvous/{key}                {"value": "..."}        -> 200/201
 *   GET  /v1/jobs/{id}/rendezvous/{key}?wait=S         -> 200 {"key","value"} | 404
 *   POST /v1/jobs/{id}/rendezvous/barriers/{name}      {"rank","world_size","timeout_seconds"}
 *                                                      -> 200 | 504 {"missing_ranks": [...]}
 * A daemon that cannot be reached is retried until the operation's own deadline (a restarting
 * daemon must not fail a job that is starting). One HTTP client (core/httpc), reused.
 */
#include "worker/rdzv_internal.h"

#include "core/clock.h"
#include "core/httpc.h"
#include "core/jsonx.h"
#include "core/xalloc.h"

struct rdzv_http {
    struct rdzv base;
    struct httpc *http;
    char *prefix; /* "/v1/jobs/{id}/rendezvous" */
};

#define SET_DEADLINE_MS 30000
#define SLACK_MS        10000 /* added to the server-side wait for the client timeout */
/* The largest answer: a 64 KiB value JSON-escaped, or a barrier's list of missing ranks. */
#define BODY_MAX (1u << 20)

/* Turns a problem+json body into a message. */
static void problem_detail(struct buf *out, long status, const struct buf *body)
{
    json_t *j = jsonx_loadb(body->data ? body->data : "", body->len, 8, NULL);
    const char *d = j ? jsonx_str(j, "detail") : NULL;
    if (!d && j)
        d = jsonx_str(j, "title");
    buf_printf(out, "HTTP %ld%s%s", status, d ? ": " : "", d ? d : "");
    json_decref(j);
}

/* Runs one request, retrying while the daemon is unreachable until deadline (mono ns). Not the
 * client's own retries: those are bounded by a time from the first attempt, these by the
 * operation's deadline, and a 500 here is an answer, not a reason to ask again. */
static int request(struct rdzv_http *h, const char *method, const char *path, const char *body,
                   long timeout_ms, int64_t deadline, struct httpc_response *resp, struct err *err)
{
    static const char *const headers[] = { "Content-Type: application/json",
                                           "Accept: application/json", NULL };
    struct httpc_request rq = { .method = method,
                                .url = path,
                                .headers = headers,
                                .body = body,
                                .body_len = body ? strlen(body) : 0,
                                .timeout_ms = timeout_ms };
    int64_t delay = 100;
    for (;;) {
        struct err e;
        err_init(&e);
        int rc = httpc_do(h->http, &rq, resp, &e);
        if (rc == 0 && resp->status != 502 && resp->status != 503) {
            err_release(&e);
            return 0;
        }
        if (clock_mono_ns() + delay * NS_PER_MS >= deadline) {
            if (rc == 0)
                err_set(&e, ERR_UNAVAILABLE, "%s %s: HTTP %ld", method, path, resp->status);
            err_move(err, &e);
            return -1;
        }
        err_release(&e);
        clock_sleep_ms(delay);
        delay = delay < 2000 ? delay * 2 : delay;
    }
}

static int http_set(struct rdzv *r, const char *key, const char *value, struct err *err)
{
    struct rdzv_http *h = (struct rdzv_http *)r;
    struct buf path = BUF_INIT, msg = BUF_INIT;
    struct httpc_response resp;
    httpc_response_init(&resp);
    json_t *body = json_pack("{s:s}", "value", value);
    char *text = jsonx_dumps(body);
    buf_printf(&path, "%s/", h->prefix);
    httpc_escape(&path, key);
    int ret = request(h, "PUT", buf_cstr(&path), text, 10000,
                      clock_mono_ns() + SET_DEADLINE_MS * NS_PER_MS, &resp, err);
    if (ret == 0 && resp.status != 200 && resp.status != 201) {
        problem_detail(&msg, resp.status, &resp.body);
        ret = err_set(err, ERR_UPSTREAM, "rendezvous set '%s': %s", key, buf_cstr(&msg));
    }
    json_decref(body);
    free(text);
    buf_release(&path);
    httpc_response_release(&resp);
    buf_release(&msg);
    return ret;
}

static char *http_get(struct rdzv *r, const char *key, int wait_ms, struct err *err)
{
    struct rdzv_http *h = (struct rdzv_http *)r;
    struct buf path = BUF_INIT, msg = BUF_INIT;
    struct httpc_response resp;
    httpc_response_init(&resp);
    char *value = NULL;
    int wait_s = (wait_ms + 999) / 1000;
    buf_printf(&path, "%s/", h->prefix);
    httpc_escape(&path, key);
    buf_printf(&path, "?wait=%d", wait_s);
    int64_t deadline = clock_mono_ns() + (int64_t)wait_ms * NS_PER_MS;
    if (request(h, "GET", buf_cstr(&path), NULL, wait_s * 1000L + SLACK_MS, deadline, &resp, err) <
        0)
        goto out;
    long status = resp.status;
    if (status == 404) {
        err_set(err, ERR_TIMEOUT, "rendezvous key '%s' not set after %d ms", key, wait_ms);
        goto out;
    }
    json_t *j = status == 200 ? jsonx_loadb(buf_cstr(&resp.body), resp.body.len, 8, NULL) : NULL;
    const char *v = j ? jsonx_str(j, "value") : NULL;
    if (v) {
        value = xstrdup(v);
    } else {
        problem_detail(&msg, status, &resp.body);
        err_set(err, ERR_UPSTREAM, "rendezvous get '%s': %s", key,
                status == 200 ? "answer has no string \"value\"" : buf_cstr(&msg));
    }
    json_decref(j);
out:
    buf_release(&path);
    httpc_response_release(&resp);
    buf_release(&msg);
    return value;
}

/* The 504 answer names the missing ranks; copies them into the message. */
static int barrier_timeout(const char *name, int world, int timeout_ms, const struct buf *resp,
                           struct err *err)
{
    json_t *j = jsonx_loadb(resp->data ? resp->data : "", resp->len, 8, NULL);
    json_t *missing = j ? json_object_get(j, "missing_ranks") : NULL;
    unsigned char *arrived = xcalloc((size_t)world, 1);
    memset(arrived, 1, (size_t)world);
    size_t i;
    json_t *v;
    json_array_foreach(missing, i, v)
    {
        json_int_t m = json_integer_value(v);
        if (json_is_integer(v) && m >= 0 && m < world)
            arrived[m] = 0;
    }
    struct buf m = BUF_INIT;
    rdzv_format_missing(&m, arrived, world);
    err_set(err, ERR_TIMEOUT, "barrier '%s' timed out after %d ms: missing ranks %s", name,
            timeout_ms, buf_cstr(&m));
    buf_release(&m);
    free(arrived);
    json_decref(j);
    return -1;
}

static int http_barrier(struct rdzv *r, const char *name, int rank, int world, int timeout_ms,
                        struct err *err)
{
    struct rdzv_http *h = (struct rdzv_http *)r;
    struct buf path = BUF_INIT, msg = BUF_INIT;
    struct httpc_response resp;
    httpc_response_init(&resp);
    int timeout_s = (timeout_ms + 999) / 1000;
    json_t *body =
        json_pack("{s:i,s:i,s:i}", "rank", rank, "world_size", world, "timeout_seconds", timeout_s);
    char *text = jsonx_dumps(body);
    buf_printf(&path, "%s/barriers/", h->prefix);
    httpc_escape(&path, name);
    int64_t deadline = clock_mono_ns() + (int64_t)timeout_ms * NS_PER_MS;
    int ret = request(h, "POST", buf_cstr(&path), text, timeout_s * 1000L + SLACK_MS, deadline,
                      &resp, err);
    if (ret == 0 && resp.status == 504) {
        ret = barrier_timeout(name, world, timeout_ms, &resp.body, err);
    } else if (ret == 0 && resp.status != 200) {
        problem_detail(&msg, resp.status, &resp.body);
        ret = err_set(err, ERR_UPSTREAM, "barrier '%s': %s", name, buf_cstr(&msg));
    }
    json_decref(body);
    free(text);
    buf_release(&path);
    httpc_response_release(&resp);
    buf_release(&msg);
    return ret;
}

static void http_close(struct rdzv *r)
{
    struct rdzv_http *h = (struct rdzv_http *)r;
    httpc_free(h->http);
    free(h->prefix);
    free(h);
}

static const struct rdzv_ops http_ops = { http_set, http_get, http_barrier, http_close };

struct rdzv *rdzv_http_open(const char *base_url, const char *token, const char *job_id,
                            struct err *err)
{
    struct rdzv_http *h = XNEW(struct rdzv_http);
    struct httpc_options o = { .base_url = base_url, .bearer = token, .max_body = BODY_MAX };
    h->http = httpc_new(&o, err);
    if (!h->http) {
        free(h);
        return NULL;
    }
    struct buf p = BUF_INIT;
    buf_puts(&p, "/v1/jobs/");
    httpc_escape(&p, job_id);
    buf_puts(&p, "/rendezvous");
    h->prefix = buf_detach(&p, NULL);
    h->base.ops = &http_ops;
    h->base.desc = xasprintf("http:%s", base_url);
    return &h->base;
}
