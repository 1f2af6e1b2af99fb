/*
 * jobtemplate: validation and substitution of job templates (syntax and rules in the header).
 * One walk over the JSON does both: without values it checks, with values it also builds the
 * substituted copy. It does not validate the job spec itself (the spec validator runs on the
 * result) and keeps no state; thread-safe. Results are new jansson references.
 */
#include "server/trigger/jobtemplate.h"

#include <ctype.h>

#include "server/core/buf.h"
#include "server/core/jsonx.h"
#include "server/core/utf8.h"
#include "server/core/xalloc.h"

#define DEPTH_MAX   32
#define VALUE_MAX   (64 * 1024)
#define VARNAME_MAX 64
#define DNS_MAX     63
#define HOLE        '\x01' /* stands for a variable when a name's shape is checked without values */

static const char *const builtins[] = { "S3_BUCKET",  "S3_KEY",        "S3_URI", "OBJECT_SIZE",
                                        "EVENT_TIME", "S3_VERSION_ID", "S3_ETAG" };

enum place { PLACE_NONE, PLACE_NAME, PLACE_LABEL, PLACE_ARG, PLACE_ENV, PLACE_SCRIPT };

struct walk {
    const json_t *tmpl;
    const json_t *vars;                    /* "variables", or NULL */
    const struct jobtemplate_values *vals; /* NULL when only validating */
    long script_cmd, script_args;          /* index of a shell script in command / args */
    const char *tok[DEPTH_MAX];
    long index[DEPTH_MAX]; /* array index of tok[i], or -1 for an object key */
    char idx[DEPTH_MAX][24];
    int ntok;
    struct buf inline_names; /* "NAME\n" for each ${NAME:-default} seen */
    struct err *err;
};

struct ref {
    const char *name, *def;
    size_t nlen, dlen, len; /* len: bytes of the whole ${...} */
    bool has_def;
};

void jobtemplate_values_init(struct jobtemplate_values *v)
{
    memset(v, 0, sizeof(*v));
}

void jobtemplate_values_release(struct jobtemplate_values *v)
{
    for (size_t i = 0; i < v->n; i++) {
        free(v->names[i]);
        free(v->values[i]);
    }
    free(v->names);
    free(v->values);
    jobtemplate_values_init(v);
}

static const char *value_of(const struct jobtemplate_values *v, const char *name, size_t nlen)
{
    for (size_t i = 0; v && i < v->n; i++)
        if (strlen(v->names[i]) == nlen && memcmp(v->names[i], name, nlen) == 0)
            return v->values[i];
    return NULL;
}

void jobtemplate_values_set(struct jobtemplate_values *v, const char *name, const char *value)
{
    for (size_t i = 0; i < v->n; i++) {
        if (strcmp(v->names[i], name) == 0) {
            free(v->values[i]);
            v->values[i] = xstrdup(value);
            return;
        }
    }
    v->names = xrealloc(v->names, (v->n + 1) * sizeof(*v->names));
    v->values = xrealloc(v->values, (v->n + 1) * sizeof(*v->values));
    v->names[v->n] = xstrdup(name);
    v->values[v->n++] = xstrdup(value);
}

void jobtemplate_values_from_event(struct jobtemplate_values *v, const struct s3event *e)
{
    char num[24] = "";
    char *uri = xasprintf("s3://%s/%s", e->bucket, e->key);
    if (e->size >= 0)
        snprintf(num, sizeof(num), "%lld", (long long)e->size);
    jobtemplate_values_set(v, "S3_BUCKET", e->bucket);
    jobtemplate_values_set(v, "S3_KEY", e->key);
    jobtemplate_values_set(v, "S3_URI", uri);
    jobtemplate_values_set(v, "OBJECT_SIZE", num);
    jobtemplate_values_set(v, "EVENT_TIME", e->event_time);
    jobtemplate_values_set(v, "S3_VERSION_ID", e->version_id);
    jobtemplate_values_set(v, "S3_ETAG", e->etag);
    free(uri);
}

