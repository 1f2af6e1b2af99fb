/*
 * webhooks: the outbound webhook routes (admin). A webhook is a URL, the job events it wants, a
 * Standard Webhooks secret (made when not given, shown once) and a format (standard JSON or
 * Slack). Handlers only record: the test button queues a message in the outbox and the delivery
 * loop (server/outbound/notifier.c) sends it, so no handler waits on a receiver. A URL whose
 * host resolves to a loopback, link-local or cloud metadata address is refused when saved
 * (unless --webhook-allow-local), and the sender checks each address it connects to.
 */
#include "api/handlers.h"
#include "core/addrpolicy.h"
#include "core/clock.h"
#include "core/crypto.h"
#include "core/httpc.h"
#include "core/jsonx.h"
#include "core/parse.h"
#include "core/xalloc.h"
#include "trigger/stdwebhook.h"
#include "trigger/webhook.h"
#include "store/webhooks.h"

static const char *const webhook_keys[] = {
    "name", "url", "events", "secret", "format", "enabled"
};

struct webhook_req {
    struct webhook_put put;
    char id[32];
    char *events;
    char *secret;
    bool made_secret;
};

static void unknown_fields(const json_t *doc, struct err *err)
{
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)doc, k, v)
    {
        bool ok = false;
        for (size_t i = 0; i < sizeof(webhook_keys) / sizeof(webhook_keys[0]); i++)
            ok |= strcmp(k, webhook_keys[i]) == 0;
        if (!ok) {
            char ptr[160];
            snprintf(ptr, sizeof(ptr), "/%.100s", k);
            err_field(err, ptr, "is not a known field");
        }
    }
}

static bool valid_url(const char *u)
{
    if (!u || strlen(u) > 2048 || (strncmp(u, "http://", 7) != 0 && strncmp(u, "https://", 8) != 0))
        return false;
    for (const char *p = u; *p; p++)
        if ((unsigned char)*p <= 0x20 || *p == 0x7f)
            return false;
    return strlen(u) > (u[4] == 's' ? 8u : 7u);
}

/* The events list (default: every job event), as JSON text. */
static char *parse_events(const json_t *events, struct err *err)
{
    json_t *out = json_array();
    if (!events) {
        for (int e = 0; e < WEBHOOK_TEST; e++)
            json_array_append_new(out, json_string(webhook_event_name((enum webhook_event)e)));
    } else if (!json_is_array(events) || json_array_size(events) == 0) {
        err_field(err, "/events", "must be a list of events, e.g. [\"job.failed\"]");
    }
    size_t i;
    json_t *v;
    json_array_foreach(events, i, v)
    {
        enum webhook_event e;
        const char *name = json_string_value(v);
        if (!name || webhook_event_parse(name, &e) < 0 || e == WEBHOOK_TEST) {
            char ptr[48];
            snprintf(ptr, sizeof(ptr), "/events/%zu", i);
            err_field(err, ptr,
                      "must be job.accepted, job.started, job.succeeded, job.failed, "
                      "job.cancelled, job.stalled or job.restarted");
        } else {
            json_array_append_new(out, json_string(name));
        }
    }
    char *text = jsonx_dumps(out);
    json_decref(out);
    return text;
}

/* The URL's host, resolved, must not be loopback, link-local or a metadata address
 * (core/addrpolicy.h); the sender checks again where it connects. */
static void check_destination(const char *url, struct err *err)
{
    struct httpc_url u;
    struct err why;
    err_init(&why);
    if (httpc_url_parse(url, &u, &why) < 0 || !u.host)
        err_field(err, "/url", "is not a URL with a host");
    else if (addrpolicy_check_host(u.host, &why) < 0)
        err_field(err, "/url",
                  "%s: webhooks may not reach it (the daemon's --webhook-allow-local allows it)",
                  why.msg);
    httpc_url_release(&u);
    err_release(&why);
}

