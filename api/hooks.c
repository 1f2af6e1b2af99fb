/*
 * hooks: POST /v1/hooks/s3/{trigger}, where S3, SNS, EventBridge and MinIO deliver upload
 * events. The trigger authenticates its sender itself (x-scope hook). Path: trigger_receive()
 * (size cap, auth on the raw bytes, parse, SNS signature, rules, dedupe keys), then one store
 * write records the delivery, dedupes its id and its objects and keeps each new object as a
 * pending submission; the answer (the status each sender needs, docs/triggers.md) goes out after
 * that COMMIT, and the trigger loop (server/outbound/triggerloop.c) submits the jobs in the
 * background.
 *
 * An unknown trigger answers exactly as a known one whose credentials do not match, so trigger
 * ids cannot be probed. Rejections say only "could not be authenticated". A delivery whose
 * sender is not authenticated (bad or missing signature or secret, over the size cap, a
 * certificate that cannot be fetched) stores nothing and logs nothing above debug: anyone can
 * send one, so each is only counted (trainyard_http_unauthenticated_total in /metrics). What an
 * authenticated sender sent is recorded in the delivery log, rejections with their reason.
 *
 * Threads: the handler and the answer (res->finish) run on HTTP threads (an SNS certificate not
 * yet cached is fetched there, bounded by its timeout); the store writer thread only wakes the
 * trigger loop and completes the request.
 */
#include "api/apimetrics.h"
#include "api/handlers.h"
#include "api/triggercfg.h"
#include "core/clock.h"
#include "core/jsonx.h"
#include "core/log.h"
#include "core/xalloc.h"

#define AUTH_DETAIL "the request could not be authenticated for this trigger"

/* One delivery on its way to the store; freed after the answer is complete. */
struct delivery {
    struct request *req;
    struct response *res;
    struct trigger_result r;
    struct delivery_new d;
    struct delivery_recorded out;
    struct delivery_object *objects;
    char **texts; /* the objects' event JSON */
    char *events;
    char summary[320];
    bool stored; /* the write committed */
};

static void delivery_free(struct delivery *dv)
{
    for (size_t i = 0; i < dv->d.nobjects; i++)
        free(dv->texts[i]);
    free(dv->texts);
    free(dv->objects);
    free(dv->events);
    trigger_result_release(&dv->r);
    free(dv);
}

static const char *header_of(void *ctx, const char *name)
{
    return request_header(ctx, name);
}

/* The problem code whose status is the one this sender must hear. */
static enum err_code code_for(int status)
{
    switch (status) {
    case 400:
        return ERR_INVALID;
    case 401:
        return ERR_UNAUTHORIZED;
    case 403:
        return ERR_FORBIDDEN;
    case 413:
        return ERR_TOO_LARGE;
    case 503:
        return ERR_UNAVAILABLE;
    default:
        return ERR_INTERNAL;
    }
}

static void reject(struct request *req, struct response *res, int status, const char *detail,
                   bool challenge)
{
    problem(req, res, code_for(status), "%s", detail);
    if (challenge)
        response_header(res, "WWW-Authenticate", "Basic realm=\"trainyard\"");
}

static void unknown_trigger(struct request *req, struct response *res)
{
    struct hook_request hr = { header_of, req, req->body, req->body_len };
    size_t max = req->api->hook_max_body ? req->api->hook_max_body : 1024 * 1024;
    enum hook_sender sender = hook_sender_guess(&hr);
    bool big = req->body_len > max;
    int status = trigger_status(sender, TRIGGER_REJECTED, big ? ERR_TOO_LARGE : ERR_UNAUTHORIZED);
    log_debug("hook %s: no trigger %.60s", req->request_id, req->params[0]);
    reject(req, res, status, big ? "the body is over the limit" : AUTH_DETAIL, false);
    apimetrics_unauthenticated(req->route, status);
}

/* A delivery whose sender is not authenticated: answered and counted, nothing stored. */
static void unauthenticated(struct request *req, struct response *res, const struct delivery *dv,
                            const struct trigger_def *t)
{
    const struct trigger_result *r = &dv->r;
    bool auth = r->err.code == ERR_UNAUTHORIZED || r->err.code == ERR_FORBIDDEN;
    log_debug("hook %s: trigger %s: sender not authenticated: %s", req->request_id, t->id,
              r->err.msg);
    reject(req, res, r->status, auth ? AUTH_DETAIL : r->err.msg, r->challenge);
    apimetrics_unauthenticated(req->route, r->status);
}

/* Authentication passed: everything but a rejection before or during it. */
static bool verified(const struct trigger_result *r, enum hookauth_mode mode)
{
    if (r->outcome != TRIGGER_REJECTED && r->outcome != TRIGGER_RETRY)
        return true;
    return mode != HOOKAUTH_SNS && (r->err.code == ERR_INVALID || r->err.code == ERR_VALIDATION);
}

/* The log's view of each event, and the matched ones as objects to store. */
static void add_events(struct delivery *dv, bool enabled)
{
    const struct trigger_result *r = &dv->r;
    json_t *events = json_array();
    dv->objects = xcalloc(r->hook.events.n + 1, sizeof(*dv->objects));
    dv->texts = xcalloc(r->hook.events.n + 1, sizeof(*dv->texts));
    for (size_t i = 0; r->matches && i < r->hook.events.n; i++) {
        const struct trigger_match *m = &r->matches[i];
        json_t *e = triggercfg_event_json(m->event);
        json_object_set_new(e, "matched", json_boolean(m->matched));
        jsonx_set_str(e, m->matched ? "dedupe_key" : "why", m->matched ? m->dedupe_key : m->why);
        if (m->matched && enabled) {
            json_t *ev = triggercfg_event_json(m->event);
            dv->texts[dv->d.nobjects] = jsonx_dumps(ev);
            json_decref(ev);
            dv->objects[dv->d.nobjects] =
                (struct delivery_object){ .dedupe_key = m->dedupe_key,
                                          .event = dv->texts[dv->d.nobjects] };
            dv->d.nobjects++;
        }
        json_array_append_new(events, e);
    }
    dv->events = jsonx_dumps(events);
    json_decref(events);
    dv->d.objects = dv->objects;
    dv->d.events = dv->events;
}