static bool name_char(char c, bool first)
{
    return c == '_' || isalpha((unsigned char)c) || (!first && isdigit((unsigned char)c));
}

static bool valid_name(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > VARNAME_MAX)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!name_char(s[i], i == 0))
            return false;
    return true;
}

static bool is_builtin(const char *name, size_t nlen)
{
    for (size_t i = 0; i < sizeof(builtins) / sizeof(builtins[0]); i++)
        if (strlen(builtins[i]) == nlen && memcmp(builtins[i], name, nlen) == 0)
            return true;
    return false;
}

int jobtemplate_values_from_json(struct jobtemplate_values *v, const json_t *obj, const char *where,
                                 struct err *err)
{
    const char *key;
    json_t *val;
    if (!json_is_object(obj))
        return err_field(err, where, "must be an object of variable names to values");
    json_object_foreach((json_t *)obj, key, val)
    {
        char ptr[160];
        snprintf(ptr, sizeof(ptr), "%s/%.100s", where, key);
        char num[32];
        const char *text = num;
        if (json_is_string(val))
            text = json_string_value(val);
        else if (json_is_integer(val))
            snprintf(num, sizeof(num), "%lld", (long long)json_integer_value(val));
        else if (json_is_boolean(val))
            snprintf(num, sizeof(num), "%s", json_is_true(val) ? "true" : "false");
        else
            text = NULL;
        if (!valid_name(key))
            err_field(err, ptr, "not a variable name ([A-Za-z_][A-Za-z0-9_]*)");
        else if (!text || (json_is_string(val) && strlen(text) != json_string_length(val)))
            err_field(err, ptr, "must be a string, number or boolean without NUL");
        else if (strlen(text) > VALUE_MAX)
            err_field(err, ptr, "longer than %d bytes", VALUE_MAX);
        else
            jobtemplate_values_set(v, key, text);
    }
    return err_is_set(err) ? -1 : 0;
}

/* Parses "${NAME}" or "${NAME:-default}" at s; 0 when s is not a well-formed reference. */
static size_t parse_ref(const char *s, struct ref *r)
{
    memset(r, 0, sizeof(*r));
    if (s[0] != '$' || s[1] != '{' || !name_char(s[2], true))
        return 0;
    const char *p = s + 2;
    r->name = p;
    while (name_char(*p, false))
        p++;
    r->nlen = (size_t)(p - r->name);
    if (r->nlen > VARNAME_MAX)
        return 0;
    if (p[0] == ':' && p[1] == '-') {
        r->has_def = true;
        r->def = p + 2;
        p = strchr(r->def, '}');
        if (!p)
            return 0;
        r->dlen = (size_t)(p - r->def);
    }
    if (*p != '}')
        return 0;
    r->len = (size_t)(p + 1 - s);
    return r->len;
}

static void pointer(const struct walk *w, struct buf *out)
{
    for (int i = 0; i < w->ntok; i++) {
        buf_putc(out, '/');
        jsonx_pointer_append(out, w->tok[i]);
    }
    if (w->ntok == 0)
        buf_putc(out, '/');
}

static int problem(struct walk *w, const char *fmt, const char *arg)
{
    struct buf ptr = BUF_INIT;
    pointer(w, &ptr);
    err_field(w->err, ptr.data, fmt, arg);
    buf_release(&ptr);
    return -1;
}

static const json_t *declared(const struct walk *w, const char *name, size_t nlen)
{
    char n[VARNAME_MAX + 1];
    if (!w->vars || nlen > VARNAME_MAX)
        return NULL;
    memcpy(n, name, nlen);
    n[nlen] = '\0';
    return json_object_get(w->vars, n);
}

static bool known(const struct walk *w, const struct ref *r)
{
    return is_builtin(r->name, r->nlen) || declared(w, r->name, r->nlen);
}

