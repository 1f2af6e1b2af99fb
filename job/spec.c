/*
 * spec: the job spec's schema as a table, and the walker that validates a document against it.
 * Adding a field is one line in a table below (and its entry in openapi/openapi.yaml).
 * Thread-safe: the tables are read-only.
 */
#include "job/spec.h"

#include <math.h>

#include "core/buf.h"
#include "core/jsonx.h"
#include "job/names.h"
#include "core/parse.h"
#include "core/utf8.h"

enum ftype {
    T_STRING,
    T_INT,
    T_BOOL,
    T_OBJECT,   /* members from .fields */
    T_STRINGS,  /* array of strings */
    T_INTS,     /* array of integers */
    T_STRMAP,   /* object of string values (labels, annotations, node selectors) */
    T_ENV,      /* object of string or {secret, key} */
    T_QUANTITY, /* Kubernetes quantity: string ("16Gi") or non-negative number */
    T_OBJECTS,  /* array of objects, passed through (tolerations) */
    T_DOC,      /* an object kept as it is (a Kubernetes manifest) */
};

#define FIELDS_MAX 32 /* fields of an object in the schema (check_object) */

struct field {
    const char *name;
    enum ftype type;
    bool required;
    int64_t min, max;                   /* integer range; string length; entries of arrays/maps */
    const char *(*check)(const char *); /* extra rule for a string (or a map's keys) */
    const char *const *choices;         /* allowed values of a string */
    const struct field *fields;         /* members of an object; ends with name == NULL */
    const char *def;                    /* default as JSON text; NULL leaves the field absent */
    const char *(*check_value)(const char *); /* rule for a map's values */
};

static const char *const executors[] = { "local", "kubernetes", NULL };
static const char *const policies[] = { "never", "on_failure", "exit_code", NULL };
static const char *const capacity_types[] = { "on-demand", "spot", "reserved", NULL };
static const char *const kinds[] = { "PyTorchJob", "TrainJob", NULL };

static const struct field resources_fields[] = {
    { "gpus", T_INT, .min = 0, .max = 64 },
    { "efa", T_INT, .min = 0, .max = 64 },
    { "cpu", T_QUANTITY },
    { "memory", T_QUANTITY },
    { "shm", T_QUANTITY },
    { NULL },
};

static const struct field placement_fields[] = {
    { "instance_type", T_STRING, .max = 63, .check = names_label_value },
    { "zone", T_STRING, .max = 63, .check = names_label_value },
    { "capacity_type", T_STRING, .choices = capacity_types },
    { "avoid_nodes", T_STRINGS, .max = 256, .check = names_dns1123_subdomain },
    { NULL },
};

static const char *const restart_on[] = { "preemption",    "node_failure",
                                          "nccl_timeout",  "transient",
                                          "hang",          "unknown",
                                          "deterministic", NULL };
static const char *const on_stall[] = { "none", "cancel", "restart", NULL };

static const struct field restart_fields[] = {
    { "policy", T_STRING, .choices = policies, .def = "\"never\"" },
    { "max_restarts", T_INT, .min = 0, .max = 1000, .def = "0" },
    { "exit_codes", T_INTS, .min = 1, .max = 255 },
    { "on", T_STRINGS, .max = 7, .choices = restart_on },
    { "max_preemptions", T_INT, .min = 0, .max = 1000, .def = "10" },
    { "avoid_failed_nodes", T_BOOL, .def = "true" },
    /* No defaults: absent, the daemon's (--restart-backoff, --restart-backoff-max) apply. */
    { "backoff_seconds", T_INT, .min = 0, .max = 86400 },
    { "max_backoff_seconds", T_INT, .min = 1, .max = 86400 },
    { NULL },
};

static const struct field health_fields[] = {
    { "on_stall", T_STRING, .choices = on_stall, .def = "\"none\"" },
    { "stall_after_seconds", T_INT, .min = 1, .max = 604800 },
    { "startup_seconds", T_INT, .min = 1, .max = 604800 },
    { NULL },
};

