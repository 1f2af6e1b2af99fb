/*
 * notifier: job events -> outbox messages -> signed HTTP POSTs (see notifier.h).
 *
 * One dispatcher thread owns the set of changed jobs and decides what to send; `workers` sender
 * threads each keep one HTTP client (core/httpc: connections reused) and send one message at a
 * time. The dispatcher hands a message over only when a worker is free, the message is the oldest
 * pending one of its (webhook, job) and its webhook has fewer than half the workers busy, so
 * the queue between them never holds more than `workers` messages.
 *
 * Ownership: the store is borrowed; messages (struct outbox_msg) belong to whoever holds them
 * (dispatcher, queue, worker) and are freed after their result is stored.
 */
#include "server/outbound/notifier.h"

#include <pthread.h>
#include <stdatomic.h>

#include "core/clock.h"
#include "core/crypto.h"
#include "core/httpc.h"
#include "job/jobstate.h"
#include "core/jsonx.h"
#include "core/log.h"
#include "core/prom.h"
#include "core/xalloc.h"
#include "store/jobs.h"
#include "store/webhooks.h"

#define IDLE_NS         (5 * NS_PER_SEC)
#define BUSY_NS         NS_PER_SEC /* due messages wait for a worker: re-check at least this often */
#define PASS_GAP_NS     (20 * NS_PER_MS) /* a pass costs ~150 us of reads; messages wait <= this */
#define EVENTS_PER_PASS 500

struct flight {
    int64_t pk, webhook_pk;
};

struct notifier {
    struct store *st;
    struct notifier_options opts;
    char *public_url;
    pthread_t thread, *workers;
    int nworkers;
    bool started;
    pthread_mutex_t lock;
    pthread_cond_t cond; /* dispatcher: jobs changed, wake, a worker finished, stop */
    pthread_cond_t work; /* workers: a message queued, stop */
    bool wake, stop;
    int64_t *dirty; /* changed jobs, unordered, no duplicates */
    size_t ndirty, capdirty;
    struct outbox_msg **queue; /* at most nworkers */
    size_t nqueue;
    struct flight *flight; /* queued or being sent */
    size_t nflight;
    int64_t *finished; /* messages whose result was stored since dispatch() last read the
                          outbox: that read may still show them pending */
    size_t nfinished, capfinished;
    atomic_uint_fast64_t delivered, retried, failed, queued;
};

struct notifier *notifier_new(struct store *st, const struct notifier_options *opts)
{
    struct notifier *n = XNEW(struct notifier);
    n->st = st;
    if (opts)
        n->opts = *opts;
    n->nworkers = n->opts.workers > 0 ? n->opts.workers : 4;
    if (n->opts.timeout_ms <= 0)
        n->opts.timeout_ms = 10000;
    n->workers = xcalloc((size_t)n->nworkers, sizeof(*n->workers));
    n->queue = xcalloc((size_t)n->nworkers, sizeof(*n->queue));
    n->flight = xcalloc((size_t)n->nworkers, sizeof(*n->flight));
    pthread_mutex_init(&n->lock, NULL);
    pthread_cond_init(&n->cond, NULL);
    pthread_cond_init(&n->work, NULL);
    return n;
}

void notifier_job(struct notifier *n, int64_t job_pk)
{
    pthread_mutex_lock(&n->lock);
    bool known = false;
    for (size_t i = 0; i < n->ndirty && !known; i++)
        known = n->dirty[i] == job_pk;
    if (!known) {
        XGROW(n->dirty, n->ndirty, n->capdirty);
        n->dirty[n->ndirty++] = job_pk;
    }
    if (n->ndirty == 1) /* the loop only sleeps on changes when it has none */
        pthread_cond_broadcast(&n->cond);
    pthread_mutex_unlock(&n->lock);
}

void notifier_wake(struct notifier *n)
{
    pthread_mutex_lock(&n->lock);
    n->wake = true;
    pthread_cond_broadcast(&n->cond);
    pthread_mutex_unlock(&n->lock);
}