/* The declared default of a variable ("NAME": "x" or {"default": "x"}), or NULL. */
static const char *declared_default(const struct walk *w, const struct ref *r)
{
    const json_t *d = declared(w, r->name, r->nlen);
    if (json_is_object(d))
        d = json_object_get(d, "default");
    return json_is_string(d) ? json_string_value(d) : NULL;
}

static enum place place_of(const struct walk *w)
{
    const char *t0 = w->ntok > 0 ? w->tok[0] : "";
    const json_t *top = json_object_get(w->tmpl, t0);
    if (w->ntok == 1 && strcmp(t0, "name") == 0)
        return PLACE_NAME;
    if (w->ntok == 1 && strcmp(t0, "command") == 0)
        return PLACE_SCRIPT; /* a one-string command line is run by a shell */
    if (w->ntok == 2 && strcmp(t0, "command") == 0)
        return w->index[1] == w->script_cmd ? PLACE_SCRIPT : PLACE_ARG;
    if (w->ntok == 2 && strcmp(t0, "args") == 0)
        return w->index[1] == w->script_args ? PLACE_SCRIPT : PLACE_ARG;
    if (strcmp(t0, "env") == 0 &&
        ((w->ntok == 2 && json_is_object(top)) ||
         (w->ntok == 3 && json_is_array(top) && strcmp(w->tok[2], "value") == 0)))
        return PLACE_ENV;
    if (w->ntok == 2 && strcmp(t0, "labels") == 0 && json_is_object(top))
        return PLACE_LABEL;
    return PLACE_NONE;
}

/* Where the command runs a script given as text: "sh -c SCRIPT" (any flag cluster with c) or
 * an interpreter's "-c"/"-e" code. The script is command[i] or, when the command ends with the
 * flag, args[0]. */
static void find_script(struct walk *w)
{
    static const char *const shells[] = { "sh", "bash", "dash", "zsh", "ash", "ksh" };
    static const char *const interps[] = { "python", "python3", "perl", "node", "ruby" };
    const json_t *cmd = json_object_get(w->tmpl, "command");
    const char *prog = json_string_value(json_array_get(cmd, 0));
    w->script_cmd = w->script_args = -1;
    if (!prog)
        return;
    const char *base = strrchr(prog, '/') ? strrchr(prog, '/') + 1 : prog;
    bool shell = false, interp = false;
    for (size_t i = 0; i < sizeof(shells) / sizeof(shells[0]); i++)
        shell |= strcmp(base, shells[i]) == 0;
    for (size_t i = 0; i < sizeof(interps) / sizeof(interps[0]); i++)
        interp |= strcmp(base, interps[i]) == 0;
    for (size_t i = 1; (shell || interp) && i < json_array_size(cmd); i++) {
        const char *a = json_string_value(json_array_get(cmd, i));
        if (!a || a[0] != '-' || a[1] == '-')
            break;
        bool flag = shell ? strchr(a, 'c') != NULL : (!strcmp(a, "-c") || !strcmp(a, "-e"));
        if (flag) {
            if (i + 1 < json_array_size(cmd))
                w->script_cmd = (long)i + 1;
            else
                w->script_args = 0;
            return;
        }
    }
}

static bool dns_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-';
}

static bool label_char(char c)
{
    return isalnum((unsigned char)c) || c == '-' || c == '_' || c == '.';
}

/* Appends a value folded for its place: a DNS-1035 fragment in names, label characters in
 * labels, as is elsewhere. */
static void put_value(struct buf *out, const char *v, size_t len, enum place place)
{
    for (size_t i = 0; i < len; i++) {
        char c = v[i];
        if (place == PLACE_NAME) {
            c = (char)tolower((unsigned char)c);
            c = dns_char(c) ? c : '-';
            if (c == '-' && out->len > 0 && out->data[out->len - 1] == '-')
                continue;
        } else if (place == PLACE_LABEL) {
            c = label_char(c) ? c : '-';
        }
        buf_putc(out, c);
    }
}

