/*
 * yamljson: a recursive-descent builder over libyaml's event stream. Anchored nodes are kept in a
 * small table with what they weigh: their bytes (their span of the YAML text plus what the
 * aliases inside them expand to), their height and their node count. An alias is charged that
 * weight before its value is deep-copied, so an expansion past the limits stops at the alias
 * that would pass them, having copied nothing. Thread-safe.
 */
#include "core/yamljson.h"

#include <errno.h>
#include <math.h>
#include <yaml.h>

#include "core/buf.h"
#include "core/xalloc.h"

struct anchor {
    char *name;
    json_t *value;
    size_t bytes; /* what an alias to it adds to the document */
    size_t nodes;
    int height; /* 1 for a scalar */
};

struct builder {
    yaml_parser_t parser;
    int max_depth;
    size_t nodes;
    size_t max_bytes;
    size_t bytes;    /* the input's length plus what aliases added so far */
    size_t last_end; /* offset just past the last event read */
    struct anchor *anchors;
    size_t nanchors;
    struct err *err;
};

static json_t *build_node(struct builder *b, yaml_event_t *ev, int depth);

static int next_event(struct builder *b, yaml_event_t *ev)
{
    if (!yaml_parser_parse(&b->parser, ev))
        return err_set(b->err, ERR_INVALID, "invalid YAML at line %zu column %zu: %s",
                       b->parser.problem_mark.line + 1, b->parser.problem_mark.column + 1,
                       b->parser.problem ? b->parser.problem : "syntax error");
    b->last_end = ev->end_mark.index;
    return 0;
}

/* A limit was passed: the error says which (err->reason), so the caller can name its setting. */
static int over_limit(struct builder *b, const yaml_event_t *ev, enum err_code code,
                      const char *reason, const char *what)
{
    if (err_is_set(b->err))
        return -1;
    err_set(b->err, code, "YAML at line %zu column %zu: %s", ev->start_mark.line + 1,
            ev->start_mark.column + 1, what);
    if (b->err)
        snprintf(b->err->reason, sizeof(b->err->reason), "%s", reason);
    return -1;
}

static int at(struct builder *b, const yaml_event_t *ev, const char *what)
{
    return err_set(b->err, ERR_INVALID, "invalid YAML at line %zu column %zu: %s",
                   ev->start_mark.line + 1, ev->start_mark.column + 1, what);
}

static int charge(struct builder *b, size_t n, const yaml_event_t *ev)
{
    b->nodes += n;
    if (b->nodes > YAMLJSON_MAX_NODES)
        return at(b, ev, "document too large (aliases expand past the node limit)");
    return 0;
}

static int is_plain_word(const char *s, const char *const *words)
{
    for (; *words; words++)
        if (strcmp(s, *words) == 0)
            return 1;
    return 0;
}

/* Plain scalars are typed as the YAML 1.2 core schema says; everything else is a string. */
static json_t *plain_scalar(const char *s, size_t len)
{
    static const char *const nulls[] = { "", "~", "null", "Null", "NULL", NULL };
    static const char *const trues[] = { "true", "True", "TRUE", NULL };
    static const char *const falses[] = { "false", "False", "FALSE", NULL };
    if (strlen(s) != len)
        return json_stringn(s, len);
    if (is_plain_word(s, nulls))
        return json_null();
    if (is_plain_word(s, trues))
        return json_true();
    if (is_plain_word(s, falses))
        return json_false();
    char *end;
    errno = 0;
    if (s[0] == '0' && (s[1] == 'x' || s[1] == 'o') && s[2]) {
        long long v = strtoll(s + 2, &end, s[1] == 'x' ? 16 : 8);
        if (*end == '\0' && errno == 0)
            return json_integer(v);
    }
    const char *digits = (s[0] == '-' || s[0] == '+') ? s + 1 : s;
    if (*digits >= '0' && *digits <= '9' && strspn(digits, "0123456789") == strlen(digits)) {
        long long v = strtoll(s, &end, 10);
        if (errno == 0)
            return json_integer(v);
    }
    if (strspn(digits, "0123456789.eE+-") == strlen(digits) && strpbrk(digits, "0123456789") &&
        (strchr(digits, '.') || strpbrk(digits, "eE"))) {
        double d = strtod(s, &end);
        if (*end == '\0' && errno == 0 && isfinite(d))
            return json_real(d);
    }
    return json_stringn(s, len);
}

