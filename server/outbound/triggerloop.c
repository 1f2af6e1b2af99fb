/*
 * triggerloop: submits the jobs that hook deliveries stored as pending, confirms SNS
 * subscriptions, prunes (see triggerloop.h). A batch of submissions is started at once so the
 * store writer commits them together, then their outcomes are recorded in one write.
 *
 * It does not parse or authenticate deliveries (api/hooks.c does) and never runs on an HTTP
 * thread. Owns its thread and its HTTP client; the store and api are borrowed.
 */
#include "server/outbound/triggerloop.h"

#include <pthread.h>
#include <stdatomic.h>

#include "api/jobs.h"
#include "api/triggercfg.h"
#include "core/clock.h"
#include "core/crypto.h"
#include "core/httpc.h"
#include "core/jsonx.h"
#include "core/log.h"
#include "core/prom.h"
#include "core/xalloc.h"
#include "trigger/jobtemplate.h"
#include "store/templates.h"
#include "store/triggers.h"
#include "store/webhooks.h"

#define BATCH          64
#define SNS_ATTEMPTS   5
#define IDLE_MS        2000
#define PRUNE_EVERY_NS (3600 * NS_PER_SEC)
#define SEEN_KEEP_NS   (48 * 3600 * NS_PER_SEC)      /* longer than EventBridge's 24 h of retries */
#define LOG_KEEP_NS    (30 * 24 * 3600 * NS_PER_SEC) /* delivery log, finished webhook messages */

struct triggerloop {
    struct store *st;
    struct api *api;
    struct triggerloop_options opts;
    char *ca_file;
    pthread_t thread;
    bool started;
    pthread_mutex_t lock;
    pthread_cond_t cond;
    bool wake, stop;
    int inflight; /* submissions of the batch not yet committed */
    atomic_uint_fast64_t submitted, failed, retried, confirmed;
};

/* One pending object on its way to a job. */
struct slot {
    struct triggerloop *l;
    struct trigger_object *o;
    struct trigger_object_result r;
    char job_id[32];
    char error[512];
    char key[160];
    char hash[SHA256_HEX_LEN];
};

struct triggerloop *triggerloop_new(struct store *st, struct api *api,
                                    const struct triggerloop_options *opts)
{
    struct triggerloop *l = XNEW(struct triggerloop);
    l->st = st;
    l->api = api;
    if (opts)
        l->opts = *opts;
    if (l->opts.retry_ns <= 0)
        l->opts.retry_ns = 5 * NS_PER_SEC;
    l->ca_file = l->opts.ca_file && *l->opts.ca_file ? xstrdup(l->opts.ca_file) : NULL;
    pthread_mutex_init(&l->lock, NULL);
    pthread_cond_init(&l->cond, NULL);
    return l;
}

void triggerloop_wake(struct triggerloop *l)
{
    pthread_mutex_lock(&l->lock);
    l->wake = true;
    pthread_cond_broadcast(&l->cond);
    pthread_mutex_unlock(&l->lock);
}

/* err as one line: the message and each field, for the delivery log. */
static void describe(const struct err *err, char *out, size_t size)
{
    int n = snprintf(out, size, "%s", err->msg);
    for (size_t i = 0; i < err->nfields && n > 0 && (size_t)n < size; i++)
        n += snprintf(out + n, size - (size_t)n, "%s%s: %s", n ? "; " : "", err->fields[i].pointer,
                      err->fields[i].message);
}

/* Runs on the store writer thread after the job's COMMIT. */
static void submitted(void *ctx, struct submission *sub, const struct jobs_submitted *r)
{
    struct slot *s = ctx;
    struct triggerloop *l = s->l;
    if (r->rc == 0) {
        snprintf(s->job_id, sizeof(s->job_id), "%s", r->id);
        s->r.state = "submitted";
        s->r.job_id = s->job_id;
    } else {
        describe(r->err, s->error, sizeof(s->error));
        bool temporary = r->err->code == ERR_UNAVAILABLE || r->err->code == ERR_IO;
        s->r.state = temporary ? "pending" : "failed";
        s->r.error = s->error;
        s->r.next_at = temporary ? clock_now_ns() + l->opts.retry_ns : 0;
    }
    jobs_submission_free(sub);
    pthread_mutex_lock(&l->lock);
    l->inflight--;
    pthread_cond_broadcast(&l->cond);
    pthread_mutex_unlock(&l->lock);
}