/* Resolves one reference into out (or a HOLE when validating). */
static int substitute(struct walk *w, const struct ref *r, enum place place, struct buf *out)
{
    if (r->has_def)
        buf_printf(&w->inline_names, "%.*s\n", (int)r->nlen, r->name);
    if (!r->has_def && !known(w, r)) {
        char n[VARNAME_MAX + 1];
        snprintf(n, sizeof(n), "%.*s", (int)r->nlen, r->name);
        return problem(w, "unknown variable %s (declare it in /variables)", n);
    }
    if (!w->vals) {
        buf_putc(out, HOLE);
        return 0;
    }
    const char *v = value_of(w->vals, r->name, r->nlen);
    if (!v || !*v)
        v = declared_default(w, r);
    if ((!v || !*v) && r->has_def) {
        put_value(out, r->def, r->dlen, place);
        return 0;
    }
    if (!v) {
        char n[VARNAME_MAX + 1];
        snprintf(n, sizeof(n), "%.*s", (int)r->nlen, r->name);
        return problem(w, "variable %s has no value and no default", n);
    }
    put_value(out, v, strlen(v), place);
    return 0;
}

/* Strings outside the substitution places, and shell scripts, are never changed; only
 * references that look like ours are reported. */
static int check_untouched(struct walk *w, const char *s, enum place place)
{
    struct ref r;
    for (const char *p = s; (p = strchr(p, '$')) != NULL; p++) {
        if (p[1] == '$') {
            p++;
            continue;
        }
        if (!parse_ref(p, &r))
            continue;
        if (place == PLACE_NONE)
            return problem(w, "%s",
                           "variables are substituted only in name, command, args, env "
                           "values and labels values");
        if (known(w, &r))
            return problem(w, "%s",
                           "a variable inside a shell script could inject commands: "
                           "pass it in env and use \"$NAME\" in the script");
    }
    return 0;
}

static int expand(struct walk *w, const char *s, enum place place, struct buf *out)
{
    struct ref r;
    if (place == PLACE_NONE || place == PLACE_SCRIPT) {
        buf_puts(out, s);
        return check_untouched(w, s, place);
    }
    for (const char *p = s; *p;) {
        if (p[0] == '$' && p[1] == '$') {
            buf_putc(out, '$');
            p += 2;
        } else if (p[0] == '$' && p[1] == '{') {
            if (!parse_ref(p, &r))
                return problem(w, "%s",
                               "malformed variable: write ${NAME} or ${NAME:-default}, "
                               "or $${ for a literal ${");
            if (substitute(w, &r, place, out) < 0)
                return -1;
            p += r.len;
        } else {
            buf_putc(out, *p++);
        }
    }
    if (out->len > VALUE_MAX)
        return problem(w, "longer than %s bytes once substituted", "65536");
    return 0;
}

static bool is_dns1035(const char *s, size_t len)
{
    if (len == 0 || len > DNS_MAX || !(s[0] >= 'a' && s[0] <= 'z') || s[len - 1] == '-')
        return false;
    for (size_t i = 0; i < len; i++)
        if (!dns_char(s[i]))
            return false;
    return true;
}

/* Without values (validating): could the name ever be valid? Fixed characters must be
 * DNS-1035 ones, a fixed start a letter, a fixed end a letter or digit, at most 63 fixed.
 * With values: values may have left '-' at either end (fixed text cannot), which is trimmed;
 * then the whole must be a DNS-1035 label. */