static json_t *scalar(struct builder *b, yaml_event_t *ev)
{
    const char *v = (const char *)ev->data.scalar.value;
    size_t len = ev->data.scalar.length;
    const char *tag = (const char *)ev->data.scalar.tag;
    if (tag && strcmp(tag, YAML_STR_TAG) == 0)
        return json_stringn(v, len);
    if (ev->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
        return json_stringn(v, len);
    json_t *j = plain_scalar(v, len);
    if (!j)
        at(b, ev, "scalar is not valid UTF-8");
    return j;
}

static json_t *mapping(struct builder *b, int depth)
{
    json_t *obj = json_object();
    for (;;) {
        yaml_event_t kev;
        if (next_event(b, &kev) < 0)
            goto fail;
        if (kev.type == YAML_MAPPING_END_EVENT) {
            yaml_event_delete(&kev);
            return obj;
        }
        if (kev.type != YAML_SCALAR_EVENT) {
            at(b, &kev, "mapping keys must be scalars");
            yaml_event_delete(&kev);
            goto fail;
        }
        char *key = xstrndup((const char *)kev.data.scalar.value, kev.data.scalar.length);
        int dup = json_object_get(obj, key) != NULL;
        if (dup)
            at(b, &kev, "duplicate mapping key");
        yaml_event_delete(&kev);
        yaml_event_t vev;
        json_t *val = NULL;
        if (!dup && next_event(b, &vev) == 0) {
            val = build_node(b, &vev, depth + 1);
            yaml_event_delete(&vev);
        }
        if (!val) {
            free(key);
            goto fail;
        }
        json_object_set_new(obj, key, val);
        free(key);
    }
fail:
    json_decref(obj);
    return NULL;
}

static json_t *sequence(struct builder *b, int depth)
{
    json_t *arr = json_array();
    for (;;) {
        yaml_event_t ev;
        if (next_event(b, &ev) < 0)
            goto fail;
        if (ev.type == YAML_SEQUENCE_END_EVENT) {
            yaml_event_delete(&ev);
            return arr;
        }
        json_t *val = build_node(b, &ev, depth + 1);
        yaml_event_delete(&ev);
        if (!val)
            goto fail;
        json_array_append_new(arr, val);
    }
fail:
    json_decref(arr);
    return NULL;
}

/* The node count and height of a value (height 1: a scalar or an empty container). */
static size_t weigh(const json_t *v, int *height)
{
    size_t n = 1;
    int below = 0, h;
    const char *k;
    json_t *c;
    size_t i;
    if (json_is_object(v)) {
        json_object_foreach((json_t *)v, k, c)
        {
            n += weigh(c, &h);
            below = h > below ? h : below;
        }
    } else if (json_is_array(v)) {
        json_array_foreach(v, i, c)
        {
            n += weigh(c, &h);
            below = h > below ? h : below;
        }
    }
    *height = below + 1;
    return n;
}

static json_t *alias(struct builder *b, yaml_event_t *ev, int depth)
{
    const char *name = (const char *)ev->data.alias.anchor;
    for (size_t i = b->nanchors; i-- > 0;) {
        const struct anchor *a = &b->anchors[i];
        if (strcmp(a->name, name) != 0)
            continue;
        if (depth - 1 + a->height > b->max_depth) {
            over_limit(b, ev, ERR_INVALID, "max_depth",
                       "nested too deeply (with what aliases expand to)");
            return NULL;
        }
        if (a->bytes > b->max_bytes - b->bytes) {
            over_limit(b, ev, ERR_TOO_LARGE, "max_bytes",
                       "document too large (with what aliases expand to)");
            return NULL;
        }
        b->bytes += a->bytes;
        if (charge(b, a->nodes, ev) < 0)
            return NULL;
        return json_deep_copy(a->value);
    }
    at(b, ev, "alias to an unknown anchor");
    return NULL;
}

/* Keeps an anchored node for its aliases: start is where its text began, added what the
 * aliases inside it expanded to. */
static void remember(struct builder *b, const unsigned char *anchor, json_t *value, size_t start,
                     size_t added)
{
    if (!anchor || !value)
        return;
    b->anchors = xrealloc(b->anchors, (b->nanchors + 1) * sizeof(*b->anchors));
    struct anchor *a = &b->anchors[b->nanchors++];
    a->name = xstrdup((const char *)anchor);
    a->value = json_incref(value);
    a->bytes = (b->last_end > start ? b->last_end - start : 0) + added + 1;
    a->nodes = weigh(value, &a->height);
}

static json_t *build_node(struct builder *b, yaml_event_t *ev, int depth)
{
    if (depth > b->max_depth) {
        over_limit(b, ev, ERR_INVALID, "max_depth", "nested too deeply");
        return NULL;
    }
    if (ev->type != YAML_ALIAS_EVENT && charge(b, 1, ev) < 0)
        return NULL;
    size_t start = ev->start_mark.index, before = b->bytes;
    json_t *v = NULL;
    const unsigned char *anchor = NULL;
    switch (ev->type) {
    case YAML_SCALAR_EVENT:
        v = scalar(b, ev);
        anchor = ev->data.scalar.anchor;
        break;
    case YAML_MAPPING_START_EVENT:
        v = mapping(b, depth);
        anchor = ev->data.mapping_start.anchor;
        break;
    case YAML_SEQUENCE_START_EVENT:
        v = sequence(b, depth);
        anchor = ev->data.sequence_start.anchor;
        break;
    case YAML_ALIAS_EVENT:
        return alias(b, ev, depth);
    default:
        at(b, ev, "unexpected YAML event");
        break;
    }
    remember(b, anchor, v, start, b->bytes - before);
    return v;
}

/* Reads events until the one that starts the root node; returns 1 at end of stream. */
static int skip_to_root(struct builder *b, yaml_event_t *ev)
{
    for (;;) {
        if (next_event(b, ev) < 0)
            return -1;
        if (ev->type == YAML_STREAM_END_EVENT) {
            yaml_event_delete(ev);
            return 1;
        }
        if (ev->type != YAML_STREAM_START_EVENT && ev->type != YAML_DOCUMENT_START_EVENT)
            return 0;
        yaml_event_delete(ev);
    }
}

json_t *yamljson_load(const char *data, size_t len, int max_depth, size_t max_bytes,
                      struct err *err)
{
    struct builder b = { .max_depth = max_depth, .max_bytes = max_bytes, .bytes = len, .err = err };
    if (len > max_bytes) {
        err_set(err, ERR_TOO_LARGE, "the YAML document is larger than %zu bytes", max_bytes);
        if (err)
            snprintf(err->reason, sizeof(err->reason), "max_bytes");
        return NULL;
    }
    json_t *root = NULL;
    yaml_parser_initialize(&b.parser);
    yaml_parser_set_input_string(&b.parser, (const unsigned char *)data, len);
    yaml_event_t ev;
    int rc = skip_to_root(&b, &ev);
    if (rc < 0)
        goto out;
    if (rc == 1) {
        err_set(err, ERR_INVALID, "empty YAML document");
        goto out;
    }
    root = build_node(&b, &ev, 1);
    yaml_event_delete(&ev);
    if (!root)
        goto out;
    /* Expect DOCUMENT-END, then STREAM-END: a second document is an error, not ignored. */
    for (int i = 0; i < 2; i++) {
        if (next_event(&b, &ev) < 0) {
            json_decref(root);
            root = NULL;
            goto out;
        }
        yaml_event_type_t t = ev.type;
        yaml_event_delete(&ev);
        if (t == YAML_STREAM_END_EVENT)
            break;
        if (t != YAML_DOCUMENT_END_EVENT) {
            err_set(err, ERR_INVALID, "YAML stream holds more than one document");
            json_decref(root);
            root = NULL;
            goto out;
        }
    }
out:
    for (size_t i = 0; i < b.nanchors; i++) {
        free(b.anchors[i].name);
        json_decref(b.anchors[i].value);
    }
    free(b.anchors);
    yaml_parser_delete(&b.parser);
    return root;
}

json_t *yamljson_load_file(const char *path, size_t max_bytes, struct err *err)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        err_set(err, ERR_IO, "cannot open %s: %s", path, strerror(errno));
        return NULL;
    }
    struct buf b = BUF_INIT;
    char chunk[8192];
    size_t n;
    while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0) {
        buf_append(&b, chunk, n);
        if (b.len > max_bytes) {
            fclose(f);
            buf_release(&b);
            err_set(err, ERR_TOO_LARGE, "%s is larger than %zu bytes", path, max_bytes);
            return NULL;
        }
    }
    fclose(f);
    json_t *v = yamljson_load(buf_cstr(&b), b.len, 64, max_bytes, err);
    if (!v)
        err_wrap(err, "%s", path);
    buf_release(&b);
    return v;
}