/* The job spec for an object: the trigger's template with the event's and trigger's values. */
static json_t *render(struct triggerloop *l, const struct trigger_object *o,
                      struct trigger_def **def, struct err *err)
{
    *def = store_trigger_get(l->st, o->trigger_id, err);
    struct template_def *t = *def ? store_template_get(l->st, (*def)->template_name, err) : NULL;
    json_t *tmpl = t ? json_loads(t->spec, 0, NULL) : NULL;
    json_t *values = *def ? json_loads((*def)->values, 0, NULL) : NULL;
    json_t *event = json_loads(o->event, 0, NULL);
    struct jobtemplate_values vals;
    jobtemplate_values_init(&vals);
    struct s3event ev;
    json_t *spec = NULL;
    if (tmpl && triggercfg_event_from_json(event, &ev) < 0)
        err_set(err, ERR_INTERNAL, "the stored event is unreadable");
    else if (tmpl)
        jobtemplate_values_from_event(&vals, &ev);
    if (tmpl && !err_is_set(err) &&
        jobtemplate_values_from_json(&vals, values ? values : json_object(), "/values", err) == 0)
        spec = jobtemplate_render(tmpl, &vals, err);
    jobtemplate_values_release(&vals);
    json_decref(event);
    json_decref(values);
    json_decref(tmpl);
    template_def_free(t);
    return spec;
}

/* Starts one submission; on a failure before the store, fills the slot's result at once. */
static void start(struct triggerloop *l, struct slot *s)
{
    struct err err;
    err_init(&err);
    struct trigger_def *def = NULL;
    s->r = (struct trigger_object_result){ .pk = s->o->pk, .state = "failed", .error = s->error };
    json_t *spec = render(l, s->o, &def, &err);
    char owner[160];
    snprintf(owner, sizeof(owner), "trigger/%s", s->o->trigger_name);
    snprintf(s->key, sizeof(s->key), "%s/%s", s->o->trigger_id, s->o->dedupe_key);
    crypto_sha256_hex(s->key, strlen(s->key), s->hash);
    /* An admin made the trigger and its template; the object's key and bucket reach the job
     * only as whole values (trigger/jobtemplate.h). */
    struct jobs_submit_opts o = { .owner = owner,
                                  .scope = SCOPE_ADMIN,
                                  .idempotency_key = s->key,
                                  .idempotency_hash = s->hash,
                                  .request_id = "trigger" };
    struct submission *sub = spec ? jobs_submission_new(l->api, spec, &o, &err) : NULL;
    if (sub) {
        pthread_mutex_lock(&l->lock);
        l->inflight++;
        pthread_mutex_unlock(&l->lock);
        jobs_submission_start(sub, submitted, s);
    } else {
        describe(&err, s->error, sizeof(s->error));
        if (err.code == ERR_UNAVAILABLE || err.code == ERR_IO) {
            s->r.state = "pending";
            s->r.next_at = clock_now_ns() + l->opts.retry_ns;
        }
    }
    json_decref(spec);
    trigger_def_free(def);
    err_release(&err);
}

static void count(struct triggerloop *l, const struct slot *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        const char *st = s[i].r.state;
        if (strcmp(st, "submitted") == 0) {
            atomic_fetch_add(&l->submitted, 1);
            log_info("trigger %s: job %s for object %.20s...", s[i].o->trigger_name, s[i].job_id,
                     s[i].o->dedupe_key);
        } else if (strcmp(st, "pending") == 0) {
            atomic_fetch_add(&l->retried, 1);
            log_warn("trigger %s: submission postponed: %s", s[i].o->trigger_name, s[i].error);
        } else {
            atomic_fetch_add(&l->failed, 1);
            log_warn("trigger %s: no job: %s", s[i].o->trigger_name, s[i].error);
        }
    }
}

