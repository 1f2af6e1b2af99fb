/*
 * triggers: the S3 trigger routes (admin). A trigger is saved only when everything it needs
 * works: its rule and auth load (api/triggercfg.c), its template exists and renders with its
 * values. Secrets are shown once, in the answer that created them; the store keeps SHA-256
 * digests for bearer, header and basic secrets (hookauth compares digests) and hmac secrets as
 * they are (they are HMAC keys). Afterwards only fingerprints are shown.
 */
#include "api/handlers.h"
#include "api/triggercfg.h"
#include "core/clock.h"
#include "core/crypto.h"
#include "core/jsonx.h"
#include "job/names.h"
#include "core/parse.h"
#include "core/xalloc.h"
#include "trigger/jobtemplate.h"
#include "trigger/stdwebhook.h"
#include "store/templates.h"

static const char *const trigger_keys[] = { "name", "template", "values", "sender",
                                            "rule", "auth",     "enabled" };

/* A request turned into what the store keeps; owns every string put points to. */
struct trigger_req {
    struct trigger_put put;
    char id[32];
    char *values, *rule, *auth, *secrets;
    json_t *shown; /* secrets given or made by this request, shown once; NULL: kept */
};

static void trigger_req_release(struct trigger_req *t)
{
    free(t->values);
    free(t->rule);
    free(t->auth);
    free(t->secrets);
    json_decref(t->shown);
}

static char *new_secret(enum hookauth_mode mode)
{
    char rnd[41];
    crypto_random_id(rnd, 40);
    if (mode == HOOKAUTH_HMAC)
        return stdwebhook_new_secret();
    if (mode == HOOKAUTH_BASIC)
        return xasprintf("trainyard:%s", rnd);
    return xasprintf("tyh_%s", rnd);
}

/* The secrets to store: digests where hookauth can compare digests, else as given. */
static char *stored_secrets(enum hookauth_mode mode, const json_t *plain)
{
    json_t *out = json_array();
    size_t i;
    json_t *v;
    json_array_foreach(plain, i, v)
    {
        char *h = hookauth_hash(mode, json_string_value(v));
        json_array_append_new(out, json_string(h ? h : json_string_value(v)));
        free(h);
    }
    char *text = jsonx_dumps(out);
    json_decref(out);
    return text;
}

/* Checks that the template exists and renders with these values (built-ins as placeholders). */
static void check_values(struct request *req, const char *tname, const json_t *values,
                         struct err *err)
{
    struct err e;
    err_init(&e);
    struct template_def *t = store_template_get(req->api->store, tname, &e);
    if (!t) {
        err_field(err, "/template", "no template named '%s'", tname);
        err_release(&e);
        return;
    }
    struct jobtemplate_values vals;
    jobtemplate_values_init(&vals);
    struct s3event ev = { .bucket = "bucket",
                          .key = "key",
                          .size = 1,
                          .etag = "e",
                          .version_id = "v",
                          .sequencer = "",
                          .event_name = "ObjectCreated:Put",
                          .event_time = "2026-01-01T00:00:00.000Z",
                          .region = "",
                          .event_id = "" };
    jobtemplate_values_from_event(&vals, &ev);
    json_t *tmpl = json_loads(t->spec, 0, NULL);
    json_t *spec = NULL;
    if ((!values || jobtemplate_values_from_json(&vals, values, "/values", err) == 0) && tmpl &&
        !(spec = jobtemplate_render(tmpl, &vals, &e))) {
        for (size_t i = 0; i < e.nfields; i++)
            err_field(err, e.fields[i].pointer, "%s", e.fields[i].message);
    }
    json_decref(spec);
    json_decref(tmpl);
    jobtemplate_values_release(&vals);
    template_def_free(t);
    err_release(&e);
}

/* Splits auth into what is stored in the clear and the secrets; makes secrets when none are
 * given and old (the stored ones) cannot be kept. */
