/*
 * cli_set: spec files and --set overrides for `trainyard submit`. Pure functions over jansson
 * values, no I/O except cli_spec_load(). The string paths below mirror the JobSpec schema in
 * openapi/openapi.yaml: where the spec wants a string, "3e-4" stays "3e-4" instead of becoming
 * a number the daemon would refuse.
 */
#include "server/cli/cli_set.h"

#include <errno.h>
#include <math.h>

#include "core/buf.h"
#include "core/jsonx.h"
#include "core/parse.h"
#include "core/xalloc.h"
#include "core/yamljson.h"

#define MAX_SEGMENTS 16

/* Paths whose values are strings; '*' is any one segment. */
static const char *const string_paths[] = {
    "name",
    "image",
    "queue",
    "executor",
    "command.*",
    "args.*",
    "env.*",
    "env.*.*",
    "labels.*",
    "resources.memory",
    "resources.shm",
    "placement.instance_type",
    "placement.zone",
    "placement.capacity_type",
    "placement.avoid_nodes.*",
    "restart.policy",
    "checkpoint.volume_claim",
    "checkpoint.path",
    "kubernetes.kind",
    "kubernetes.namespace",
    "kubernetes.runtime",
    "kubernetes.service_account",
    "kubernetes.priority_class",
    "kubernetes.image_pull_secrets.*",
    "kubernetes.node_selector.*",
    "kubernetes.annotations.*",
};

struct path {
    char *seg[MAX_SEGMENTS];
    size_t n;
};

static void path_release(struct path *p)
{
    for (size_t i = 0; i < p->n; i++)
        free(p->seg[i]);
    p->n = 0;
}

/* Splits "a.b\.c" into "a", "b.c". */
static int path_parse(const char *text, size_t len, const char *whole, struct path *p,
                      struct err *err)
{
    struct buf seg = BUF_INIT;
    p->n = 0;
    for (size_t i = 0; i <= len; i++) {
        if (i < len && text[i] == '\\' && i + 1 < len) {
            buf_putc(&seg, text[++i]);
            continue;
        }
        if (i < len && text[i] != '.') {
            buf_putc(&seg, text[i]);
            continue;
        }
        if (seg.len == 0 || p->n == MAX_SEGMENTS) {
            buf_release(&seg);
            path_release(p);
            return err_set(err, ERR_INVALID, "--set %s: %s", whole,
                           seg.len ? "too deep" : "empty name in the path");
        }
        size_t ignored;
        p->seg[p->n++] = buf_detach(&seg, &ignored);
    }
    buf_release(&seg);
    return 0;
}

static bool path_is_string(const struct path *p)
{
    for (size_t i = 0; i < sizeof(string_paths) / sizeof(string_paths[0]); i++) {
        const char *pat = string_paths[i];
        size_t k = 0;
        for (; k < p->n && *pat; k++) {
            size_t n = strcspn(pat, ".");
            if (!(n == 1 && *pat == '*') &&
                !(strlen(p->seg[k]) == n && memcmp(p->seg[k], pat, n) == 0))
                break;
            pat += n + (pat[n] == '.');
        }
        if (k == p->n && !*pat)
            return true;
    }
    return false;
}

/* A decimal number as people write it (no hex, inf or nan, which strtod would take). */
static bool looks_numeric(const char *s)
{
    bool digit = false;
    for (const char *c = s; *c; c++) {
        if (*c >= '0' && *c <= '9')
            digit = true;
        else if (!strchr("+-.eE", *c))
            return false;
    }
    return digit;
}

static json_t *typed(const char *text)
{
    int64_t i;
    if (strcmp(text, "true") == 0 || strcmp(text, "false") == 0)
        return json_boolean(text[0] == 't');
    if (strcmp(text, "null") == 0)
        return json_null();
    if (parse_int64(text, INT64_MIN, INT64_MAX, &i) == 0)
        return json_integer(i);
    if (looks_numeric(text)) {
        char *end;
        errno = 0;
        double d = strtod(text, &end);
        if (*end == '\0' && errno == 0 && isfinite(d))
            return json_real(d);
    }
    return json_string(text);
}

static json_t *value_for(const struct path *p, const char *text, const json_t *existing)
{
    if (text[0] == '"' || text[0] == '[' || text[0] == '{') {
        json_t *v = json_loads(text, JSON_DECODE_ANY | JSON_REJECT_DUPLICATES, NULL);
        if (v)
            return v;
    }
    if (path_is_string(p) || json_is_string(existing))
        return json_string(text);
    return typed(text);
}

/* The array index a segment names, or -1. */
static long index_of(const char *seg)
{
    int64_t i;
    return parse_int64(seg, 0, 1 << 20, &i) == 0 ? (long)i : -1;
}

static const char *type_name(const json_t *v)
{
    return json_is_string(v)    ? "a string"
           : json_is_integer(v) ? "an integer"
           : json_is_number(v)  ? "a number"
           : json_is_boolean(v) ? "a boolean"
           : json_is_null(v)    ? "null"
                                : "a value";
}

