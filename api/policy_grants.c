/*
 * policy_grants: matching a job's namespaces, accounts, claims, images and node labels against
 * a policy's grants and the daemon's own names (see policy_grants.h). Pure; thread-safe.
 */
#include "api/policy_grants.h"

#include <ctype.h>
#include <stdio.h>
#include <strings.h>

#include "core/buf.h"
#include "core/jsonx.h"
#include "job/names.h"

#define LIST_MAX    256 /* entries of one grant list, values of one node label */
#define PATTERN_MAX 253 /* bytes of one pattern (a DNS subdomain's most) */
#define LABELS_MAX  64  /* node label keys of one policy */

static const char *const list_fields[] = {
    [POLICY_NAMESPACE] = "namespaces",
    [POLICY_SERVICE_ACCOUNT] = "service_accounts",
    [POLICY_VOLUME_CLAIM] = "volume_claims",
    [POLICY_IMAGE] = "image_registries",
};

static const char *const nouns[] = {
    [POLICY_NAMESPACE] = "namespace",
    [POLICY_SERVICE_ACCOUNT] = "service account",
    [POLICY_VOLUME_CLAIM] = "volume claim",
    [POLICY_IMAGE] = "image",
};

/* A name, a prefix ending in '*' ("team-*"), or "*". */
static bool name_matches(const char *pattern, const char *s)
{
    size_t n = strlen(pattern);
    if (n > 0 && pattern[n - 1] == '*')
        return strncmp(pattern, s, n - 1) == 0;
    return strcmp(pattern, s) == 0;
}

/* A registry host or repository prefix, matched on whole path segments ("nvcr.io/nvidia" is not
 * "nvcr.io/nvidia-evil"); "*" is any. */
static bool registry_matches(const char *pattern, const char *repository)
{
    if (strcmp(pattern, "*") == 0)
        return true;
    size_t n = strlen(pattern);
    return strncmp(pattern, repository, n) == 0 && (repository[n] == '\0' || repository[n] == '/');
}

/* Whether s is one of the comma-separated names in list. */
static bool in_list(const char *list, const char *s)
{
    size_t len = strlen(s);
    for (const char *p = list; p && *p;) {
        const char *comma = strchr(p, ',');
        size_t n = comma ? (size_t)(comma - p) : strlen(p);
        if (n == len && len > 0 && strncmp(p, s, n) == 0)
            return true;
        p = comma ? comma + 1 : NULL;
    }
    return false;
}

/* The entries of a grant list, for a refusal: "a, b, c" or "none". */
static void describe(const json_t *list, char *out, size_t size)
{
    struct buf b = BUF_INIT;
    size_t i;
    json_t *e;
    json_array_foreach(list, i, e)
    {
        if (b.len > 160) {
            buf_puts(&b, ", ...");
            break;
        }
        buf_printf(&b, "%s%s", i ? ", " : "", json_string_value(e) ? json_string_value(e) : "?");
    }
    snprintf(out, size, "%s", b.len ? buf_cstr(&b) : "none");
    buf_release(&b);
}

void policy_grants_repository(const char *image, char *out, size_t size)
{
    char ref[600];
    size_t n = 0;
    for (const char *p = image; *p && *p != '@' && n + 1 < sizeof(ref); p++)
        ref[n++] = (char)tolower((unsigned char)*p);
    ref[n] = '\0';
    char *slash = strrchr(ref, '/'), *colon = strrchr(ref, ':');
    if (colon && colon > (slash ? slash : ref)) /* a tag; "host:5000/x" keeps its port */
        *colon = '\0';
    char *first = strchr(ref, '/');
    const char *domain = "docker.io", *path = ref;
    if (first) {
        *first = '\0';
        bool host = strchr(ref, '.') || strchr(ref, ':') || strcmp(ref, "localhost") == 0;
        if (host) {
            domain = ref;
            path = first + 1;
        } else {
            *first = '/';
        }
    }
    if (!strcmp(domain, "index.docker.io") || !strcmp(domain, "registry-1.docker.io"))
        domain = "docker.io";
    bool library = !strcmp(domain, "docker.io") && !strchr(path, '/');
    snprintf(out, size, "%s/%s%s", domain, library ? "library/" : "", path);
}