static void parse_auth(const json_t *auth, const struct trigger_def *old, struct trigger_req *t,
                       json_t **plain, struct err *err)
{
    enum hookauth_mode mode = HOOKAUTH_NONE, old_mode = HOOKAUTH_NONE;
    const char *m = jsonx_str(auth, "mode");
    if (m)
        hookauth_mode_parse(m, &mode);
    json_t *clear = json_deep_copy(auth);
    json_object_del(clear, "secrets");
    t->auth = jsonx_dumps(clear);
    json_decref(clear);
    json_t *given = json_object_get(auth, "secrets");
    json_t *old_auth = old ? json_loads(old->auth, 0, NULL) : NULL;
    if (old_auth && jsonx_str(old_auth, "mode"))
        hookauth_mode_parse(jsonx_str(old_auth, "mode"), &old_mode);
    json_decref(old_auth);
    if (given && mode == HOOKAUTH_SNS) {
        err_field(err, "/auth/secrets",
                  "sns authentication takes no secrets (it checks the "
                  "message signature; list topic_arns)");
    } else if (given) {
        *plain = json_incref(given);
    } else if (old && mode == old_mode) {
        *plain = NULL; /* keep the stored ones */
    } else {
        *plain = json_array();
        if (mode != HOOKAUTH_SNS && mode != HOOKAUTH_NONE) {
            char *s = new_secret(mode);
            json_array_append_new(*plain, json_string(s));
            free(s);
        }
    }
}

static void unknown_fields(const json_t *doc, struct err *err)
{
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)doc, k, v)
    {
        bool ok = false;
        for (size_t i = 0; i < sizeof(trigger_keys) / sizeof(trigger_keys[0]); i++)
            ok |= strcmp(k, trigger_keys[i]) == 0;
        if (!ok) {
            char ptr[160];
            snprintf(ptr, sizeof(ptr), "/%.100s", k);
            err_field(err, ptr, "is not a known field");
        }
    }
}

static void parse_common(struct request *req, const json_t *doc, struct trigger_req *t,
                         struct err *err)
{
    struct trigger_put *p = &t->put;
    p->template_name = jsonx_str(doc, "template");
    if (!p->template_name)
        err_field(err, "/template", "is required: the name of a job template");
    json_t *values = json_object_get(doc, "values");
    json_t *rule = json_object_get(doc, "rule");
    json_t *enabled = json_object_get(doc, "enabled");
    p->sender = jsonx_str(doc, "sender") ? jsonx_str(doc, "sender") : "auto";
    if (json_object_get(doc, "sender") && !jsonx_str(doc, "sender"))
        err_field(err, "/sender", "must be auto, s3, sns, eventbridge or minio");
    if (values && !json_is_object(values))
        err_field(err, "/values", "must be an object of template values");
    if (rule && !json_is_object(rule))
        err_field(err, "/rule", "must be an object");
    if (enabled && !json_is_boolean(enabled))
        err_field(err, "/enabled", "must be true or false");
    p->enabled = enabled ? json_is_true(enabled) : true;
    t->values = values ? jsonx_dumps(values) : xstrdup("{}");
    t->rule = rule ? jsonx_dumps(rule) : xstrdup("{}");
    p->values = t->values;
    p->rule = t->rule;
    if (p->template_name && (!values || json_is_object(values)))
        check_values(req, p->template_name, values, err);
}

