/*
 * selector: a lexer and parser that follow k8s.io/apimachinery labels/selector.go and
 * fields/selector.go closely enough that every selector kubectl or trainyard sends means the same
 * here. It does not validate label syntax as strictly as the API server (any value without
 * whitespace or operator characters is accepted). Pure functions; thread-safe.
 */
#include "tests/kube/selector.h"

#include <ctype.h>

#include "core/buf.h"
#include "core/parse.h"
#include "core/xalloc.h"
#include "tests/kube/resource.h"
#include "tests/kube/world.h"

void selector_init(struct selector *s)
{
    s->reqs = NULL;
    s->n = 0;
}

void selector_release(struct selector *s)
{
    for (size_t i = 0; i < s->n; i++) {
        free(s->reqs[i].key);
        for (size_t j = 0; j < s->reqs[i].nvalues; j++)
            free(s->reqs[i].values[j]);
        free(s->reqs[i].values);
    }
    free(s->reqs);
    selector_init(s);
}

static struct sel_req *add_req(struct selector *s, char *key, enum sel_op op)
{
    s->reqs = xrealloc(s->reqs, (s->n + 1) * sizeof(*s->reqs));
    struct sel_req *r = &s->reqs[s->n++];
    r->key = key;
    r->op = op;
    r->values = NULL;
    r->nvalues = 0;
    return r;
}

static void add_value(struct sel_req *r, char *value)
{
    r->values = xrealloc(r->values, (r->nvalues + 1) * sizeof(char *));
    r->values[r->nvalues++] = value;
}

/* ---- label selector lexer: identifiers and the operator symbols of selector.go ---- */

enum tok { T_END, T_IDENT, T_NOT, T_EQ, T_DEQ, T_NEQ, T_GT, T_LT, T_LPAREN, T_RPAREN, T_COMMA };

struct lexer {
    const char *p;
    char text[320];
};

static bool special(char c)
{
    return c == '!' || c == '=' || c == '>' || c == '<' || c == '(' || c == ')' || c == ',';
}

static enum tok lex(struct lexer *lx)
{
    while (isspace((unsigned char)*lx->p))
        lx->p++;
    const char *p = lx->p;
    lx->text[0] = '\0';
    if (!*p)
        return T_END;
    struct {
        const char *sym;
        enum tok tok;
    } syms[] = { { "!=", T_NEQ },   { "==", T_DEQ },   { "!", T_NOT },
                 { "=", T_EQ },     { ">", T_GT },     { "<", T_LT },
                 { "(", T_LPAREN }, { ")", T_RPAREN }, { ",", T_COMMA } };
    for (size_t i = 0; i < sizeof(syms) / sizeof(syms[0]); i++) {
        size_t n = strlen(syms[i].sym);
        if (!strncmp(p, syms[i].sym, n)) {
            snprintf(lx->text, sizeof(lx->text), "%s", syms[i].sym);
            lx->p += n;
            return syms[i].tok;
        }
    }
    size_t n = 0;
    while (p[n] && !isspace((unsigned char)p[n]) && !special(p[n]))
        n++;
    snprintf(lx->text, sizeof(lx->text), "%.*s", (int)n, p);
    lx->p += n;
    return T_IDENT;
}

static enum tok peek(struct lexer *lx)
{
    struct lexer copy = *lx;
    return lex(&copy);
}

static int expected(struct lexer *lx, const char *what, struct err *err)
{
    return err_set(err, ERR_INVALID, "unable to parse requirement: found '%s', expected: %s",
                   lx->text, what);
}