static const struct field checkpoint_fields[] = {
    { "volume_claim", T_STRING, .max = 253, .check = names_dns1123_subdomain },
    { "path", T_STRING, .max = 4096, .check = names_abs_path },
    { NULL },
};

static const struct field elastic_fields[] = {
    { "min_nodes", T_INT, .min = 1, .max = 100000 },
    { "max_nodes", T_INT, .min = 1, .max = 100000 },
    { "max_restarts", T_INT, .min = 0, .max = 1000 },
    { NULL },
};

static const struct field kubernetes_fields[] = {
    { "kind", T_STRING, .choices = kinds, .def = "\"PyTorchJob\"" },
    { "namespace", T_STRING, .max = 63, .check = names_dns1123_label },
    { "runtime", T_STRING, .max = 253, .check = names_dns1123_subdomain },
    { "service_account", T_STRING, .max = 253, .check = names_dns1123_subdomain },
    { "priority_class", T_STRING, .max = 253, .check = names_dns1123_subdomain },
    { "image_pull_secrets", T_STRINGS, .max = 16, .check = names_dns1123_subdomain },
    { "node_selector", T_STRMAP, .max = 64, .check = names_label_key,
      .check_value = names_label_value },
    { "annotations", T_STRMAP, .max = 64, .check = names_label_key },
    { "tolerations", T_OBJECTS, .max = 32 },
    { "elastic", T_OBJECT, .fields = elastic_fields },
    { "manifest", T_DOC },
    { NULL },
};

static const struct field spec_fields[] = {
    { "name", T_STRING, true, .max = 63, .check = names_dns1035_label },
    { "image", T_STRING, .max = 512, .check = names_image },
    { "command", T_STRINGS, .max = 1024 },
    { "args", T_STRINGS, .max = 4096 },
    { "env", T_ENV, .max = 4096, .check = names_env_var },
    { "nodes", T_INT, .min = 1, .max = 100000, .def = "1" },
    { "procs_per_node", T_INT, .min = 1, .max = 1024, .def = "1" },
    { "resources", T_OBJECT, .fields = resources_fields },
    { "placement", T_OBJECT, .fields = placement_fields },
    { "restart", T_OBJECT, .fields = restart_fields, .def = "{}" },
    { "deadline_seconds", T_INT, .min = 1, .max = 31536000 },
    { "queue", T_STRING, .max = 63, .check = names_dns1123_label },
    { "priority", T_INT, .min = -1000000, .max = 1000000, .def = "0" },
    { "checkpoint", T_OBJECT, .fields = checkpoint_fields },
    { "labels", T_STRMAP, .max = 4096, .check = names_label_key, .check_value = names_label_value },
    { "suspend", T_BOOL, .def = "false" },
    { "executor", T_STRING, .choices = executors },
    { "kubernetes", T_OBJECT, .fields = kubernetes_fields },
    { "health", T_OBJECT, .fields = health_fields },
    { NULL },
};