/* Submits one batch of due objects; returns how many there were. */
static size_t submit_due(struct triggerloop *l)
{
    struct trigger_object **objs;
    size_t n;
    struct err err;
    err_init(&err);
    if (store_trigger_objects_due(l->st, clock_now_ns(), BATCH, &objs, &n, &err) < 0) {
        log_error("trigger loop: %s", err.msg);
        err_release(&err);
        return 0;
    }
    struct slot *slots = xcalloc(n ? n : 1, sizeof(*slots));
    for (size_t i = 0; i < n; i++) {
        slots[i].l = l;
        slots[i].o = objs[i];
        start(l, &slots[i]);
    }
    pthread_mutex_lock(&l->lock);
    while (l->inflight > 0)
        pthread_cond_wait(&l->cond, &l->lock);
    pthread_mutex_unlock(&l->lock);
    struct trigger_object_result *res = xcalloc(n ? n : 1, sizeof(*res));
    int64_t now = clock_now_ns();
    for (size_t i = 0; i < n; i++) {
        res[i] = slots[i].r;
        res[i].now = now;
    }
    if (n && store_trigger_objects_done(l->st, res, n, &err) < 0)
        log_error("trigger loop: recording submissions: %s", err.msg);
    count(l, slots, n);
    free(res);
    free(slots);
    trigger_objects_free(objs, n);
    err_release(&err);
    return n;
}

/* The SubscriptionArn from SNS's XML answer, or "". */
static void subscription_arn(const char *xml, char *out, size_t size)
{
    const char *open = "<SubscriptionArn>";
    const char *a = strstr(xml, open), *b = a ? strstr(a, "</SubscriptionArn>") : NULL;
    if (a && b)
        snprintf(out, size, "%.*s", (int)(b - a - strlen(open)), a + strlen(open));
    else
        out[0] = '\0';
}

/* Fetches each pending SubscribeURL (its host was checked when the message was verified). */
static void confirm_due(struct triggerloop *l)
{
    struct sns_pending **p;
    size_t n;
    struct err err;
    err_init(&err);
    if (store_sns_due(l->st, clock_now_ns(), 8, &p, &n, &err) < 0 || n == 0)
        goto out;
    struct httpc_options ho = { .https_only = true, .ca_file = l->ca_file };
    struct httpc *h = httpc_new(&ho, NULL);
    for (size_t i = 0; i < n; i++) {
        struct httpc_response r;
        httpc_response_init(&r);
        struct err e;
        err_init(&e);
        char arn[256], msg[300];
        struct httpc_request rq = { .url = p[i]->subscribe_url };
        int rc = httpc_do(h, &rq, &r, &e);
        bool ok = rc == 0 && r.status >= 200 && r.status < 300;
        subscription_arn(ok ? buf_cstr(&r.body) : "", arn, sizeof(arn));
        if (rc < 0)
            snprintf(msg, sizeof(msg), "%s", e.msg);
        else if (!ok)
            snprintf(msg, sizeof(msg), "SubscribeURL answered HTTP %ld", r.status);
        else
            msg[0] = '\0';
        bool give_up = p[i]->attempts + 1 >= SNS_ATTEMPTS;
        int64_t next = clock_now_ns() + (30LL << p[i]->attempts) * NS_PER_SEC;
        const char *state = ok ? "confirmed" : give_up ? "failed" : "pending";
        store_sns_result(l->st, p[i]->trigger_pk, p[i]->topic_arn, state, arn, msg, next,
                         clock_now_ns(), NULL);
        if (ok)
            atomic_fetch_add(&l->confirmed, 1);
        log_info("SNS subscription %s: %s%s%s", p[i]->topic_arn, state, *msg ? ": " : "", msg);
        httpc_response_release(&r);
        err_release(&e);
    }
    httpc_free(h);
out:
    if (err_is_set(&err))
        log_error("trigger loop: %s", err.msg);
    sns_pendings_free(p, n);
    err_release(&err);
}

