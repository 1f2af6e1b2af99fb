/*
 * reporter: a ring buffer of metrics behind a mutex, drained in batches by reporter_flush(),
 * which runs on the caller's thread or on the reporter's own thread (reporter_start). HTTP
 * happens without the lock held, so reporter_add() never waits for the network.
 */
#include "worker/reporter.h"

#include <math.h>
#include <pthread.h>
#include <time.h>

#include "core/clock.h"
#include "core/httpc.h"
#include "core/jsonx.h"
#include "core/xalloc.h"
#include "worker/metrics.h"

#define BATCH_MAX       1000
#define HTTP_TIMEOUT_MS 5000

struct item {
    char name[METRIC_NAME_MAX];
    int64_t step;
    double value;
    int64_t time_ns;
};

struct reporter {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    struct item *ring;
    size_t cap, head, count; /* oldest at head */
    uint64_t dropped;        /* since the last delivered heartbeat */
    int64_t step;
    int exit_code, exit_signal, has_exit;
    struct reporter_stats st;
    int enabled;
    struct httpc *http;
    char *hb_path, *pf_path;
    pthread_t thread;
    int running, stopping, interval_ms;
};

struct reporter *reporter_new(const char *base_url, const char *token, const char *job_id, int rank,
                              size_t capacity, struct err *err)
{
    struct reporter *r = XNEW(struct reporter);
    pthread_mutex_init(&r->mu, NULL);
    pthread_cond_init(&r->cv, NULL);
    r->cap = capacity ? capacity : 1;
    r->ring = xcalloc(r->cap, sizeof(*r->ring));
    r->step = -1;
    if (base_url) {
        if (!job_id || !*job_id) {
            err_set(err, ERR_INVALID, "reporting to %s needs TRAINYARD_JOB_ID", base_url);
            reporter_free(r);
            return NULL;
        }
        struct httpc_options o = { .base_url = base_url, .bearer = token };
        r->http = httpc_new(&o, err);
        if (!r->http) {
            reporter_free(r);
            return NULL;
        }
        struct buf p = BUF_INIT;
        buf_puts(&p, "/v1/jobs/");
        httpc_escape(&p, job_id);
        buf_printf(&p, "/ranks/%d/", rank);
        r->hb_path = xasprintf("%sheartbeat", buf_cstr(&p));
        r->pf_path = xasprintf("%spreflight", buf_cstr(&p));
        buf_release(&p);
        r->enabled = 1;
    }
    return r;
}

void reporter_free(struct reporter *r)
{
    if (!r)
        return;
    reporter_stop(r);
    httpc_free(r->http);
    pthread_mutex_destroy(&r->mu);
    pthread_cond_destroy(&r->cv);
    free(r->ring);
    free(r->hb_path);
    free(r->pf_path);
    free(r);
}

void reporter_add(struct reporter *r, const char *name, int64_t step, double value, int64_t time_ns)
{
    pthread_mutex_lock(&r->mu);
    if (r->count == r->cap) { /* full: the oldest goes */
        r->head = (r->head + 1) % r->cap;
        r->count--;
        r->dropped++;
        r->st.dropped_total++;
    }
    struct item *it = &r->ring[(r->head + r->count) % r->cap];
    snprintf(it->name, sizeof(it->name), "%s", name);
    it->step = step;
    it->value = value;
    it->time_ns = time_ns;
    r->count++;
    if (step > r->step)
        r->step = step;
    pthread_mutex_unlock(&r->mu);
}

void reporter_set_step(struct reporter *r, int64_t step)
{
    pthread_mutex_lock(&r->mu);
    r->step = step;
    pthread_mutex_unlock(&r->mu);
}

void reporter_set_exit(struct reporter *r, int exit_code, int signo)
{
    pthread_mutex_lock(&r->mu);
    r->has_exit = 1;
    r->exit_code = exit_code;
    r->exit_signal = signo;
    pthread_mutex_unlock(&r->mu);
}

/* Builds a heartbeat from the oldest n queued metrics (under the lock). */
static char *heartbeat_body(struct reporter *r, size_t n, uint64_t dropped)
{
    json_t *hb = json_object(), *arr = json_array();
    char t[CLOCK_RFC3339_MAX];
    json_object_set_new(hb, "time", json_string(clock_format(clock_now_ns(), t)));
    json_object_set_new(hb, "step", json_integer(r->step < 0 ? 0 : r->step));
    for (size_t i = 0; i < n; i++) {
        const struct item *it = &r->ring[(r->head + i) % r->cap];
        json_t *m =
            json_pack("{s:s,s:I,s:f,s:s}", "name", it->name, "step", (json_int_t)it->step, "value",
                      isfinite(it->value) ? it->value : 0.0, "time", clock_format(it->time_ns, t));
        if (!isfinite(it->value)) /* JSON has no NaN: send null */
            json_object_set_new(m, "value", json_null());
        json_array_append_new(arr, m);
    }
    json_object_set_new(hb, "metrics", arr);
    json_object_set_new(hb, "dropped", json_integer((json_int_t)dropped));
    if (r->has_exit)
        json_object_set_new(hb, r->exit_signal ? "signal" : "exit_code",
                            json_integer(r->exit_signal ? r->exit_signal : r->exit_code));
    char *s = jsonx_dumps(hb);
    json_decref(hb);
    return s;
}