/* The webhook event an entry of the job's timeline announces; -1 for none. */
static int event_of(const json_t *ev, enum webhook_event *out)
{
    const char *type = jsonx_str(ev, "type");
    enum job_state s;
    if (!type || !json_is_null(json_object_get(ev, "rank")))
        return -1; /* rank-level events are not job changes */
    if (strcmp(type, "accepted") == 0)
        *out = WEBHOOK_JOB_ACCEPTED;
    else if (strcmp(type, "stalled") == 0)
        *out = WEBHOOK_JOB_STALLED;
    else if (jobstate_parse(type, &s) < 0 || s == JOB_QUEUED || webhook_event_for_state(s, out) < 0)
        return -1;
    return 0;
}

static bool wants(const struct webhook_def *w, enum webhook_event e)
{
    json_t *events = json_loads(w->events, 0, NULL);
    bool yes = false;
    size_t i;
    json_t *v;
    json_array_foreach(events, i, v) yes |=
        json_is_string(v) && strcmp(json_string_value(v), webhook_event_name(e)) == 0;
    json_decref(events);
    return yes;
}

/* Messages for one event of job j to every webhook that wants it; appended to out. */
static void messages_for(struct notifier *n, const struct job *j, const json_t *ev,
                         struct webhook_def **hooks, size_t nhooks, struct outbox_new **out,
                         size_t *nout, char ***owned)
{
    enum webhook_event e;
    int64_t t = 0;
    if (event_of(ev, &e) < 0 || clock_parse(jsonx_str(ev, "time"), &t) < 0)
        return;
    char url[512];
    snprintf(url, sizeof(url), "%s/#/jobs/%s", n->public_url, j->id); /* the web page */
    const char *state = e == WEBHOOK_JOB_ACCEPTED  ? "queued"
                        : e == WEBHOOK_JOB_STALLED ? jobstate_name(j->state)
                                                   : jsonx_str(ev, "type");
    struct webhook_job wj = { .id = j->id,
                              .name = j->name,
                              .state = state,
                              .reason = jsonx_str(ev, "reason"),
                              .message = jsonx_str(ev, "message"),
                              .url = url,
                              .time_ns = t };
    for (size_t i = 0; i < nhooks; i++) {
        /* Events from before a webhook existed are not its business (microsecond times). */
        if (!wants(hooks[i], e) || t + 1000 < hooks[i]->created_at)
            continue;
        char *id = xmalloc(WEBHOOK_ID_LEN);
        webhook_new_id(id);
        char *body = webhook_body(e, &wj, strcmp(hooks[i]->format, "slack") == 0, clock_now_ns());
        *out = xrealloc(*out, (*nout + 1) * sizeof(**out));
        *owned = xrealloc(*owned, (2 * *nout + 2) * sizeof(**owned));
        (*owned)[2 * *nout] = id;
        (*owned)[2 * *nout + 1] = body;
        (*out)[(*nout)++] = (struct outbox_new){ .webhook_pk = hooks[i]->pk,
                                                 .msg_id = id,
                                                 .event = webhook_event_name(e),
                                                 .job_id = j->id,
                                                 .body = body };
    }
}

/* Turns the job's events past its cursor into outbox messages, moving the cursor with them. */
static int to_outbox(struct notifier *n, int64_t pk, struct webhook_def **hooks, size_t nhooks,
                     struct err *err)
{
    size_t nout = 0;
    int64_t cursor = 0;
    json_t *events = NULL;
    struct job *j = NULL;
    struct outbox_new *out = NULL;
    char **owned = NULL;
    int rc = 0;
    if (nhooks == 0 || store_webhook_cursor(n->st, pk, &cursor, err) < 0 ||
        !(events = store_events_list(n->st, pk, cursor, EVENTS_PER_PASS, err)) ||
        json_array_size(events) == 0 || !(j = store_job_get_pk(n->st, pk, NULL)))
        goto out;
    size_t i;
    json_t *ev;
    json_array_foreach(events, i, ev) messages_for(n, j, ev, hooks, nhooks, &out, &nout, &owned);
    int64_t last = jsonx_int(json_array_get(events, json_array_size(events) - 1), "seq", cursor);
    rc = store_outbox_add(n->st, out, nout, pk, last, clock_now_ns(), err);
    if (rc == 0)
        atomic_fetch_add(&n->queued, nout);
    if (rc == 0 && json_array_size(events) == EVENTS_PER_PASS)
        notifier_job(n, pk); /* more to read */
out:
    for (size_t k = 0; k < 2 * nout; k++)
        free(owned[k]);
    free(owned);
    free(out);
    job_free(j);
    json_decref(events);
    return err_is_set(err) ? -1 : rc;
}