static int parse_values(struct lexer *lx, struct sel_req *r, struct err *err)
{
    if (lex(lx) != T_LPAREN)
        return expected(lx, "'('", err);
    if (peek(lx) == T_RPAREN) {
        lex(lx);
        return 0;
    }
    for (;;) {
        enum tok t = lex(lx);
        if (t == T_IDENT)
            add_value(r, xstrdup(lx->text));
        else if (t == T_COMMA || t == T_RPAREN)
            add_value(r, xstrdup("")); /* "in (a,)": an empty value, as selector.go allows */
        else
            return expected(lx, "',' or ')'", err);
        if (t == T_RPAREN)
            return 0;
        if (t == T_IDENT) {
            t = lex(lx);
            if (t == T_RPAREN)
                return 0;
            if (t != T_COMMA)
                return expected(lx, "',' or ')'", err);
        }
    }
}

static int parse_requirement(struct lexer *lx, struct selector *s, struct err *err)
{
    enum tok t = lex(lx);
    if (t == T_NOT) {
        if (lex(lx) != T_IDENT)
            return expected(lx, "identifier", err);
        add_req(s, xstrdup(lx->text), SEL_NOT_EXISTS);
        return 0;
    }
    if (t != T_IDENT)
        return expected(lx, "identifier", err);
    char *key = xstrdup(lx->text);
    t = peek(lx);
    if (t == T_END || t == T_COMMA) {
        add_req(s, key, SEL_EXISTS);
        return 0;
    }
    t = lex(lx);
    if (t == T_IDENT && (!strcmp(lx->text, "in") || !strcmp(lx->text, "notin")))
        return parse_values(lx, add_req(s, key, lx->text[0] == 'i' ? SEL_IN : SEL_NOTIN), err);
    enum sel_op op = t == T_NEQ ? SEL_NEQ : t == T_GT ? SEL_GT : t == T_LT ? SEL_LT : SEL_EQ;
    if (t != T_EQ && t != T_DEQ && t != T_NEQ && t != T_GT && t != T_LT) {
        free(key);
        return expected(lx, "'=', '!=', '==', 'in', notin'", err);
    }
    struct sel_req *r = add_req(s, key, op);
    t = peek(lx);
    if (t == T_END || t == T_COMMA) { /* "a=" selects an empty value */
        add_value(r, xstrdup(""));
        return 0;
    }
    if (lex(lx) != T_IDENT)
        return expected(lx, "identifier", err);
    int64_t n;
    if ((op == SEL_GT || op == SEL_LT) && parse_int64(lx->text, INT64_MIN, INT64_MAX, &n) < 0)
        return err_set(err, ERR_INVALID,
                       "unable to parse requirement: for 'Gt', 'Lt' operators, "
                       "the value must be an integer");
    add_value(r, xstrdup(lx->text));
    return 0;
}

int selector_parse_labels(struct selector *s, const char *text, struct err *err)
{
    if (!text)
        return 0;
    struct lexer lx = { .p = text };
    while (peek(&lx) != T_END) {
        if (parse_requirement(&lx, s, err) < 0)
            goto fail;
        enum tok t = lex(&lx);
        if (t == T_END)
            break;
        if (t != T_COMMA) {
            expected(&lx, "',' or 'end of string'", err);
            goto fail;
        }
        if (peek(&lx) == T_END) {
            expected(&lx, "identifier after ','", err);
            goto fail;
        }
    }
    return 0;
fail:
    selector_release(s);
    return -1;
}

/* Splits one term of a field selector at its operator, honouring backslash escapes. */
static int parse_field_term(struct selector *s, const char *term, size_t len, struct err *err)
{
    struct buf key = BUF_INIT, value = BUF_INIT;
    struct buf *cur = &key;
    enum sel_op op = SEL_EQ;
    bool have_op = false;
    for (size_t i = 0; i < len; i++) {
        char c = term[i];
        if (c == '\\' && i + 1 < len) {
            buf_putc(cur, term[++i]);
        } else if (!have_op && c == '!' && i + 1 < len && term[i + 1] == '=') {
            op = SEL_NEQ, have_op = true, cur = &value, i++;
        } else if (!have_op && c == '=') {
            have_op = true, cur = &value;
            if (i + 1 < len && term[i + 1] == '=')
                i++;
        } else {
            buf_putc(cur, c);
        }
    }
    if (!have_op || key.len == 0) {
        buf_release(&key);
        buf_release(&value);
        return err_set(err, ERR_INVALID, "invalid selector: '%.*s'; can't understand '%.*s'",
                       (int)len, term, (int)len, term);
    }
    struct sel_req *r = add_req(s, buf_detach(&key, NULL), op);
    add_value(r, buf_detach(&value, NULL));
    return 0;
}