static int post(struct reporter *r, const char *path, const char *body, long timeout_ms,
                struct err *err)
{
    static const char *const headers[] = { "Content-Type: application/json",
                                           "Accept: application/json", NULL };
    struct httpc_request rq = { .method = "POST",
                                .url = path,
                                .headers = headers,
                                .body = body,
                                .body_len = strlen(body),
                                .timeout_ms = timeout_ms };
    struct httpc_response resp;
    httpc_response_init(&resp);
    int ret = httpc_do(r->http, &rq, &resp, err);
    if (ret == 0 && (resp.status < 200 || resp.status > 299))
        ret = err_set(err, resp.status >= 500 ? ERR_UNAVAILABLE : ERR_UPSTREAM, "POST %s: HTTP %ld",
                      path, resp.status);
    httpc_response_release(&resp);
    return ret;
}

/* One heartbeat with up to BATCH_MAX metrics; 1 when more are queued, 0 done, -1 failed. */
static int flush_once(struct reporter *r, long timeout_ms, struct err *err)
{
    pthread_mutex_lock(&r->mu);
    size_t n = r->count < BATCH_MAX ? r->count : BATCH_MAX;
    uint64_t dropped = r->dropped;
    char *body = heartbeat_body(r, n, dropped);
    pthread_mutex_unlock(&r->mu);
    int ret = post(r, r->hb_path, body, timeout_ms, err);
    free(body);
    pthread_mutex_lock(&r->mu);
    if (ret == 0) {
        /* The n oldest were sent, unless newer ones pushed some of them out meanwhile. */
        size_t gone = r->dropped - dropped; /* dropped meanwhile, from the sent ones first */
        size_t sent_gone = gone < n ? gone : n, left = n - sent_gone;
        r->head = (r->head + left) % r->cap;
        r->count -= left;
        r->dropped = gone - sent_gone; /* the ones sent were not lost after all */
        r->st.dropped_total -= sent_gone;
        r->st.sent += n;
        r->st.heartbeats++;
        ret = r->count > 0 && n == BATCH_MAX;
    } else {
        r->st.failures++;
    }
    pthread_mutex_unlock(&r->mu);
    return ret;
}

static int flush_with(struct reporter *r, long timeout_ms, struct err *err)
{
    if (!r->enabled)
        return 0;
    int rc;
    while ((rc = flush_once(r, timeout_ms, err)) == 1)
        ;
    return rc;
}

int reporter_flush(struct reporter *r, struct err *err)
{
    return flush_with(r, HTTP_TIMEOUT_MS, err);
}

int reporter_send_preflight(struct reporter *r, const char *report_json, struct err *err)
{
    if (!r->enabled)
        return 0;
    return post(r, r->pf_path, report_json, HTTP_TIMEOUT_MS, err);
}

static void *thread_main(void *arg)
{
    struct reporter *r = arg;
    pthread_mutex_lock(&r->mu);
    while (!r->stopping) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        int64_t ns = ts.tv_nsec + (int64_t)r->interval_ms * NS_PER_MS;
        ts.tv_sec += (time_t)(ns / NS_PER_SEC);
        ts.tv_nsec = (long)(ns % NS_PER_SEC);
        pthread_cond_timedwait(&r->cv, &r->mu, &ts);
        if (r->stopping)
            break;
        pthread_mutex_unlock(&r->mu);
        reporter_flush(r, NULL);
        pthread_mutex_lock(&r->mu);
    }
    pthread_mutex_unlock(&r->mu);
    return NULL;
}

int reporter_start(struct reporter *r, int interval_ms, struct err *err)
{
    if (!r->enabled || r->running)
        return 0;
    r->interval_ms = interval_ms > 0 ? interval_ms : 1000;
    if (pthread_create(&r->thread, NULL, thread_main, r) != 0)
        return err_set(err, ERR_INTERNAL, "cannot start the reporter thread");
    r->running = 1;
    return 0;
}

void reporter_stop(struct reporter *r)
{
    if (!r->running)
        return;
    pthread_mutex_lock(&r->mu);
    r->stopping = 1;
    pthread_cond_signal(&r->cv);
    pthread_mutex_unlock(&r->mu);
    pthread_join(r->thread, NULL);
    r->running = 0;
    r->stopping = 0;
    flush_with(r, 2000, NULL); /* last words, briefly */
}

void reporter_stats(struct reporter *r, struct reporter_stats *out)
{
    pthread_mutex_lock(&r->mu);
    *out = r->st;
    out->pending = r->count;
    pthread_mutex_unlock(&r->mu);
}