/* Turns the changes of the dirty jobs into messages, reading the webhooks once per pass (a
 * burst of submissions marks thousands of jobs). True when some job must be tried again. */
static bool outbox_pass(struct notifier *n, const int64_t *dirty, size_t ndirty)
{
    struct webhook_def **hooks = NULL;
    size_t nhooks = 0;
    bool failed = false;
    struct err err;
    err_init(&err);
    bool listed = store_webhook_list(n->st, true, &hooks, &nhooks, &err) == 0;
    for (size_t i = 0; i < ndirty; i++) {
        if (listed && to_outbox(n, dirty[i], hooks, nhooks, &err) == 0)
            continue;
        log_warn("webhooks: job %lld: %s", (long long)dirty[i], err.msg);
        notifier_job(n, dirty[i]); /* try again on the next pass */
        failed = true;
        if (listed) {
            err_release(&err);
            err_init(&err);
        }
    }
    webhook_defs_free(hooks, nhooks);
    err_release(&err);
    return failed;
}

/* At start: jobs whose events were not all turned into messages (kill -9 in between). */
static void catch_up(struct notifier *n)
{
    struct webhook_def **hooks;
    size_t nhooks;
    int64_t *pks = NULL;
    size_t npks = 0;
    if (store_webhook_list(n->st, true, &hooks, &nhooks, NULL) < 0 || nhooks == 0)
        return;
    int64_t since = hooks[0]->created_at;
    for (size_t i = 1; i < nhooks; i++)
        if (hooks[i]->created_at < since)
            since = hooks[i]->created_at;
    webhook_defs_free(hooks, nhooks);
    if (store_webhook_behind(n->st, since, &pks, &npks, NULL) == 0)
        for (size_t i = 0; i < npks; i++)
            notifier_job(n, pks[i]);
    if (npks)
        log_info("webhooks: catching up with %zu job(s)", npks);
    free(pks);
}

/* Messages of the webhook in flight; *same when pk itself is in flight or just finished. */
static size_t webhook_busy(const struct notifier *n, int64_t webhook_pk, int64_t pk, bool *same)
{
    size_t busy = 0;
    *same = false;
    for (size_t i = 0; i < n->nflight; i++) {
        busy += n->flight[i].webhook_pk == webhook_pk;
        *same |= n->flight[i].pk == pk;
    }
    for (size_t i = 0; i < n->nfinished; i++)
        *same |= n->finished[i] == pk;
    return busy;
}

/* Hands due messages to free workers; returns how long to wait before looking again. */
static int64_t dispatch(struct notifier *n)
{
    struct outbox_msg **msgs = NULL;
    size_t nmsgs = 0;
    int64_t now = clock_now_ns(), next = 0;
    size_t cap = n->nworkers > 1 ? (size_t)n->nworkers / 2 : 1;
    pthread_mutex_lock(&n->lock);
    n->nfinished = 0; /* the read below sees every result stored so far */
    pthread_mutex_unlock(&n->lock);
    if (store_outbox_due(n->st, now, 2 * n->nworkers + 16, &msgs, &nmsgs, NULL) < 0)
        return BUSY_NS;
    pthread_mutex_lock(&n->lock);
    for (size_t i = 0; i < nmsgs; i++) {
        bool same;
        size_t busy = webhook_busy(n, msgs[i]->webhook_pk, msgs[i]->pk, &same);
        if (same || busy >= cap || n->nflight >= (size_t)n->nworkers)
            continue;
        n->flight[n->nflight++] = (struct flight){ msgs[i]->pk, msgs[i]->webhook_pk };
        n->queue[n->nqueue++] = msgs[i];
        msgs[i] = NULL;
        pthread_cond_signal(&n->work);
    }
    pthread_mutex_unlock(&n->lock);
    outbox_msgs_free(msgs, nmsgs);
    if (store_outbox_next_at(n->st, &next, NULL) < 0 || next <= 0)
        return IDLE_NS;
    if (next > now)
        return next - now < IDLE_NS ? next - now : IDLE_NS;
    return BUSY_NS;
}

/* Sleeps on n->cond for up to ns; lock held. */
static void sleep_for(struct notifier *n, int64_t ns)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    int64_t at = (int64_t)ts.tv_sec * NS_PER_SEC + ts.tv_nsec + ns;
    ts.tv_sec = at / NS_PER_SEC;
    ts.tv_nsec = at % NS_PER_SEC;
    pthread_cond_timedwait(&n->cond, &n->lock, &ts);
}