#define FITS(fields)                                                                               \
    _Static_assert(sizeof(fields) / sizeof(fields[0]) - 1 <= FIELDS_MAX, #fields " > FIELDS_MAX")
FITS(resources_fields);
FITS(placement_fields);
FITS(restart_fields);
FITS(health_fields);
FITS(checkpoint_fields);
FITS(elastic_fields);
FITS(kubernetes_fields);
FITS(spec_fields);

#define WALK_DEPTH     16   /* the schema nests 4 deep; the JSON body is limited to 32 */
#define SPEC_MAX_DEPTH 2048 /* parsing our own canonical text: as deep as jsonx_dump writes */

/* Where the walker is: the path is kept as tokens and only rendered as a JSON pointer when a
 * value is bad, so valid specs (nearly all of them) never format one. */
struct step {
    const char *key; /* NULL: an array index */
    size_t index;
};

/* The walker writes the canonical text as it checks: after the first bad value the text is
 * incomplete, and spec_check() drops it. */
struct walk {
    const struct spec_options *opts;
    struct err *err;
    struct buf *out;
    int depth;
    struct step path[WALK_DEPTH];
};

static void bad(struct walk *w, const char *fmt, const char *arg)
{
    struct buf ptr = BUF_INIT;
    for (int i = 0; i < w->depth && i < WALK_DEPTH; i++) {
        buf_putc(&ptr, '/');
        if (w->path[i].key)
            jsonx_pointer_append(&ptr, w->path[i].key);
        else
            buf_printf(&ptr, "%zu", w->path[i].index);
    }
    err_field(w->err, ptr.len ? buf_cstr(&ptr) : "/", fmt, arg);
    buf_release(&ptr);
}

static int push(struct walk *w, const char *token)
{
    if (w->depth < WALK_DEPTH)
        w->path[w->depth].key = token;
    return w->depth++;
}

static int push_index(struct walk *w, size_t i)
{
    if (w->depth < WALK_DEPTH)
        w->path[w->depth] = (struct step){ NULL, i };
    return w->depth++;
}

static void pop(struct walk *w, int mark)
{
    w->depth = mark;
}

/* Writes a member's key (and the comma before it unless it is the first). */
static void put_key(struct walk *w, bool *first, const char *key)
{
    if (!*first)
        buf_putc(w->out, ',');
    *first = false;
    jsonx_dump_string(w->out, key, strlen(key));
    buf_putc(w->out, ':');
}

static void put_string(struct walk *w, const char *s)
{
    jsonx_dump_string(w->out, s, strlen(s));
}

static const char *type_name(enum ftype t)
{
    static const char *const names[] = {
        [T_STRING] = "a string",
        [T_INT] = "an integer",
        [T_BOOL] = "true or false",
        [T_OBJECT] = "an object",
        [T_STRINGS] = "an array of strings",
        [T_INTS] = "an array of integers",
        [T_STRMAP] = "an object of strings",
        [T_ENV] = "an object of environment variables",
        [T_QUANTITY] = "a quantity such as \"16Gi\" or 8",
        [T_OBJECTS] = "an array of objects",
        [T_DOC] = "an object",
    };
    return names[t];
}

static void check_string(struct walk *w, const struct field *f, json_t *v)
{
    const char *s = json_string_value(v);
    size_t len = json_string_length(v);
    size_t max = f->max ? (size_t)f->max : w->opts->limits->max_string_bytes;
    if (strlen(s) != len) {
        bad(w, "%s", "must not contain NUL characters");
        return;
    }
    if (len > max) {
        char msg[96];
        snprintf(msg, sizeof(msg), "must be at most %zu bytes long", max);
        bad(w, "%s", msg);
        return;
    }
    if (f->choices) {
        for (const char *const *c = f->choices; *c; c++)
            if (strcmp(*c, s) == 0) {
                jsonx_dump_string(w->out, s, len);
                return;
            }
        struct buf list = BUF_INIT;
        for (const char *const *c = f->choices; *c; c++)
            buf_printf(&list, "%s\"%s\"", list.len ? ", " : "", *c);
        bad(w, "must be one of %s", buf_cstr(&list));
        buf_release(&list);
        return;
    }
    const char *msg = f->check ? f->check(s) : NULL;
    if (msg)
        bad(w, "%s", msg);
    else
        jsonx_dump_string(w->out, s, len);
}

static void check_int(struct walk *w, const struct field *f, json_t *v)
{
    json_int_t x = json_integer_value(v);
    if (x < f->min || x > f->max) {
        char msg[96];
        snprintf(msg, sizeof(msg), "must be between %lld and %lld", (long long)f->min,
                 (long long)f->max);
        bad(w, "%s", msg);
        return;
    }
    buf_put_int(w->out, x);
}

/* A quantity is kept as a string: a number becomes its decimal text, which must read back as a
 * quantity (so -0.0, "-0" once written, and 1e300, past what a quantity holds, are refused as
 * the same value written as a string would be). */
static void check_quantity(struct walk *w, json_t *v)
{
    int64_t milli;
    char num[64];
    if (json_is_integer(v) && json_integer_value(v) >= 0 &&
        snprintf(num, sizeof(num), "%lld", (long long)json_integer_value(v)) > 0 &&
        parse_quantity(num, &milli) == 0) {
        put_string(w, num);
    } else if (json_is_real(v) && !signbit(json_real_value(v)) &&
               snprintf(num, sizeof(num), "%g", json_real_value(v)) > 0 &&
               parse_quantity(num, &milli) == 0) {
        put_string(w, num);
    } else if (json_is_string(v) && parse_quantity(json_string_value(v), &milli) == 0) {
        jsonx_dump_string(w->out, json_string_value(v), json_string_length(v));
    } else {
        bad(w, "must be %s", type_name(T_QUANTITY));
    }
}

static void check_value(struct walk *w, const struct field *f, json_t *v);

/* An object's members in schema order; absent (or null) ones take their default if any. One
 * pass over the members finds each field's value (a lookup per field hashed every field name,
 * present or not: a quarter of the validation), a second checks and writes them in order. */
static void check_object(struct walk *w, const struct field *fields, json_t *v)
{
    json_t *given_by_field[FIELDS_MAX] = { 0 };
    const char *key;
    json_t *member;
    json_object_foreach(v, key, member)
    {
        size_t i = 0;
        while (fields[i].name && strcmp(fields[i].name, key) != 0)
            i++;
        if (fields[i].name) {
            given_by_field[i] = member;
        } else {
            int mark = push(w, key);
            bad(w, "%s", "is not a known field");
            pop(w, mark);
        }
    }
    bool first = true;
    buf_putc(w->out, '{');
    for (size_t i = 0; fields[i].name; i++) {
        const struct field *f = &fields[i];
        json_t *given = given_by_field[i];
        int mark = push(w, f->name);
        if (given && !json_is_null(given)) {
            put_key(w, &first, f->name);
            check_value(w, f, given);
        } else if (f->required) {
            bad(w, "%s", "is required");
        } else if (f->def) {
            json_t *def = jsonx_loadb(f->def, strlen(f->def), 4, NULL);
            put_key(w, &first, f->name);
            check_value(w, f, def);
            json_decref(def);
        }
        pop(w, mark);
    }
    buf_putc(w->out, '}');
}

static void check_array(struct walk *w, const struct field *f, json_t *v)
{
    size_t max = f->max ? (size_t)f->max : 1024;
    if (json_array_size(v) > max) {
        char msg[64];
        snprintf(msg, sizeof(msg), "must have at most %zu entries", max);
        bad(w, "%s", msg);
        return;
    }
    buf_putc(w->out, '[');
    size_t i;
    json_t *item;
    json_array_foreach(v, i, item)
    {
        int mark = push_index(w, i);
        if (i)
            buf_putc(w->out, ',');
        if (f->type == T_STRINGS && json_is_string(item)) {
            struct field elem = { .type = T_STRING, .check = f->check, .choices = f->choices };
            check_string(w, &elem, item);
        } else if (f->type == T_INTS && json_is_integer(item)) {
            struct field elem = { .type = T_INT, .min = f->min, .max = f->max };
            check_int(w, &elem, item);
        } else if (f->type == T_OBJECTS && json_is_object(item)) {
            jsonx_dump(w->out, item);
        } else {
            bad(w, "must be %s",
                f->type == T_STRINGS ? "a string"
                : f->type == T_INTS  ? "an integer"
                                     : "an object");
        }
        pop(w, mark);
    }
    buf_putc(w->out, ']');
}

/* An env value: a string, or {"secret": NAME, "key": KEY} resolved by Kubernetes. */
static void check_env_value(struct walk *w, json_t *v)
{
    static const struct field secret_ref[] = {
        { "secret", T_STRING, true, .max = 253, .check = names_dns1123_subdomain },
        { "key", T_STRING, true, .max = 253 },
        { NULL },
    };
    FITS(secret_ref);
    if (json_is_string(v)) {
        struct field elem = { .type = T_STRING };
        check_string(w, &elem, v);
    } else if (json_is_object(v)) {
        check_object(w, secret_ref, v);
    } else {
        bad(w, "%s", "must be a string or {\"secret\": NAME, \"key\": KEY}");
    }
}

/* Objects whose keys are names (labels, env): each key and value checked. */
static void check_map(struct walk *w, const struct field *f, json_t *v)
{
    size_t max = f->max ? (size_t)f->max : 256;
    if (json_object_size(v) > max) {
        char msg[64];
        snprintf(msg, sizeof(msg), "must have at most %zu entries", max);
        bad(w, "%s", msg);
        return;
    }
    bool first = true;
    buf_putc(w->out, '{');
    const char *key;
    json_t *val;
    json_object_foreach(v, key, val)
    {
        int mark = push(w, key);
        const char *msg = f->check ? f->check(key) : NULL;
        if (msg) {
            char text[ERR_MSG_MAX];
            snprintf(text, sizeof(text), "the key %s", msg);
            bad(w, "%s", text);
        } else if (f->type == T_ENV) {
            put_key(w, &first, key);
            check_env_value(w, val);
        } else if (json_is_string(val)) {
            struct field elem = { .type = T_STRING, .check = f->check_value };
            put_key(w, &first, key);
            check_string(w, &elem, val);
        } else {
            bad(w, "%s", "must be a string");
        }
        pop(w, mark);
    }
    buf_putc(w->out, '}');
}

static bool type_ok(enum ftype t, json_t *v)
{
    switch (t) {
    case T_STRING:
        return json_is_string(v);
    case T_INT:
        return json_is_integer(v);
    case T_BOOL:
        return json_is_boolean(v);
    case T_OBJECT:
    case T_STRMAP:
    case T_ENV:
    case T_DOC:
        return json_is_object(v);
    case T_STRINGS:
    case T_INTS:
    case T_OBJECTS:
        return json_is_array(v);
    case T_QUANTITY:
        return json_is_string(v) || json_is_number(v);
    }
    return false;
}

static void check_value(struct walk *w, const struct field *f, json_t *v)
{
    if (!type_ok(f->type, v)) {
        bad(w, "must be %s", type_name(f->type));
        return;
    }
    switch (f->type) {
    case T_STRING:
        check_string(w, f, v);
        break;
    case T_INT:
        check_int(w, f, v);
        break;
    case T_BOOL:
        buf_puts(w->out, json_is_true(v) ? "true" : "false");
        break;
    case T_OBJECT:
        check_object(w, f->fields, v);
        break;
    case T_STRINGS:
    case T_INTS:
    case T_OBJECTS:
        check_array(w, f, v);
        break;
    case T_STRMAP:
    case T_ENV:
        check_map(w, f, v);
        break;
    case T_QUANTITY:
        check_quantity(w, v);
        break;
    case T_DOC:
        jsonx_dump(w->out, v);
        break;
    }
}

static void field_error(struct err *err, const char *pointer, const char *msg)
{
    err_field(err, pointer, "%s", msg);
}

static bool env_has_secret(const json_t *env)
{
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)env, k, v) if (json_is_object(v)) return true;
    return false;
}