static void prune(struct triggerloop *l, int64_t now)
{
    struct err err;
    err_init(&err);
    /* The webhook outbox is pruned here too: its senders (server/outbound/notifier.c) have no
     * periodic pass of their own, and both logs keep the same 30 days (docs/triggers.md). */
    if (store_triggers_prune(l->st, now - SEEN_KEEP_NS, now - LOG_KEEP_NS, &err) < 0 ||
        store_outbox_prune(l->st, now - LOG_KEEP_NS, &err) < 0)
        log_warn("trigger loop: pruning: %s", err.msg);
    err_release(&err);
}

static void *run(void *arg)
{
    pthread_setname_np(pthread_self(), "ty-triggers");
    struct triggerloop *l = arg;
    int64_t pending = 0, last_prune = 0;
    store_trigger_objects_pending(l->st, &pending, NULL);
    if (pending)
        log_info("trigger loop: %lld job submission(s) pending from before%s", (long long)pending,
                 l->opts.paused ? " (paused)" : "");
    for (;;) {
        bool more = false;
        if (!l->opts.paused)
            more = submit_due(l) == BATCH;
        confirm_due(l);
        int64_t now = clock_now_ns();
        if (now - last_prune > PRUNE_EVERY_NS) {
            prune(l, now);
            last_prune = now;
        }
        pthread_mutex_lock(&l->lock);
        if (!more && !l->wake && !l->stop) {
            struct timespec ts;
            clock_gettime(CLOCK_REALTIME, &ts);
            ts.tv_sec += IDLE_MS / 1000;
            pthread_cond_timedwait(&l->cond, &l->lock, &ts);
        }
        bool stop = l->stop;
        l->wake = false;
        pthread_mutex_unlock(&l->lock);
        if (stop)
            break;
    }
    return NULL;
}

int triggerloop_start(struct triggerloop *l, struct err *err)
{
    if (pthread_create(&l->thread, NULL, run, l) != 0)
        return err_set(err, ERR_INTERNAL, "cannot start the trigger loop thread");
    l->started = true;
    return 0;
}

void triggerloop_free(struct triggerloop *l)
{
    if (!l)
        return;
    if (l->started) {
        pthread_mutex_lock(&l->lock);
        l->stop = true;
        pthread_cond_broadcast(&l->cond);
        pthread_mutex_unlock(&l->lock);
        pthread_join(l->thread, NULL);
    }
    pthread_mutex_destroy(&l->lock);
    pthread_cond_destroy(&l->cond);
    free(l->ca_file);
    free(l);
}

void triggerloop_metrics(struct triggerloop *l, struct buf *out)
{
    int64_t pending = 0;
    store_trigger_objects_pending(l->st, &pending, NULL);
    struct prom p;
    prom_init(&p, out);
    prom_family(&p, "trainyard_trigger_jobs_total", PROM_COUNTER,
                "Jobs from S3 hook deliveries, by outcome.");
    prom_sample(&p, NULL, (double)atomic_load(&l->submitted), "outcome", "submitted", NULL);
    prom_sample(&p, NULL, (double)atomic_load(&l->failed), "outcome", "failed", NULL);
    prom_sample(&p, NULL, (double)atomic_load(&l->retried), "outcome", "postponed", NULL);
    prom_scalar(&p, "trainyard_trigger_jobs_pending", PROM_GAUGE,
                "Object versions waiting for their job.", (double)pending);
    prom_scalar(&p, "trainyard_sns_confirmations_total", PROM_COUNTER,
                "SNS subscriptions confirmed.", (double)atomic_load(&l->confirmed));
}