/* Reads a create (old NULL) or replace request into t; 0 or -1 with field errors. */
static int trigger_request(struct request *req, const json_t *doc, const struct trigger_def *old,
                           struct trigger_req *t, struct err *err)
{
    memset(t, 0, sizeof(*t));
    if (!json_is_object(doc))
        return err_field(err, "/", "must be an object");
    unknown_fields(doc, err);
    struct trigger_put *p = &t->put;
    const char *name = jsonx_str(doc, "name");
    if (old && name && strcmp(name, old->name) != 0)
        err_field(err, "/name", "a trigger cannot be renamed");
    else if (!old && (!name || names_dns1123_subdomain(name)))
        err_field(err, "/name", "is required: lowercase letters, digits, '-' and '.'");
    p->name = old ? old->name : name;
    parse_common(req, doc, t, err);
    json_t *auth = json_object_get(doc, "auth");
    json_t *plain = NULL;
    if (!auth && old) {
        t->auth = xstrdup(old->auth);
    } else if (!json_is_object(auth)) {
        err_field(err, "/auth",
                  "is required: {\"mode\": \"hmac\"} (or bearer, header, basic, sns)");
    } else {
        parse_auth(auth, old, t, &plain, err);
    }
    p->auth = t->auth;
    if (err_is_set(err)) {
        json_decref(plain);
        return -1;
    }
    char *check = plain ? jsonx_dumps(plain) : NULL;
    struct triggercfg cfg;
    int rc = triggercfg_load(&cfg, t->rule, t->auth,
                             check ? check
                             : old ? old->secrets
                                   : "[]",
                             p->sender, err);
    enum hookauth_mode mode = cfg.t.auth.mode;
    triggercfg_release(&cfg);
    free(check);
    if (rc == 0 && plain) {
        t->secrets = stored_secrets(mode, plain);
        p->secrets = t->secrets;
        t->shown = json_incref(plain);
    }
    json_decref(plain);
    return rc;
}

static json_t *fingerprints(const char *secrets)
{
    json_t *arr = json_loads(secrets, 0, NULL), *out = json_array();
    size_t i;
    json_t *v;
    json_array_foreach(arr, i, v)
    {
        const char *s = json_string_value(v);
        const char *colon = s ? strchr(s, ':') : NULL;
        char hex[SHA256_HEX_LEN];
        if (colon && strncmp(s, "sha256", 6) == 0)
            snprintf(hex, sizeof(hex), "%s", colon + 1);
        else
            crypto_sha256_hex(s ? s : "", s ? strlen(s) : 0, hex);
        hex[12] = '\0';
        json_array_append_new(out, json_pack("{s:s+}", "fingerprint", "sha256:", hex));
    }
    json_decref(arr);
    return out;
}

static json_t *trigger_json(struct api *api, const struct trigger_def *t)
{
    json_t *values = json_loads(t->values, 0, NULL), *rule = json_loads(t->rule, 0, NULL);
    json_t *auth = json_loads(t->auth, 0, NULL);
    if (!auth)
        auth = json_object();
    json_object_set_new(auth, "secrets", fingerprints(t->secrets));
    json_t *o = json_pack("{s:s,s:s,s:s,s:o,s:s,s:o,s:o,s:b,s:s}", "id", t->id, "name", t->name,
                          "template", t->template_name, "values", values ? values : json_object(),
                          "sender", t->sender, "rule", rule ? rule : json_object(), "auth", auth,
                          "enabled", t->enabled, "created_by", t->created_by);
    json_object_set_new(
        o, "hook_url",
        json_sprintf("%s/v1/hooks/s3/%s", api->public_url ? api->public_url : "", t->id));
    jsonx_set_time(o, "created_at", t->created_at);
    jsonx_set_time(o, "updated_at", t->updated_at);
    return o;
}

/* Answers with the stored trigger, plus the secrets this request set (shown once). */
static void respond_trigger(struct request *req, struct response *res, int status, const char *id,
                            json_t *shown)
{
    struct err err;
    err_init(&err);
    struct trigger_def *t = store_trigger_get(req->api->store, id, &err);
    json_t *o = t ? trigger_json(req->api, t) : NULL;
    json_t *subs = t ? store_sns_list(req->api->store, t->pk, &err) : NULL;
    if (o && subs)
        json_object_set_new(o, "sns_subscriptions", subs);
    if (o && shown) {
        json_object_set(o, "secrets", shown);
        json_object_set_new(o, "note",
                            json_string("store the secrets now: they are not shown "
                                        "again"));
    }
    if (o && !err_is_set(&err))
        response_json_new(res, status, o);
    else {
        json_decref(o);
        problem_respond(req, res, &err);
    }
    trigger_def_free(t);
    err_release(&err);
}