/* Rules that involve more than one field, or the daemon's configuration. */
static void check_cross(const struct spec_view *v, const struct spec_options *o, struct err *err)
{
    const struct spec_limits *l = o->limits;
    bool kube = strcmp(v->executor, "kubernetes") == 0;
    if (kube && !o->kubernetes_enabled)
        field_error(err, "/executor",
                    "the kubernetes executor is not enabled on this daemon "
                    "(start it with --executor kubernetes)");
    if (!kube && !o->local_enabled)
        field_error(err, "/executor", "the local executor is not enabled on this daemon");
    if (kube && !v->image && !json_object_get(v->kubernetes, "manifest"))
        field_error(err, "/image", "is required by the kubernetes executor");
    if (!kube && (!v->command || json_array_size(v->command) == 0))
        field_error(err, "/command", "is required by the local executor (the program to run)");
    if (!kube && o->local_slots > 0 && v->nranks > o->local_slots) {
        char text[200];
        snprintf(text, sizeof(text),
                 "needs %d ranks but the local executor has %d slots (--local-slots); it could "
                 "never start",
                 v->nranks, o->local_slots);
        field_error(err, "/procs_per_node", text);
    }
    int64_t gpus = jsonx_int(v->resources, "gpus", 0) * v->nranks;
    if (!kube && gpus > o->local_gpus) {
        char text[200];
        snprintf(text, sizeof(text),
                 "needs %lld GPUs (%lld per rank x %d ranks) but this machine has %d for the "
                 "local executor; it could never start",
                 (long long)gpus, (long long)(gpus / v->nranks), v->nranks, o->local_gpus);
        field_error(err, "/resources/gpus", text);
    }
    if (!kube && v->env && env_has_secret(v->env))
        field_error(err, "/env", "secret references need the kubernetes executor");
    /* On Kubernetes the Training Operator restarts pods (manages_restarts): only what its
     * restart policies can say is accepted, rather than settings silently not acted on. */
    if (kube && v->restart_exit_codes)
        field_error(err, "/restart/exit_codes",
                    "is not available on the kubernetes executor: the Training Operator's "
                    "ExitCode policy (restart.policy exit_code) restarts on every exit code >= "
                    "128 and on no other; leave exit_codes out");
    if (kube && v->restart_on)
        field_error(err, "/restart/on",
                    "is not available on the kubernetes executor: the Training Operator restarts "
                    "by restart.policy (on_failure: any failure; exit_code: exit codes >= 128), "
                    "not by the kind of failure");
    if (kube && !strcmp(v->on_stall, "restart"))
        field_error(err, "/health/on_stall",
                    "\"restart\" is not available on the kubernetes executor (the Training "
                    "Operator restarts pods, not trainyard): use \"cancel\" or \"none\"");
    char msg[160];
    if (v->nodes > l->max_nodes) {
        snprintf(msg, sizeof(msg), "must be at most %d on this daemon", l->max_nodes);
        field_error(err, "/nodes", msg);
    }
    if (v->procs_per_node > l->max_procs_per_node) {
        snprintf(msg, sizeof(msg), "must be at most %d on this daemon", l->max_procs_per_node);
        field_error(err, "/procs_per_node", msg);
    }
    if ((int64_t)v->nodes * v->procs_per_node > l->max_ranks) {
        snprintf(msg, sizeof(msg), "nodes x procs_per_node must be at most %d ranks", l->max_ranks);
        field_error(err, "/procs_per_node", msg);
    }
    if (v->env && json_object_size(v->env) > (size_t)l->max_env) {
        snprintf(msg, sizeof(msg), "must have at most %d entries", l->max_env);
        field_error(err, "/env", msg);
    }
    if (v->labels && json_object_size(v->labels) > (size_t)l->max_labels) {
        snprintf(msg, sizeof(msg), "must have at most %d entries", l->max_labels);
        field_error(err, "/labels", msg);
    }
    if (v->args && json_array_size(v->args) > (size_t)l->max_args) {
        snprintf(msg, sizeof(msg), "must have at most %d entries", l->max_args);
        field_error(err, "/args", msg);
    }
    if (v->restart_exit_codes && strcmp(v->restart_policy, "exit_code") != 0)
        field_error(err, "/restart/exit_codes", "is only used with policy \"exit_code\"");
    if (v->max_backoff_seconds >= 0 && v->max_backoff_seconds < v->backoff_seconds)
        field_error(err, "/restart/max_backoff_seconds",
                    "must be at least restart.backoff_seconds (the first delay)");
}