static int check_name(struct walk *w, struct buf *b)
{
    size_t literal = 0;
    if (w->vals) {
        while (b->len > 0 && b->data[b->len - 1] == '-')
            b->data[--b->len] = '\0';
        size_t start = 0;
        while (start < b->len && b->data[start] == '-')
            start++;
        buf_consume(b, start);
        if (!is_dns1035(buf_cstr(b), b->len))
            return problem(w,
                           "\"%s\" is not a valid DNS-1035 name once substituted (a-z, 0-9 and "
                           "'-', starting with a letter, at most 63)",
                           buf_cstr(b));
        return 0;
    }
    for (size_t i = 0; i < b->len; i++) {
        char c = b->data[i];
        if (c == HOLE)
            continue;
        literal++;
        if (!dns_char(c) || (i == 0 && !(c >= 'a' && c <= 'z')) || (i == b->len - 1 && c == '-'))
            return problem(w, "%s",
                           "can never be a valid DNS-1035 name: its fixed text has "
                           "characters other than a-z, 0-9 and '-', or starts or ends "
                           "with one that cannot");
    }
    if (literal == 0 && b->len == 0)
        return problem(w, "%s", "a name is required");
    if (literal > DNS_MAX)
        return problem(w, "%s", "fixed text is longer than 63 characters");
    return 0;
}

/* Label values: at most 63 characters of [A-Za-z0-9._-], alphanumeric at both ends. Fixed text
 * must fit (checked when validating); substituted values are cut and trimmed to fit. */
static int finish_label(struct walk *w, struct buf *b)
{
    size_t literal = 0;
    if (!w->vals) {
        for (size_t i = 0; i < b->len; i++) {
            if (b->data[i] == HOLE)
                continue;
            literal++;
            if (!label_char(b->data[i]))
                return problem(w, "%s",
                               "label values may only hold A-Z, a-z, 0-9, '-', '_' and '.'");
        }
        if (literal > DNS_MAX)
            return problem(w, "%s", "label value is longer than 63 characters");
        return 0;
    }
    if (b->len > DNS_MAX) {
        b->len = DNS_MAX;
        b->data[b->len] = '\0';
    }
    while (b->len > 0 && !isalnum((unsigned char)b->data[b->len - 1]))
        b->data[--b->len] = '\0';
    size_t start = 0;
    while (start < b->len && !isalnum((unsigned char)b->data[start]))
        start++;
    buf_consume(b, start);
    return 0;
}

static json_t *walk_node(struct walk *w, const json_t *node);

static void push(struct walk *w, const char *key, long index)
{
    if (index >= 0) {
        snprintf(w->idx[w->ntok], sizeof(w->idx[0]), "%ld", index);
        key = w->idx[w->ntok];
    }
    w->tok[w->ntok] = key;
    w->index[w->ntok++] = index;
}

static bool has_ref(const char *s)
{
    struct ref r;
    for (const char *p = s; (p = strchr(p, '$')) != NULL; p++) {
        if (p[1] == '$')
            p++;
        else if (parse_ref(p, &r))
            return true;
    }
    return false;
}

static json_t *walk_object(struct walk *w, const json_t *node)
{
    json_t *out = json_object(), *child;
    const char *key;
    json_object_foreach((json_t *)node, key, child)
    {
        if (w->ntok == 0 && strcmp(key, "variables") == 0)
            continue;
        push(w, key, -1);
        if (has_ref(key))
            problem(w, "%s", "variables are not substituted in keys");
        json_object_set_new(out, key, walk_node(w, child));
        w->ntok--;
    }
    return out;
}

static json_t *walk_string(struct walk *w, const json_t *node)
{
    struct buf b = BUF_INIT;
    enum place place = place_of(w);
    const char *s = json_string_value(node);
    if (strlen(s) != json_string_length(node))
        problem(w, "%s", "contains a NUL character");
    else if (expand(w, s, place, &b) == 0 && place == PLACE_NAME)
        check_name(w, &b);
    else if (!err_is_set(w->err) && place == PLACE_LABEL)
        finish_label(w, &b);
    json_t *out = json_stringn(buf_cstr(&b), b.len);
    buf_release(&b);
    return out ? out : json_string("");
}