static const char *refuse_reserved(const struct api_cluster *c, enum policy_kind kind,
                                   const char *value, char *why, size_t size)
{
    if (kind == POLICY_NAMESPACE && c->namespace && *c->namespace && !strcmp(value, c->namespace))
        snprintf(why, size,
                 "'%s' is the daemon's own namespace: only admin tokens may run jobs there", value);
    else if (kind == POLICY_SERVICE_ACCOUNT && in_list(c->service_accounts, value))
        snprintf(why, size,
                 "'%s' is the daemon's own service account: only admin tokens may run jobs as it",
                 value);
    else if (kind == POLICY_VOLUME_CLAIM && in_list(c->volume_claims, value))
        snprintf(why, size,
                 "'%s' is the daemon's own volume claim (its database): only admin tokens may "
                 "mount it",
                 value);
    else
        return NULL;
    return why;
}

const char *policy_grants_refuse(const struct policy_grants *g, enum policy_kind kind,
                                 const char *value, char *why, size_t size)
{
    if (g->cluster && refuse_reserved(g->cluster, kind, value, why, size))
        return why;
    if (kind == POLICY_SERVICE_ACCOUNT && strcmp(value, "default") == 0)
        return NULL; /* what a pod that names none runs as */
    const json_t *list = json_object_get(g->doc, list_fields[kind]);
    char repo[600];
    if (kind == POLICY_IMAGE)
        policy_grants_repository(value, repo, sizeof(repo));
    size_t i;
    json_t *e;
    json_array_foreach(list, i, e)
    {
        const char *p = json_string_value(e);
        if (p && (kind == POLICY_IMAGE ? registry_matches(p, repo) : name_matches(p, value)))
            return NULL;
    }
    char granted[256];
    describe(list, granted, sizeof(granted));
    if (kind == POLICY_IMAGE)
        snprintf(why, size,
                 "image '%s' is from %s, not a registry this token may use: policy '%s' grants %s",
                 value, repo, g->name, granted);
    else
        snprintf(why, size, "%s '%s' is not granted to this token: policy '%s' grants %s",
                 nouns[kind], value, g->name, granted);
    return why;
}

const char *policy_grants_refuse_node(const struct policy_grants *g, const char *key,
                                      const char *value, char *why, size_t size)
{
    const char *k;
    json_t *values;
    json_object_foreach((json_t *)json_object_get(g->doc, "node_selectors"), k, values)
    {
        if (!name_matches(k, key))
            continue;
        size_t i;
        json_t *e;
        json_array_foreach(values, i, e)
        {
            const char *p = json_string_value(e);
            if (p && (value ? name_matches(p, value) : strcmp(p, "*") == 0))
                return NULL;
        }
    }
    snprintf(why, size, "selecting nodes by %s%s%s is not granted to this token (policy '%s')", key,
             value ? "=" : "", value ? value : " (any value)", g->name);
    return why;
}

json_t *policy_grants_default(const struct api_cluster *cluster)
{
    json_t *ns = json_array();
    if (cluster && cluster->jobs_namespace && *cluster->jobs_namespace)
        json_array_append_new(ns, json_string(cluster->jobs_namespace));
    return json_pack("{s:o,s:[],s:[],s:[s],s:{s:[s]}}", "namespaces", ns, "service_accounts",
                     "volume_claims", "image_registries", "*", "node_selectors", "*", "*");
}

/* ---- validation of a grants document ---------------------------------------------------- */

/* A name pattern: "*", or a name of that kind with an optional '*' at the end. */
static const char *check_name_pattern(enum policy_kind kind, const char *p)
{
    size_t n = strlen(p);
    if (strcmp(p, "*") == 0)
        return NULL;
    if (n > 0 && p[n - 1] == '*') {
        for (size_t i = 0; i + 1 < n; i++)
            if (!islower((unsigned char)p[i]) && !isdigit((unsigned char)p[i]) && p[i] != '-' &&
                (kind == POLICY_NAMESPACE || p[i] != '.'))
                return "must be a name, a prefix ending in '*', or \"*\"";
        return NULL;
    }
    return kind == POLICY_NAMESPACE ? names_dns1123_label(p) : names_dns1123_subdomain(p);
}