static int check_spec(const json_t *input, const struct spec_options *opts, struct buf *out,
                      struct spec_view *view, struct err *err)
{
    if (!json_is_object(input))
        return err_field(err, "/", "the job spec must be a JSON object");
    size_t start = out->len;
    struct walk w = { .opts = opts, .err = err, .out = out };
    check_object(&w, spec_fields, (json_t *)input);
    spec_view(input, view);
    if (!jsonx_str(input, "executor")) { /* absent or null: the daemon's, written last */
        view->executor = opts->default_executor;
        out->len--; /* the closing brace */
        buf_puts(out, out->len - start > 1 ? ",\"executor\":" : "\"executor\":");
        put_string(&w, opts->default_executor);
        buf_putc(out, '}');
    }
    if (!err_is_set(err))
        check_cross(view, opts, err);
    if (err_is_set(err)) {
        out->len = start;
        if (out->data)
            out->data[start] = '\0';
        return -1;
    }
    return 0;
}

int spec_check(const json_t *input, const struct spec_options *opts, struct buf *out,
               struct spec_view *view, struct err *err)
{
    struct err quiet; /* a caller without err still needs to know */
    err_init(&quiet);
    int rc = check_spec(input, opts, out, view, err ? err : &quiet);
    err_release(&quiet);
    return rc;
}