/* The container holding the last segment, created as objects where missing; NULL with err. */
static json_t *walk(json_t *doc, const struct path *p, const char *text, struct err *err)
{
    json_t *cur = doc;
    for (size_t k = 0; k + 1 < p->n; k++) {
        json_t *next = NULL;
        if (json_is_object(cur)) {
            next = json_object_get(cur, p->seg[k]);
            if (!next) {
                next = json_object();
                json_object_set_new(cur, p->seg[k], next);
            }
        } else if (json_is_array(cur)) {
            long i = index_of(p->seg[k]);
            next = i >= 0 ? json_array_get(cur, (size_t)i) : NULL;
            if (!next) {
                err_set(err, ERR_INVALID, "--set %s: no element %s in the array", text, p->seg[k]);
                return NULL;
            }
        }
        if (!json_is_object(next) && !json_is_array(next)) {
            err_set(err, ERR_INVALID, "--set %s: %s is %s, not an object", text, p->seg[k],
                    type_name(next));
            return NULL;
        }
        cur = next;
    }
    return cur;
}

static int assign(json_t *doc, const struct path *p, const char *value, const char *text,
                  struct err *err)
{
    json_t *parent = walk(doc, p, text, err);
    if (!parent)
        return -1;
    const char *last = p->seg[p->n - 1];
    json_t *existing = json_is_object(parent) ? json_object_get(parent, last) : NULL;
    long i = json_is_array(parent) ? index_of(last) : -1;
    if (json_is_array(parent)) {
        if (i < 0 || (size_t)i > json_array_size(parent))
            return err_set(err, ERR_INVALID, "--set %s: %s is past the end of the array (%zu)",
                           text, last, json_array_size(parent));
        existing = json_array_get(parent, (size_t)i);
    }
    json_t *v = value_for(p, value, existing);
    if (json_is_object(parent))
        json_object_set_new(parent, last, v);
    else if ((size_t)i == json_array_size(parent))
        json_array_append_new(parent, v);
    else
        json_array_set_new(parent, (size_t)i, v);
    return 0;
}

int cli_set_apply(json_t *doc, const char *assignment, struct err *err)
{
    const char *eq = strchr(assignment, '=');
    if (!eq)
        return err_set(err, ERR_INVALID, "--set %s: expected path=value", assignment);
    if (!json_is_object(doc))
        return err_set(err, ERR_INVALID, "--set %s: the spec is not an object", assignment);
    struct path p;
    if (path_parse(assignment, (size_t)(eq - assignment), assignment, &p, err) < 0)
        return -1;
    /* Work on a copy so that a failure halfway leaves doc as it was. */
    json_t *copy = json_deep_copy(doc);
    int rc = assign(copy, &p, eq + 1, assignment, err);
    if (rc == 0) {
        json_object_clear(doc);
        json_object_update(doc, copy);
    }
    json_decref(copy);
    path_release(&p);
    return rc;
}

static bool ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcmp(s + n - m, suffix) == 0;
}

json_t *cli_spec_parse(const char *name, const char *data, size_t len, struct err *err)
{
    bool json;
    if (ends_with(name, ".json"))
        json = true;
    else if (ends_with(name, ".yaml") || ends_with(name, ".yml"))
        json = false;
    else {
        size_t i = 0;
        while (i < len && strchr(" \t\r\n", data[i]))
            i++;
        json = i < len && data[i] == '{';
    }
    json_t *doc =
        json ? jsonx_loadb(data, len, 64, err) : yamljson_load(data, len, 64, 1 << 24, err);
    if (!doc) {
        err_wrap(err, "%s", strcmp(name, "-") == 0 ? "standard input" : name);
        return NULL;
    }
    if (!json_is_object(doc)) {
        err_set(err, ERR_INVALID, "%s: a job spec is an object (a mapping), not %s", name,
                json_is_array(doc) ? "a list" : "a single value");
        json_decref(doc);
        return NULL;
    }
    return doc;
}

json_t *cli_spec_load(const char *path, struct err *err)
{
    bool is_stdin = strcmp(path, "-") == 0;
    FILE *f = is_stdin ? stdin : fopen(path, "rb");
    if (!f) {
        err_set(err, ERR_IO, "cannot open %s: %s", path, strerror(errno));
        return NULL;
    }
    struct buf b = BUF_INIT;
    char chunk[8192];
    size_t n;
    while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0 && b.len <= CLI_SPEC_MAX_BYTES)
        buf_append(&b, chunk, n);
    bool failed = ferror(f);
    if (!is_stdin)
        fclose(f);
    json_t *doc = NULL;
    if (failed)
        err_set(err, ERR_IO, "cannot read %s", path);
    else if (b.len > CLI_SPEC_MAX_BYTES)
        err_set(err, ERR_IO, "%s is larger than %d bytes", path, CLI_SPEC_MAX_BYTES);
    else
        doc = cli_spec_parse(path, buf_cstr(&b), b.len, err);
    buf_release(&b);
    return doc;
}