/* A registry: "*", or a lowercase host (with '.' or ':', or localhost) and optional path. */
static const char *check_registry(const char *p)
{
    if (strcmp(p, "*") == 0)
        return NULL;
    size_t host = strcspn(p, "/");
    bool named = memchr(p, '.', host) || memchr(p, ':', host) ||
                 (host == 9 && strncmp(p, "localhost", 9) == 0);
    bool ok = named && p[strlen(p) - 1] != '/' && !strchr(p, '@') && !strchr(p + host, ':');
    for (const char *c = p; ok && *c; c++)
        ok = isdigit((unsigned char)*c) || islower((unsigned char)*c) || strchr(".-_/:", *c);
    return ok ? NULL
              : "must be a registry host such as \"nvcr.io\" or a repository prefix under one "
                "such as \"nvcr.io/nvidia\" (lowercase, no tag), or \"*\"";
}

/* A label key or value pattern: "*", a whole key or value, or a prefix of one ending in '*'. */
static const char *check_label_pattern(const char *p, bool key)
{
    size_t n = strlen(p);
    if (strcmp(p, "*") == 0)
        return NULL;
    if (n > 0 && p[n - 1] == '*') {
        for (size_t i = 0; i + 1 < n; i++)
            if (!isalnum((unsigned char)p[i]) && !strchr(key ? "-_./" : "-_.", p[i]))
                return "must be a label, a prefix of one ending in '*', or \"*\"";
        return NULL;
    }
    return key ? names_label_key(p) : names_label_value(p);
}

/* One array of patterns at doc[field]; problems into err. */
static void check_list(const json_t *list, const char *ptr, enum policy_kind kind, bool node,
                       struct err *err)
{
    if (!json_is_array(list)) {
        err_field(err, ptr, "must be an array of strings");
        return;
    }
    if (json_array_size(list) > LIST_MAX) {
        err_field(err, ptr, "must have at most %d entries", LIST_MAX);
        return;
    }
    size_t i;
    json_t *e;
    json_array_foreach(list, i, e)
    {
        const char *p = json_string_value(e), *why;
        if (!p || strlen(p) > PATTERN_MAX || strlen(p) != json_string_length(e))
            why = "must be a string of at most 253 bytes";
        else if (node)
            why = check_label_pattern(p, false);
        else
            why = kind == POLICY_IMAGE ? check_registry(p) : check_name_pattern(kind, p);
        if (why)
            err_field(err, ptr, "entry %zu (\"%.64s\") %s", i, p ? p : "?", why);
    }
}

static void check_nodes(const json_t *nodes, struct err *err)
{
    if (!json_is_object(nodes) || json_object_size(nodes) > LABELS_MAX) {
        err_field(err, "/node_selectors",
                  "must be an object of at most %d label keys, each an array of values",
                  LABELS_MAX);
        return;
    }
    const char *k;
    json_t *values;
    json_object_foreach((json_t *)nodes, k, values)
    {
        struct buf ptr = BUF_INIT;
        buf_puts(&ptr, "/node_selectors/");
        jsonx_pointer_append(&ptr, k);
        const char *why = check_label_pattern(k, true);
        if (why)
            err_field(err, buf_cstr(&ptr), "the key %s", why);
        else
            check_list(values, buf_cstr(&ptr), POLICY_NAMESPACE, true, err);
        buf_release(&ptr);
    }
}

static void check_doc(const json_t *doc, struct err *err)
{
    if (!json_is_object(doc)) {
        err_field(err, "/", "a policy must be a JSON object");
        return;
    }
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)doc, k, v)
    {
        char ptr[300];
        snprintf(ptr, sizeof(ptr), "/%.290s", k);
        int kind = -1;
        for (int i = 0; i <= POLICY_IMAGE; i++)
            if (strcmp(k, list_fields[i]) == 0)
                kind = i;
        if (kind >= 0)
            check_list(v, ptr, (enum policy_kind)kind, false, err);
        else if (strcmp(k, "node_selectors") == 0)
            check_nodes(v, err);
        else if (strcmp(k, "description") == 0 &&
                 !(json_is_string(v) && json_string_length(v) <= 1024))
            err_field(err, ptr, "must be a string of at most 1024 bytes");
        else if (strcmp(k, "description") != 0)
            err_field(err, ptr, "is not a known field");
    }
}

int policy_grants_validate(const json_t *doc, struct err *err)
{
    struct err quiet; /* a caller without err still needs to know */
    err_init(&quiet);
    struct err *e = err ? err : &quiet;
    check_doc(doc, e);
    int rc = err_is_set(e) ? -1 : 0;
    err_release(&quiet);
    return rc;
}