/* Waits until the next pass may start: a burst of changes is read in passes PASS_GAP_NS apart,
 * not one pass per change (the first change of a burst wakes the loop; it waits out the gap). */
static void wait_gap(struct notifier *n, int64_t last_pass)
{
    int64_t gap;
    while (!n->stop && !n->wake && n->ndirty > 0 &&
           (gap = last_pass + PASS_GAP_NS - clock_mono_ns()) > 0)
        sleep_for(n, gap);
}

static void *run(void *arg)
{
    pthread_setname_np(pthread_self(), "ty-webhooks");
    struct notifier *n = arg;
    catch_up(n);
    int64_t last_pass = 0;
    for (;;) {
        pthread_mutex_lock(&n->lock);
        wait_gap(n, last_pass);
        int64_t *dirty = n->dirty;
        size_t ndirty = n->ndirty;
        n->dirty = NULL;
        n->ndirty = n->capdirty = 0;
        n->wake = false;
        bool stop = n->stop;
        pthread_mutex_unlock(&n->lock);
        if (stop) {
            free(dirty);
            break;
        }
        last_pass = clock_mono_ns();
        bool failed = ndirty > 0 && outbox_pass(n, dirty, ndirty);
        free(dirty);
        int64_t wait = dispatch(n);
        pthread_mutex_lock(&n->lock);
        /* After a failed pass the retried jobs wait too, so a broken store is not spun on. */
        if (!n->stop && !n->wake && (n->ndirty == 0 || failed))
            sleep_for(n, wait);
        pthread_mutex_unlock(&n->lock);
    }
    return NULL;
}

/* What the receiver's answer means for this message. */
static void judge(struct notifier *n, int rc, const struct httpc_response *resp,
                  const struct err *err, struct outbox_result *r, char *error, size_t size)
{
    r->status = rc == 0 ? resp->status : 0;
    enum webhook_verdict v = rc < 0 ? WEBHOOK_RETRY : webhook_classify(r->status);
    if (rc < 0)
        snprintf(error, size, "%s", err->msg);
    else if (v != WEBHOOK_DELIVERED)
        snprintf(error, size, "HTTP %ld", r->status);
    if (v == WEBHOOK_DELIVERED) {
        r->state = "delivered";
        atomic_fetch_add(&n->delivered, 1);
    } else if (v == WEBHOOK_GONE) {
        r->state = "failed";
        r->disable = true;
        r->reason = "the receiver answered 410 Gone";
        atomic_fetch_add(&n->failed, 1);
    } else {
        uint32_t rnd;
        crypto_random(&rnd, sizeof(rnd));
        int64_t after = rc == 0 ? resp->retry_after_ms : -1;
        int64_t delay = webhook_retry_delay(&n->opts.retry, r->attempt, rnd, after);
        r->state = delay < 0 ? "failed" : "pending";
        r->next_at = delay < 0 ? 0 : r->now + delay * NS_PER_MS;
        if (delay < 0)
            snprintf(error + strlen(error), size - strlen(error), " (gave up after %d attempts)",
                     r->attempt);
        atomic_fetch_add(delay < 0 ? &n->failed : &n->retried, 1);
    }
}

static void send_one(struct notifier *n, struct httpc *h, const struct outbox_msg *m)
{
    char error[600] = "";
    struct err err;
    err_init(&err);
    struct outbox_result r = { .pk = m->pk,
                               .webhook_pk = m->webhook_pk,
                               .attempt = m->attempts + 1,
                               .now = clock_now_ns(),
                               .error = error };
    struct webhook_headers hd;
    struct httpc_response resp;
    httpc_response_init(&resp);
    int64_t t0 = clock_mono_ns();
    if (webhook_sign(m->secret, m->msg_id, r.now / NS_PER_SEC, m->body, strlen(m->body), &hd,
                     &err) < 0) {
        r.state = "failed";
        snprintf(error, sizeof(error), "cannot sign: %s", err.msg);
    } else {
        struct httpc_request rq = { .url = m->url,
                                    .headers = (const char *const *)hd.lines,
                                    .body = m->body,
                                    .body_len = strlen(m->body) };
        int rc = httpc_do(h, &rq, &resp, &err);
        r.duration_ms = (clock_mono_ns() - t0) / NS_PER_MS;
        judge(n, rc, &resp, &err, &r, error, sizeof(error));
        webhook_headers_release(&hd);
    }
    err_release(&err);
    err_init(&err);
    if (store_outbox_result(n->st, &r, &err) < 0)
        log_error("webhooks: recording message %s: %s", m->msg_id, err.msg);
    if (r.disable)
        log_warn("webhooks: %s answered 410 Gone: webhook disabled", m->url);
    httpc_response_release(&resp);
    err_release(&err);
}