static void describe(struct delivery *dv, const struct trigger_def *t, enum hookauth_mode mode)
{
    struct trigger_result *r = &dv->r;
    struct delivery_new *d = &dv->d;
    bool disabled = !t->enabled && r->outcome == TRIGGER_ACCEPTED;
    *d = (struct delivery_new){ .trigger_pk = t->pk,
                                .received_at = clock_now_ns(),
                                .sender = hook_sender_name(r->sender),
                                .delivery_id = r->hook.delivery_id,
                                .outcome = disabled ? "ignored" : trigger_outcome_name(r->outcome),
                                .summary = r->summary,
                                .error = r->err.msg,
                                .request_id = dv->req->request_id,
                                .status = r->status,
                                .verified = verified(r, mode) };
    d->dedupe = r->outcome != TRIGGER_REJECTED && r->outcome != TRIGGER_RETRY;
    if (disabled) {
        snprintf(dv->summary, sizeof(dv->summary),
                 "ignored: the trigger is disabled (%zu "
                 "events matched)",
                 r->nmatched);
        d->summary = dv->summary;
    }
    add_events(dv, t->enabled);
    if (r->outcome == TRIGGER_SUBSCRIBE || r->outcome == TRIGGER_UNSUBSCRIBED) {
        d->sns_topic = r->hook.sns.topic_arn;
        d->sns_subscribe_url = r->outcome == TRIGGER_SUBSCRIBE ? r->subscribe_url : NULL;
        d->sns_unsubscribed = r->outcome == TRIGGER_UNSUBSCRIBED;
    }
}

static void answer(struct delivery *dv)
{
    struct trigger_result *r = &dv->r;
    int status = r->status;
    if (status >= 200 && status < 300) {
        json_t *o =
            json_pack("{s:I,s:s,s:s,s:I}", "delivery", (json_int_t)dv->out.pk, "outcome",
                      dv->out.outcome, "summary", dv->d.summary, "jobs", (json_int_t)dv->out.nnew);
        response_json_new(dv->res, status, o);
        return;
    }
    bool auth = r->err.code == ERR_UNAUTHORIZED || r->err.code == ERR_FORBIDDEN;
    reject(dv->req, dv->res, status, auth ? AUTH_DETAIL : r->err.msg, r->challenge);
}

/* Runs on the store writer thread after COMMIT (or rollback): wake the loop, hand back. */
static void recorded(void *ctx, int rc, struct err *err)
{
    struct delivery *dv = ctx;
    struct api *api = dv->req->api;
    dv->stored = rc == 0;
    if (rc < 0)
        log_error("hook %s: cannot record the delivery: %s", dv->req->request_id, err->msg);
    bool work = dv->out.nnew > 0 || (dv->d.sns_subscribe_url && !dv->out.duplicate);
    if (rc == 0 && work && api->daemon.triggers_pending)
        api->daemon.triggers_pending(api->daemon.ctx);
    request_complete(dv->req);
}

/* Runs on an HTTP thread once the delivery is stored: the answer. */
static void finish(struct request *req, struct response *res)
{
    struct delivery *dv = res->deferred_ctx;
    if (dv->stored)
        answer(dv);
    else
        reject(req, res, trigger_status(dv->r.sender, TRIGGER_RETRY, ERR_IO),
               "the delivery could not be stored; send it again", false);
    res->deferred_ctx = NULL;
    delivery_free(dv);
}

static void start_record(struct request *req, struct response *res)
{
    (void)req;
    struct delivery *dv = res->deferred_ctx;
    store_delivery_record_async(req->api->store, &dv->d, &dv->out, recorded, dv);
}

void hooks_s3(struct request *req, struct response *res)
{
    struct err err;
    err_init(&err);
    struct trigger_def *t = store_trigger_get(req->api->store, req->params[0], &err);
    if (!t && err.code != ERR_NOT_FOUND) {
        reject(req, res, 503, "the trigger could not be read; send it again", false);
        goto out;
    }
    if (!t || strcmp(t->id, req->params[0]) != 0) {
        unknown_trigger(req, res);
        goto out;
    }
    struct triggercfg cfg;
    if (triggercfg_load(&cfg, t->rule, t->auth, t->secrets, t->sender, &err) < 0) {
        log_error("hook %s: trigger %s does not load: %s", req->request_id, t->id, err.msg);
        reject(req, res, 503, "the trigger's configuration is broken", false);
        triggercfg_release(&cfg);
        goto out;
    }
    cfg.t.limits.max_body = req->api->hook_max_body;
    struct delivery *dv = XNEW(struct delivery);
    dv->req = req;
    dv->res = res;
    trigger_result_init(&dv->r);
    struct hook_request hr = { header_of, req, req->body, req->body_len };
    trigger_receive(&cfg.t, &hr, req->api->sns, clock_now_ns(), &dv->r);
    describe(dv, t, cfg.t.auth.mode);
    triggercfg_release(&cfg);
    if (!dv->d.verified) {
        unauthenticated(req, res, dv, t);
        delivery_free(dv);
        goto out;
    }
    res->deferred = start_record;
    res->finish = finish;
    res->deferred_ctx = dv;
out:
    trigger_def_free(t);
    err_release(&err);
}
