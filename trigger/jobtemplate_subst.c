/*
 * jobtemplate_subst: one string of a template: parsing ${...} references, substituting values
 * folded for the string's place (a DNS-1035 fragment in the name, label characters in label
 * values), refusing variables outside the substitution places or inside shell scripts, and the
 * shape of the name and label values once substituted. It does not walk the JSON or know
 * where a string sits (jobtemplate.c). Works on the caller's walk and buffers; thread-safe.
 */
#include <ctype.h>

#include "trigger/jobtemplate_internal.h"

#define DNS_MAX 63
#define HOLE    '\x01' /* stands for a variable when a name's shape is checked without values */

/* Parses "${NAME}" or "${NAME:-default}" at s; 0 when s is not a well-formed reference. */
static size_t parse_ref(const char *s, struct ref *r)
{
    memset(r, 0, sizeof(*r));
    if (s[0] != '$' || s[1] != '{' || !jobtemplate_name_char(s[2], true))
        return 0;
    const char *p = s + 2;
    r->name = p;
    while (jobtemplate_name_char(*p, false))
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

static const json_t *declared(const struct walk *w, const char *name, size_t nlen)
{
    char n[VARNAME_MAX + 1];
    if (!w->vars || nlen > VARNAME_MAX)
        return NULL;
    memcpy(n, name, nlen);
    n[nlen] = '\0';
    return json_object_get(w->vars, n);
}

bool jobtemplate_known(const struct walk *w, const struct ref *r)
{
    return jobtemplate_is_builtin(r->name, r->nlen) || declared(w, r->name, r->nlen);
}

/* The declared default of a variable ("NAME": "x" or {"default": "x"}), or NULL. */
static const char *declared_default(const struct walk *w, const struct ref *r)
{
    const json_t *d = declared(w, r->name, r->nlen);
    if (json_is_object(d))
        d = json_object_get(d, "default");
    return json_is_string(d) ? json_string_value(d) : NULL;
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
    if (!r->has_def && !jobtemplate_known(w, r)) {
        char n[VARNAME_MAX + 1];
        snprintf(n, sizeof(n), "%.*s", (int)r->nlen, r->name);
        return jobtemplate_problem(w, "unknown variable %s (declare it in /variables)", n);
    }
    if (!w->vals) {
        buf_putc(out, HOLE);
        return 0;
    }
    const char *v = jobtemplate_value_of(w->vals, r->name, r->nlen);
    if (!v || !*v)
        v = declared_default(w, r);
    if ((!v || !*v) && r->has_def) {
        put_value(out, r->def, r->dlen, place);
        return 0;
    }
    if (!v) {
        char n[VARNAME_MAX + 1];
        snprintf(n, sizeof(n), "%.*s", (int)r->nlen, r->name);
        return jobtemplate_problem(w, "variable %s has no value and no default", n);
    }
    if (place == PLACE_ARG && v[0] == '-' && jobtemplate_is_builtin(r->name, r->nlen)) {
        char n[VARNAME_MAX + 1];
        snprintf(n, sizeof(n), "%.*s", (int)r->nlen, r->name);
        return jobtemplate_problem(w,
                                   "the value of %s starts with '-': the program would read it "
                                   "as an option",
                                   n);
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
            return jobtemplate_problem(w, "%s",
                                       "variables are substituted only in name, command, args, env "
                                       "values and labels values");
        if (jobtemplate_known(w, &r))
            return jobtemplate_problem(w, "%s",
                                       "a variable inside a shell script could inject commands: "
                                       "pass it in env and use \"$NAME\" in the script");
    }
    return 0;
}

/* An argument is a variable and nothing else: "--data=${S3_URI}" or "x ${S3_KEY}" would put the
 * value inside text that some program parses (an option, a script behind `env sh -c`, an
 * interpreter's code), and no search for shells finds every such program. */
static int check_whole(struct walk *w, const char *s)
{
    struct ref r;
    if (!jobtemplate_has_ref(s) || (parse_ref(s, &r) && r.len == strlen(s)))
        return 0;
    return jobtemplate_problem(w, "%s",
                               "a variable must be a whole argument (\"${NAME}\", nothing around "
                               "it): pass \"--flag\", \"${NAME}\" as two arguments, or the value "
                               "in env");
}

int jobtemplate_expand(struct walk *w, const char *s, enum place place, struct buf *out)
{
    struct ref r;
    if (place == PLACE_NONE || place == PLACE_SCRIPT) {
        buf_puts(out, s);
        return check_untouched(w, s, place);
    }
    if (place == PLACE_ARG && check_whole(w, s) < 0)
        return -1;
    for (const char *p = s; *p;) {
        if (p[0] == '$' && p[1] == '$') {
            buf_putc(out, '$');
            p += 2;
        } else if (p[0] == '$' && p[1] == '{') {
            if (!parse_ref(p, &r))
                return jobtemplate_problem(w, "%s",
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
        return jobtemplate_problem(w, "longer than %s bytes once substituted", "65536");
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
int jobtemplate_check_name(struct walk *w, struct buf *b)
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
            return jobtemplate_problem(
                w,
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
            return jobtemplate_problem(w, "%s",
                                       "can never be a valid DNS-1035 name: its fixed text has "
                                       "characters other than a-z, 0-9 and '-', or starts or ends "
                                       "with one that cannot");
    }
    if (literal == 0 && b->len == 0)
        return jobtemplate_problem(w, "%s", "a name is required");
    if (literal > DNS_MAX)
        return jobtemplate_problem(w, "%s", "fixed text is longer than 63 characters");
    return 0;
}

/* Label values: at most 63 characters of [A-Za-z0-9._-], alphanumeric at both ends. Fixed text
 * must fit (checked when validating); substituted values are cut and trimmed to fit. */
int jobtemplate_finish_label(struct walk *w, struct buf *b)
{
    size_t literal = 0;
    if (!w->vals) {
        for (size_t i = 0; i < b->len; i++) {
            if (b->data[i] == HOLE)
                continue;
            literal++;
            if (!label_char(b->data[i]))
                return jobtemplate_problem(
                    w, "%s", "label values may only hold A-Z, a-z, 0-9, '-', '_' and '.'");
        }
        if (literal > DNS_MAX)
            return jobtemplate_problem(w, "%s", "label value is longer than 63 characters");
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

bool jobtemplate_has_ref(const char *s)
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