int selector_parse_fields(struct selector *s, const char *text, struct err *err)
{
    if (!text)
        return 0;
    const char *start = text;
    for (const char *p = text;; p++) {
        if (*p == '\\' && p[1]) {
            p++;
            continue;
        }
        if (*p != ',' && *p != '\0')
            continue;
        if (p > start && parse_field_term(s, start, (size_t)(p - start), err) < 0) {
            selector_release(s);
            return -1;
        }
        if (!*p)
            break;
        start = p + 1;
    }
    return 0;
}

static bool req_match(const struct sel_req *r, const char *v)
{
    int64_t a, b;
    switch (r->op) {
    case SEL_EXISTS:
        return v != NULL;
    case SEL_NOT_EXISTS:
        return v == NULL;
    case SEL_EQ:
        return v && !strcmp(v, r->values[0]);
    case SEL_NEQ:
        return !v || strcmp(v, r->values[0]);
    case SEL_IN:
    case SEL_NOTIN:
        for (size_t i = 0; v && i < r->nvalues; i++)
            if (!strcmp(v, r->values[i]))
                return r->op == SEL_IN;
        return r->op == SEL_NOTIN;
    case SEL_GT:
    case SEL_LT:
        if (!v || parse_int64(v, INT64_MIN, INT64_MAX, &a) < 0 ||
            parse_int64(r->values[0], INT64_MIN, INT64_MAX, &b) < 0)
            return false;
        return r->op == SEL_GT ? a > b : a < b;
    }
    return false;
}

bool selector_match(const struct selector *s, selector_lookup_fn lookup, void *ctx)
{
    for (size_t i = 0; i < s->n; i++)
        if (!req_match(&s->reqs[i], lookup(s->reqs[i].key, ctx)))
            return false;
    return true;
}

static const char *label_lookup(const char *key, void *ctx)
{
    return json_string_value(json_object_get(ctx, key));
}

bool selector_match_labels(const struct selector *s, const json_t *labels)
{
    return selector_match(s, label_lookup, (void *)labels);
}

struct field_ctx {
    const json_t *obj;
    char scratch[32];
};

static const char *field_lookup(const char *key, void *ctx)
{
    struct field_ctx *fc = ctx;
    /* "source" selects an event's reporting component (event/strategy.go) */
    json_t *v = kpath(fc->obj, strcmp(key, "source") ? key : "source.component");
    if (json_is_string(v))
        return json_string_value(v);
    if (json_is_boolean(v))
        return json_is_true(v) ? "true" : "false";
    if (json_is_integer(v)) {
        snprintf(fc->scratch, sizeof(fc->scratch), "%lld", (long long)json_integer_value(v));
        return fc->scratch;
    }
    /* An absent field compares as "" (so `spec.nodeName=` selects unscheduled pods) and an
     * absent spec.unschedulable as "false", like the server's field sets. */
    return strcmp(key, "spec.unschedulable") ? "" : "false";
}

bool selector_match_fields(const struct selector *s, const json_t *obj)
{
    struct field_ctx fc = { .obj = obj };
    return selector_match(s, field_lookup, &fc);
}

const char *selector_fields_allowed(const struct selector *s, const char *allowed)
{
    for (size_t i = 0; i < s->n; i++) {
        const char *k = s->reqs[i].key;
        if (strcmp(k, "metadata.name") && strcmp(k, "metadata.namespace") &&
            !resource_word_in(allowed, k))
            return k;
    }
    return NULL;
}
