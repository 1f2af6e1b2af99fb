/*
 * triggercfg: parsing a trigger's stored rule and auth JSON into the library's struct trigger.
 * Used per hook request (api/hooks.c) and when a trigger is saved (api/triggers.c), so whatever
 * was saved loads. No I/O; thread-safe.
 */
#include "api/triggercfg.h"

#include "core/jsonx.h"
#include "core/xalloc.h"

static const char *const rule_keys[] = { "bucket", "prefix", "suffix", "events", "min_size" };
static const char *const auth_keys[] = { "mode", "header", "topic_arns", "tolerance_s", "secrets" };

static bool known(const char *key, const char *const *keys, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(key, keys[i]) == 0)
            return true;
    return false;
}

static json_t *object(const char *text, const char *where, struct err *err)
{
    json_t *o = json_loads(text ? text : "{}", 0, NULL);
    if (!json_is_object(o))
        err_field(err, where, "must be an object");
    return o;
}

/* An array of strings at obj[key] (absent: none) as a NULL-free list borrowed from obj. */
static const char **strings(const json_t *arr, const char *where, size_t *n, struct err *err)
{
    *n = 0;
    if (!arr)
        return NULL;
    if (!json_is_array(arr)) {
        err_field(err, where, "must be an array of strings");
        return NULL;
    }
    const char **out = xcalloc(json_array_size(arr) + 1, sizeof(*out));
    size_t i;
    json_t *v;
    json_array_foreach(arr, i, v)
    {
        if (json_is_string(v)) {
            out[(*n)++] = json_string_value(v);
        } else {
            char ptr[64];
            snprintf(ptr, sizeof(ptr), "%s/%zu", where, i);
            err_field(err, ptr, "must be a string");
        }
    }
    return out;
}

static void optional_str(const json_t *o, const char *key, const char **out, const char *where,
                         struct err *err)
{
    json_t *v = json_object_get(o, key);
    if (!v || json_is_null(v))
        return;
    if (json_is_string(v))
        *out = json_string_value(v);
    else
        err_field(err, where, "must be a string");
}

static void unknown_keys(const json_t *o, const char *const *keys, size_t n, const char *where,
                         struct err *err)
{
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)o, k, v)
    {
        if (!known(k, keys, n)) {
            char ptr[160];
            snprintf(ptr, sizeof(ptr), "%s/%.100s", where, k);
            err_field(err, ptr, "is not a known field");
        }
    }
}

static void load_rule(struct triggercfg *c, struct err *err)
{
    struct triggerrule *r = &c->t.rule;
    unknown_keys(c->rule, rule_keys, 5, "/rule", err);
    optional_str(c->rule, "bucket", &r->bucket, "/rule/bucket", err);
    optional_str(c->rule, "prefix", &r->prefix, "/rule/prefix", err);
    optional_str(c->rule, "suffix", &r->suffix, "/rule/suffix", err);
    c->events = strings(json_object_get(c->rule, "events"), "/rule/events", &r->nevents, err);
    r->events = c->events;
    json_t *size = json_object_get(c->rule, "min_size");
    if (size && !(json_is_integer(size) && json_integer_value(size) >= 0))
        err_field(err, "/rule/min_size", "must be a number of bytes, 0 or more");
    else if (size)
        r->min_size = json_integer_value(size);
}

static void load_auth(struct triggercfg *c, struct err *err)
{
    struct hookauth *a = &c->t.auth;
    const char *mode = jsonx_str(c->auth, "mode");
    unknown_keys(c->auth, auth_keys, 5, "/auth", err);
    if (!mode || hookauth_mode_parse(mode, &a->mode) < 0 || a->mode == HOOKAUTH_NONE)
        err_field(err, "/auth/mode", "must be bearer, header, basic, hmac or sns");
    optional_str(c->auth, "header", &a->header, "/auth/header", err);
    c->topics =
        strings(json_object_get(c->auth, "topic_arns"), "/auth/topic_arns", &a->ntopics, err);
    a->topic_arns = c->topics;
    json_t *tol = json_object_get(c->auth, "tolerance_s");
    if (tol &&
        !(json_is_integer(tol) && json_integer_value(tol) >= 1 && json_integer_value(tol) <= 3600))
        err_field(err, "/auth/tolerance_s", "must be 1 to 3600 seconds");
    else if (tol)
        a->tolerance_s = json_integer_value(tol);
    c->secret_list = strings(c->secrets, "/auth/secrets", &a->nsecrets, err);
    a->secrets = c->secret_list;
}

int triggercfg_load(struct triggercfg *c, const char *rule, const char *auth, const char *secrets,
                    const char *sender, struct err *err)
{
    memset(c, 0, sizeof(*c));
    c->rule = object(rule, "/rule", err);
    c->auth = object(auth, "/auth", err);
    c->secrets = json_loads(secrets ? secrets : "[]", 0, NULL);
    if (err_is_set(err))
        return -1;
    if (sender && hook_sender_parse(sender, &c->t.sender) < 0)
        err_field(err, "/sender", "must be auto, s3, sns, eventbridge or minio");
    load_rule(c, err);
    load_auth(c, err);
    if (err_is_set(err))
        return -1;
    if (triggerrule_validate(&c->t.rule, err) < 0 || hookauth_validate(&c->t.auth, err) < 0)
        return -1;
    return 0;
}

void triggercfg_release(struct triggercfg *c)
{
    json_decref(c->rule);
    json_decref(c->auth);
    json_decref(c->secrets);
    free(c->events);
    free(c->secret_list);
    free(c->topics);
    memset(c, 0, sizeof(*c));
}

json_t *triggercfg_event_json(const struct s3event *e)
{
    json_t *o =
        json_pack("{s:s,s:s,s:I}", "bucket", e->bucket, "key", e->key, "size", (json_int_t)e->size);
    jsonx_set_str(o, "etag", e->etag);
    jsonx_set_str(o, "version_id", e->version_id);
    jsonx_set_str(o, "sequencer", e->sequencer);
    jsonx_set_str(o, "event_name", e->event_name);
    jsonx_set_str(o, "event_time", e->event_time);
    jsonx_set_str(o, "source", s3event_source_name(e->source));
    jsonx_set_str(o, "event_id", e->event_id);
    return o;
}

static char *str_or_empty(const json_t *j, const char *key)
{
    const char *s = jsonx_str(j, key);
    return (char *)(s ? s : "");
}

int triggercfg_event_from_json(const json_t *j, struct s3event *e)
{
    memset(e, 0, sizeof(*e));
    if (!jsonx_str(j, "bucket") || !jsonx_str(j, "key"))
        return -1;
    e->bucket = str_or_empty(j, "bucket");
    e->key = str_or_empty(j, "key");
    e->size = jsonx_int(j, "size", -1);
    e->etag = str_or_empty(j, "etag");
    e->version_id = str_or_empty(j, "version_id");
    e->sequencer = str_or_empty(j, "sequencer");
    e->event_name = str_or_empty(j, "event_name");
    e->event_time = str_or_empty(j, "event_time");
    e->region = "";
    e->event_id = str_or_empty(j, "event_id");
    return 0;
}