json_t *spec_validate(const json_t *input, const struct spec_options *opts, struct err *err)
{
    struct buf text = BUF_INIT;
    struct spec_view view;
    json_t *spec = NULL;
    if (spec_check(input, opts, &text, &view, err) == 0)
        spec = jsonx_loadb(text.data, text.len, SPEC_MAX_DEPTH, err);
    buf_release(&text);
    return spec;
}

static json_t *get(const json_t *o, const char *k)
{
    json_t *v = json_object_get(o, k);
    return json_is_null(v) ? NULL : v;
}

void spec_view(const json_t *spec, struct spec_view *v)
{
    memset(v, 0, sizeof(*v));
    v->name = jsonx_str(spec, "name");
    v->image = jsonx_str(spec, "image");
    v->executor = jsonx_str(spec, "executor");
    if (!v->executor)
        v->executor = "local";
    v->command = get(spec, "command");
    v->args = get(spec, "args");
    v->env = get(spec, "env");
    v->nodes = (int)jsonx_int(spec, "nodes", 1);
    v->procs_per_node = (int)jsonx_int(spec, "procs_per_node", 1);
    v->nranks = v->nodes * v->procs_per_node;
    v->resources = get(spec, "resources");
    v->placement = get(spec, "placement");
    json_t *restart = get(spec, "restart");
    v->restart_policy = jsonx_str(restart, "policy");
    if (!v->restart_policy)
        v->restart_policy = "never";
    v->max_restarts = (int)jsonx_int(restart, "max_restarts", 0);
    v->restart_exit_codes = get(restart, "exit_codes");
    v->restart_on = get(restart, "on");
    v->max_preemptions = (int)jsonx_int(restart, "max_preemptions", 10);
    v->avoid_failed_nodes = jsonx_bool(restart, "avoid_failed_nodes", true);
    v->backoff_seconds = jsonx_int(restart, "backoff_seconds", -1);
    v->max_backoff_seconds = jsonx_int(restart, "max_backoff_seconds", -1);
    json_t *health = get(spec, "health");
    v->on_stall = jsonx_str(health, "on_stall");
    if (!v->on_stall)
        v->on_stall = "none";
    v->stall_after_seconds = jsonx_int(health, "stall_after_seconds", 0);
    v->startup_seconds = jsonx_int(health, "startup_seconds", 0);
    v->deadline_seconds = jsonx_int(spec, "deadline_seconds", 0);
    v->queue = jsonx_str(spec, "queue");
    v->priority = (int)jsonx_int(spec, "priority", 0);
    v->checkpoint = get(spec, "checkpoint");
    v->labels = get(spec, "labels");
    v->suspend = jsonx_bool(spec, "suspend", false);
    v->kubernetes = get(spec, "kubernetes");
}
