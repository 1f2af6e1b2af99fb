/*
 * secretenv: hides a spec's secret values (rules in secretenv.h). A spec with nothing that
 * could be a secret is recognised on its text, so the job pages of read tokens pay a parse
 * only for specs with env, a manifest or a credential-looking value. Pure; thread-safe.
 */
#include "job/secretenv.h"

#include <ctype.h>
#include <jansson.h>
#include <string.h>
#include <strings.h>

#include "core/jsonx.h"

/* Parts of a name that say its value is a secret (compared without case). */
static const char *const secret_words[] = {
    "SECRET",      "PASSWORD",    "PASSWD",         "PASSPHRASE",    "TOKEN",
    "APIKEY",      "API_KEY",     "ACCESS_KEY",     "PRIVATE_KEY",   "CREDENTIAL",
    "SESSION_KEY", "SIGNING_KEY", "ENCRYPTION_KEY", "AUTHORIZATION", "COOKIE",
};

/* How credentials of well-known services begin. */
static const char *const secret_prefixes[] = {
    "hf_",   "ghp_",  "gho_",  "ghs_", "ghu_", "github_pat_", "glpat-", "sk-",
    "xoxb-", "xoxp-", "xapp-", "AKIA", "ASIA", "AIza",        "ya29.",  "ty_",
};

#define SECRET_MIN_LEN 16 /* shorter values with such a prefix are words, not tokens */

static bool contains_nocase(const char *s, const char *word)
{
    size_t n = strlen(word);
    for (; *s; s++)
        if (strncasecmp(s, word, n) == 0)
            return true;
    return false;
}

bool secretenv_name(const char *name)
{
    for (size_t i = 0; i < sizeof(secret_words) / sizeof(secret_words[0]); i++)
        if (contains_nocase(name, secret_words[i]))
            return true;
    return false;
}

/* scheme://user:password@host...: a password in the authority part. */
static bool url_with_password(const char *v)
{
    const char *p = strstr(v, "://");
    if (!p)
        return false;
    p += 3;
    size_t auth = strcspn(p, "/?#");
    const char *at = memchr(p, '@', auth);
    return at && memchr(p, ':', (size_t)(at - p)) != NULL;
}

bool secretenv_value(const char *value)
{
    const char *v = value;
    if (v[0] == '-' && strchr(v, '='))
        v = strchr(v, '=') + 1; /* --token=VALUE */
    if (url_with_password(v))
        return true;
    if (strlen(v) < SECRET_MIN_LEN)
        return false;
    for (size_t i = 0; i < sizeof(secret_prefixes) / sizeof(secret_prefixes[0]); i++)
        if (strncmp(v, secret_prefixes[i], strlen(secret_prefixes[i])) == 0)
            return true;
    return false;
}

/* Could the text hold anything to redact? Env with members, a manifest, a URL with an '@', or
 * a value (after a quote or an '=') starting with a credential prefix. */
static bool maybe_secret(const char *spec)
{
    if (strstr(spec, "\"env\":{\"") || strstr(spec, "\"manifest\":") ||
        (strstr(spec, "://") && strchr(spec, '@')))
        return true;
    for (size_t i = 0; i < sizeof(secret_prefixes) / sizeof(secret_prefixes[0]); i++) {
        const char *pre = secret_prefixes[i];
        for (const char *p = spec; (p = strstr(p, pre)) != NULL; p++)
            if (p > spec && (p[-1] == '"' || p[-1] == '='))
                return true;
    }
    return false;
}

static bool redact_string(json_t *holder, const char *key, size_t index, bool by_name)
{
    json_t *v = key ? json_object_get(holder, key) : json_array_get(holder, index);
    const char *s = json_string_value(v);
    if (!s || (!by_name && !secretenv_value(s)))
        return false;
    if (key)
        json_object_set_new(holder, key, json_string(SECRETENV_MARK));
    else
        json_array_set_new(holder, index, json_string(SECRETENV_MARK));
    return true;
}

static bool redact_env(json_t *env)
{
    bool any = false;
    const char *k;
    json_t *v;
    json_object_foreach(env, k, v) any |= redact_string(env, k, 0, secretenv_name(k));
    return any;
}

static bool redact_argv(json_t *argv)
{
    bool any = false;
    for (size_t i = 0; i < json_array_size(argv); i++)
        any |= redact_string(argv, NULL, i, false);
    return any;
}

/* A manifest: every {"name", "value"} pair (container env) and every string of an array
 * (container command and args). */
static bool redact_manifest(json_t *node, int depth)
{
    bool any = false;
    if (depth > 64)
        return false;
    if (json_is_object(node)) {
        const char *name = json_string_value(json_object_get(node, "name"));
        if (name && json_is_string(json_object_get(node, "value")))
            any |= redact_string(node, "value", 0, secretenv_name(name));
        const char *k;
        json_t *v;
        json_object_foreach(node, k, v) any |= redact_manifest(v, depth + 1);
    } else if (json_is_array(node)) {
        any |= redact_argv(node);
        for (size_t i = 0; i < json_array_size(node); i++)
            any |= redact_manifest(json_array_get(node, i), depth + 1);
    }
    return any;
}

bool secretenv_redact(const char *spec, struct buf *out)
{
    if (!spec || !maybe_secret(spec))
        return false;
    json_t *doc = json_loads(spec, JSON_ALLOW_NUL, NULL);
    if (!json_is_object(doc)) {
        json_decref(doc);
        return false;
    }
    bool any = false;
    json_t *env = json_object_get(doc, "env");
    if (json_is_object(env))
        any |= redact_env(env);
    any |= redact_argv(json_object_get(doc, "command"));
    any |= redact_argv(json_object_get(doc, "args"));
    json_t *kube = json_object_get(doc, "kubernetes");
    if (json_is_object(kube) && json_object_get(kube, "manifest"))
        any |= redact_manifest(json_object_get(kube, "manifest"), 0);
    if (any)
        jsonx_dump(out, doc);
    json_decref(doc);
    return any;
}