static void save(struct request *req, struct response *res, struct trigger_def *old)
{
    json_t *doc = request_body_doc(req, res);
    if (!doc)
        return;
    struct err err;
    err_init(&err);
    struct trigger_req t;
    int rc = trigger_request(req, doc, old, &t, &err);
    t.put.actor = req->who.name;
    t.put.request_id = req->request_id;
    t.put.now = clock_now_ns();
    if (old) {
        t.put.id = old->id;
    } else {
        memcpy(t.id, "trg_", 4);
        crypto_random_id(t.id + 4, 20);
        t.put.id = t.id;
    }
    if (rc == 0)
        rc = old ? store_trigger_update(req->api->store, &t.put, &err)
                 : store_trigger_insert(req->api->store, &t.put, &err);
    if (rc == 0)
        respond_trigger(req, res, old ? 200 : 201, t.put.id, t.shown);
    else
        problem_respond(req, res, &err);
    trigger_req_release(&t);
    json_decref(doc);
    err_release(&err);
}

void triggers_create(struct request *req, struct response *res)
{
    save(req, res, NULL);
}

/* The trigger named in the path (id or name); NULL with the response set. */
static struct trigger_def *load(struct request *req, struct response *res)
{
    struct err err;
    err_init(&err);
    struct trigger_def *t = store_trigger_get(req->api->store, req->params[0], &err);
    if (!t)
        problem_respond(req, res, &err);
    err_release(&err);
    return t;
}

void triggers_update(struct request *req, struct response *res)
{
    struct trigger_def *old = load(req, res);
    if (old)
        save(req, res, old);
    trigger_def_free(old);
}

void triggers_get(struct request *req, struct response *res)
{
    struct trigger_def *t = load(req, res);
    if (t)
        respond_trigger(req, res, 200, t->id, NULL);
    trigger_def_free(t);
}

void triggers_list(struct request *req, struct response *res)
{
    struct err err;
    err_init(&err);
    struct trigger_def **t;
    size_t n;
    if (store_trigger_list(req->api->store, &t, &n, &err) < 0) {
        problem_respond(req, res, &err);
        err_release(&err);
        return;
    }
    json_t *items = json_array();
    for (size_t i = 0; i < n; i++)
        json_array_append_new(items, trigger_json(req->api, t[i]));
    trigger_defs_free(t, n);
    response_json_new(res, 200, json_pack("{s:o}", "items", items));
}

void triggers_delete(struct request *req, struct response *res)
{
    struct trigger_def *t = load(req, res);
    struct err err;
    err_init(&err);
    if (t && store_trigger_delete(req->api->store, t->id, req->who.name, req->request_id, &err) < 0)
        problem_respond(req, res, &err);
    else if (t)
        res->status = 204;
    trigger_def_free(t);
    err_release(&err);
}

void triggers_deliveries(struct request *req, struct response *res)
{
    int limit = 50;
    int64_t before = 0;
    const char *l = request_query(req, "limit"), *b = request_query(req, "before");
    if ((l && parse_int(l, 1, 1000, &limit) < 0) ||
        (b && parse_int64(b, 1, INT64_MAX, &before) < 0)) {
        problem(req, res, ERR_INVALID, "limit must be 1 to 1000 and before a delivery id");
        return;
    }
    struct trigger_def *t = load(req, res);
    if (!t)
        return;
    struct err err;
    err_init(&err);
    json_t *items = store_delivery_list(req->api->store, t->pk, before, limit, &err);
    if (items) {
        size_t n = json_array_size(items);
        json_t *last = n == (size_t)limit ? json_array_get(items, n - 1) : NULL;
        json_t *out = json_pack("{s:o}", "items", items);
        json_object_set_new(out, "next_before",
                            last ? json_incref(json_object_get(last, "id")) : json_null());
        response_json_new(res, 200, out);
    } else {
        problem_respond(req, res, &err);
    }
    trigger_def_free(t);
    err_release(&err);
}