static json_t *walk_node(struct walk *w, const json_t *node)
{
    if (w->ntok >= DEPTH_MAX - 1) {
        problem(w, "nested deeper than %s levels", "32");
        return json_null();
    }
    if (json_is_object(node))
        return walk_object(w, node);
    if (json_is_array(node)) {
        json_t *out = json_array();
        for (size_t i = 0; i < json_array_size(node); i++) {
            push(w, NULL, (long)i);
            json_array_append_new(out, walk_node(w, json_array_get(node, i)));
            w->ntok--;
        }
        return out;
    }
    if (json_is_string(node))
        return walk_string(w, node);
    return json_deep_copy(node);
}

static void check_variables(struct walk *w)
{
    const char *name;
    json_t *def;
    if (!w->vars)
        return;
    if (!json_is_object(w->vars)) {
        err_field(w->err, "/variables", "must be an object of variable declarations");
        w->vars = NULL;
        return;
    }
    json_object_foreach((json_t *)w->vars, name, def)
    {
        struct buf ptr = BUF_INIT;
        buf_puts(&ptr, "/variables/");
        jsonx_pointer_append(&ptr, name);
        const json_t *d = json_is_object(def) ? json_object_get(def, "default") : def;
        const json_t *desc = json_is_object(def) ? json_object_get(def, "description") : NULL;
        size_t extra =
            json_is_object(def) ? json_object_size(def) - (d != NULL) - (desc != NULL) : 0;
        if (!valid_name(name))
            err_field(w->err, ptr.data, "not a variable name ([A-Za-z_][A-Za-z0-9_]*)");
        else if (is_builtin(name, strlen(name)))
            err_field(w->err, ptr.data, "%s is built in and cannot be declared", name);
        else if ((d && !json_is_null(d) && !json_is_string(d)) || (desc && !json_is_string(desc)) ||
                 extra > 0)
            err_field(w->err, ptr.data,
                      "must be a default string, null (required), or {\"default\", "
                      "\"description\"}");
        buf_release(&ptr);
    }
}

/* Values given for names the template does not know are typos; refuse them. */
static void check_values(struct walk *w)
{
    for (size_t i = 0; i < w->vals->n; i++) {
        const char *n = w->vals->names[i];
        struct ref r = { .name = n, .nlen = strlen(n) };
        struct buf line = BUF_INIT;
        buf_printf(&line, "\n%s\n", n);
        bool inline_default = strstr(buf_cstr(&w->inline_names), line.data) != NULL;
        if (!known(w, &r) && !inline_default) {
            char ptr[100];
            snprintf(ptr, sizeof(ptr), "/values/%.80s", n);
            err_field(w->err, ptr, "the template has no variable %s", n);
        }
        buf_release(&line);
    }
}

static json_t *run(const json_t *tmpl, const struct jobtemplate_values *vals, struct err *err)
{
    struct walk w = { .tmpl = tmpl, .vals = vals, .err = err, .inline_names = BUF_INIT };
    struct err local;
    err_init(&local);
    if (!err)
        w.err = &local; /* the walk needs to know whether anything failed */
    if (!json_is_object(tmpl)) {
        err_field(w.err, "/", "a template is a JSON object (a job spec)");
        err_release(&local);
        return NULL;
    }
    buf_putc(&w.inline_names, '\n');
    w.vars = json_object_get(tmpl, "variables");
    check_variables(&w);
    find_script(&w);
    json_t *out = walk_node(&w, tmpl);
    if (vals)
        check_values(&w);
    if (err_is_set(w.err)) {
        json_decref(out);
        out = NULL;
    }
    buf_release(&w.inline_names);
    err_release(&local);
    return out;
}

int jobtemplate_validate(const json_t *tmpl, struct err *err)
{
    json_t *out = run(tmpl, NULL, err);
    json_decref(out);
    return out ? 0 : -1;
}

json_t *jobtemplate_render(const json_t *tmpl, const struct jobtemplate_values *vals,
                           struct err *err)
{
    static const struct jobtemplate_values none = { 0 };
    return run(tmpl, vals ? vals : &none, err);
}