static int webhook_request(const json_t *doc, bool create, bool allow_local, struct webhook_req *w,
                           struct err *err)
{
    memset(w, 0, sizeof(*w));
    if (!json_is_object(doc))
        return err_field(err, "/", "must be an object");
    unknown_fields(doc, err);
    struct webhook_put *p = &w->put;
    p->name = jsonx_str(doc, "name");
    p->url = jsonx_str(doc, "url");
    if (!valid_url(p->url))
        err_field(err, "/url", "is required: an http:// or https:// URL");
    else if (!allow_local)
        check_destination(p->url, err);
    w->events = parse_events(json_object_get(doc, "events"), err);
    p->events = w->events;
    p->format = jsonx_str(doc, "format") ? jsonx_str(doc, "format") : "standard";
    if (strcmp(p->format, "standard") != 0 && strcmp(p->format, "slack") != 0)
        err_field(err, "/format", "must be standard or slack");
    json_t *enabled = json_object_get(doc, "enabled");
    if (enabled && !json_is_boolean(enabled))
        err_field(err, "/enabled", "must be true or false");
    p->enabled = enabled ? json_is_true(enabled) : true;
    const char *secret = jsonx_str(doc, "secret");
    struct buf key = BUF_INIT;
    struct err e;
    err_init(&e);
    if (secret && stdwebhook_key(secret, &key, &e) < 0)
        err_field(err, "/secret",
                  "must be whsec_ followed by the base64 of at least 16 random bytes: %s", e.msg);
    buf_release(&key);
    err_release(&e);
    if (secret) {
        w->secret = xstrdup(secret);
    } else if (create) {
        w->secret = stdwebhook_new_secret();
        w->made_secret = true;
    }
    p->secret = w->secret;
    return err_is_set(err) ? -1 : 0;
}

static json_t *webhook_json(const struct webhook_def *w)
{
    char hex[SHA256_HEX_LEN];
    crypto_sha256_hex(w->secret, strlen(w->secret), hex);
    hex[12] = '\0';
    json_t *events = json_loads(w->events, 0, NULL);
    json_t *o =
        json_pack("{s:s,s:s,s:s,s:o,s:s,s:b,s:s+,s:s}", "id", w->id, "name", w->name, "url", w->url,
                  "events", events ? events : json_array(), "format", w->format, "enabled",
                  w->enabled, "secret_fingerprint", "sha256:", hex, "created_by", w->created_by);
    jsonx_set_str(o, "disabled_reason", *w->disabled_reason ? w->disabled_reason : NULL);
    jsonx_set_time(o, "created_at", w->created_at);
    jsonx_set_time(o, "updated_at", w->updated_at);
    return o;
}

static void respond_webhook(struct request *req, struct response *res, int status, const char *id,
                            const char *shown_secret)
{
    struct err err;
    err_init(&err);
    struct webhook_def *w = store_webhook_get(req->api->store, id, &err);
    if (w) {
        json_t *o = webhook_json(w);
        if (shown_secret) {
            json_object_set_new(o, "secret", json_string(shown_secret));
            json_object_set_new(o, "note",
                                json_string("store the secret now: it is not shown "
                                            "again"));
        }
        response_json_new(res, status, o);
    } else {
        problem_respond(req, res, &err);
    }
    webhook_def_free(w);
    err_release(&err);
}

static void save(struct request *req, struct response *res, const struct webhook_def *old)
{
    json_t *doc = request_body_doc(req, res);
    if (!doc)
        return;
    struct err err;
    err_init(&err);
    struct webhook_req w;
    int rc = webhook_request(doc, !old, req->api->webhook_allow_local, &w, &err);
    w.put.actor = req->who.name;
    w.put.request_id = req->request_id;
    w.put.now = clock_now_ns();
    if (old) {
        w.put.id = old->id;
    } else {
        memcpy(w.id, "whk_", 4);
        crypto_random_id(w.id + 4, 20);
        w.put.id = w.id;
    }
    if (rc == 0)
        rc = old ? store_webhook_update(req->api->store, &w.put, &err)
                 : store_webhook_insert(req->api->store, &w.put, &err);
    if (rc == 0)
        respond_webhook(req, res, old ? 200 : 201, w.put.id, old ? NULL : w.secret);
    else
        problem_respond(req, res, &err);
    free(w.events);
    free(w.secret);
    json_decref(doc);
    err_release(&err);
}

void webhooks_create(struct request *req, struct response *res)
{
    save(req, res, NULL);
}