static void *work(void *arg)
{
    pthread_setname_np(pthread_self(), "ty-webhook-send");
    struct notifier *n = arg;
    /* The address each connection goes to is checked, not only the URL when it was saved: a
     * name can resolve to a metadata address the second time (DNS rebinding). */
    struct httpc_options ho = { .timeout_ms = n->opts.timeout_ms,
                                .public_only = !n->opts.allow_local };
    struct httpc *h = httpc_new(&ho, NULL);
    for (;;) {
        pthread_mutex_lock(&n->lock);
        while (n->nqueue == 0 && !n->stop)
            pthread_cond_wait(&n->work, &n->lock);
        if (n->stop) {
            pthread_mutex_unlock(&n->lock);
            break;
        }
        struct outbox_msg *m = n->queue[0];
        memmove(n->queue, n->queue + 1, --n->nqueue * sizeof(*n->queue));
        pthread_mutex_unlock(&n->lock);
        send_one(n, h, m);
        pthread_mutex_lock(&n->lock);
        for (size_t i = 0; i < n->nflight; i++) {
            if (n->flight[i].pk == m->pk) {
                n->flight[i] = n->flight[--n->nflight];
                break;
            }
        }
        if (n->nfinished == n->capfinished) {
            n->capfinished = n->capfinished ? 2 * n->capfinished : 16;
            n->finished = xrealloc(n->finished, n->capfinished * sizeof(*n->finished));
        }
        n->finished[n->nfinished++] = m->pk;
        n->wake = true;
        pthread_cond_broadcast(&n->cond);
        pthread_mutex_unlock(&n->lock);
        outbox_msg_free(m);
    }
    httpc_free(h);
    return NULL;
}

int notifier_start(struct notifier *n, const char *public_url, struct err *err)
{
    n->public_url = xstrdup(public_url ? public_url : "");
    if (pthread_create(&n->thread, NULL, run, n) != 0)
        return err_set(err, ERR_INTERNAL, "cannot start the webhook thread");
    n->started = true;
    for (int i = 0; i < n->nworkers; i++)
        if (pthread_create(&n->workers[i], NULL, work, n) != 0)
            return err_set(err, ERR_INTERNAL, "cannot start a webhook sender thread");
    return 0;
}

void notifier_free(struct notifier *n)
{
    if (!n)
        return;
    pthread_mutex_lock(&n->lock);
    n->stop = true;
    pthread_cond_broadcast(&n->cond);
    pthread_cond_broadcast(&n->work);
    pthread_mutex_unlock(&n->lock);
    if (n->started) {
        pthread_join(n->thread, NULL);
        for (int i = 0; i < n->nworkers; i++)
            if (n->workers[i])
                pthread_join(n->workers[i], NULL);
    }
    for (size_t i = 0; i < n->nqueue; i++)
        outbox_msg_free(n->queue[i]);
    pthread_mutex_destroy(&n->lock);
    pthread_cond_destroy(&n->cond);
    pthread_cond_destroy(&n->work);
    free(n->dirty);
    free(n->queue);
    free(n->flight);
    free(n->finished);
    free(n->workers);
    free(n->public_url);
    free(n);
}

void notifier_metrics(struct notifier *n, struct buf *out)
{
    struct prom p;
    prom_init(&p, out);
    prom_family(&p, "trainyard_webhook_messages_total", PROM_COUNTER,
                "Webhook messages, by what happened.");
    prom_sample(&p, NULL, (double)atomic_load(&n->queued), "result", "queued", NULL);
    prom_sample(&p, NULL, (double)atomic_load(&n->delivered), "result", "delivered", NULL);
    prom_sample(&p, NULL, (double)atomic_load(&n->retried), "result", "retried", NULL);
    prom_sample(&p, NULL, (double)atomic_load(&n->failed), "result", "failed", NULL);
}