static struct webhook_def *load(struct request *req, struct response *res)
{
    struct err err;
    err_init(&err);
    struct webhook_def *w = store_webhook_get(req->api->store, req->params[0], &err);
    if (!w)
        problem_respond(req, res, &err);
    err_release(&err);
    return w;
}

void webhooks_update(struct request *req, struct response *res)
{
    struct webhook_def *old = load(req, res);
    if (old)
        save(req, res, old);
    webhook_def_free(old);
}

void webhooks_get(struct request *req, struct response *res)
{
    struct webhook_def *w = load(req, res);
    if (w)
        response_json_new(res, 200, webhook_json(w));
    webhook_def_free(w);
}

void webhooks_list(struct request *req, struct response *res)
{
    struct err err;
    err_init(&err);
    struct webhook_def **w;
    size_t n;
    if (store_webhook_list(req->api->store, false, &w, &n, &err) < 0) {
        problem_respond(req, res, &err);
        err_release(&err);
        return;
    }
    json_t *items = json_array();
    for (size_t i = 0; i < n; i++)
        json_array_append_new(items, webhook_json(w[i]));
    webhook_defs_free(w, n);
    response_json_new(res, 200, json_pack("{s:o}", "items", items));
}

void webhooks_delete(struct request *req, struct response *res)
{
    struct webhook_def *w = load(req, res);
    struct err err;
    err_init(&err);
    if (w && store_webhook_delete(req->api->store, w->id, req->who.name, req->request_id, &err) < 0)
        problem_respond(req, res, &err);
    else if (w)
        res->status = 204;
    webhook_def_free(w);
    err_release(&err);
}

void webhooks_test(struct request *req, struct response *res)
{
    struct webhook_def *w = load(req, res);
    if (!w)
        return;
    int64_t now = clock_now_ns();
    char msg_id[WEBHOOK_ID_LEN];
    webhook_new_id(msg_id);
    struct webhook_job job = { .id = "test",
                               .name = "webhook-test",
                               .state = "succeeded",
                               .reason = "Test",
                               .message = "sent by POST /v1/webhooks/{id}/test",
                               .url = req->api->public_url,
                               .time_ns = now };
    char *body = webhook_body(WEBHOOK_TEST, &job, strcmp(w->format, "slack") == 0, now);
    struct outbox_new m = {
        .webhook_pk = w->pk, .msg_id = msg_id, .event = "webhook.test", .job_id = "", .body = body
    };
    struct err err;
    err_init(&err);
    if (store_outbox_add(req->api->store, &m, 1, 0, 0, now, &err) < 0) {
        problem_respond(req, res, &err);
    } else {
        if (req->api->daemon.webhooks_pending)
            req->api->daemon.webhooks_pending(req->api->daemon.ctx);
        json_t *o = json_pack("{s:s,s:s,s:b}", "message_id", msg_id, "event", "webhook.test",
                              "queued", true);
        if (!w->enabled)
            json_object_set_new(o, "note",
                                json_string("the webhook is disabled: the message "
                                            "waits until it is enabled"));
        response_json_new(res, 202, o);
    }
    free(body);
    webhook_def_free(w);
    err_release(&err);
}

void webhooks_deliveries(struct request *req, struct response *res)
{
    int limit = 50;
    int64_t before = 0;
    const char *l = request_query(req, "limit"), *b = request_query(req, "before");
    if ((l && parse_int(l, 1, 1000, &limit) < 0) ||
        (b && parse_int64(b, 1, INT64_MAX, &before) < 0)) {
        problem(req, res, ERR_INVALID, "limit must be 1 to 1000 and before a message seq");
        return;
    }
    struct webhook_def *w = load(req, res);
    if (!w)
        return;
    struct err err;
    err_init(&err);
    json_t *items = store_outbox_list(req->api->store, w->pk, before, limit, &err);
    if (items) {
        size_t n = json_array_size(items);
        json_t *last = n == (size_t)limit ? json_array_get(items, n - 1) : NULL;
        json_t *out = json_pack("{s:o}", "items", items);
        json_object_set_new(out, "next_before",
                            last ? json_incref(json_object_get(last, "seq")) : json_null());
        response_json_new(res, 200, out);
    } else {
        problem_respond(req, res, &err);
    }
    webhook_def_free(w);
    err_release(&err);
}
