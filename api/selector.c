/* selector: label selector parsing. Pure; thread-safe. */
#include "api/selector.h"

#include <ctype.h>

#include "job/names.h"
#include "core/xalloc.h"

static char *trim(char *s)
{
    while (isspace((unsigned char)*s))
        s++;
    size_t n = strlen(s);
    while (n && isspace((unsigned char)s[n - 1]))
        s[--n] = '\0';
    return s;
}

static void add_value(struct label_req *r, const char *v)
{
    r->values = xrealloc(r->values, (r->nvalues + 1) * sizeof(char *));
    r->values[r->nvalues++] = xstrdup(v);
}

/* "(a, b)" -> values. */
static int set_values(struct label_req *r, char *list, size_t max)
{
    list = trim(list);
    size_t n = strlen(list);
    if (n < 2 || list[0] != '(' || list[n - 1] != ')')
        return -1;
    list[n - 1] = '\0';
    char *p = list + 1;
    for (;;) {
        char *comma = strchr(p, ',');
        if (comma)
            *comma = '\0';
        char *v = trim(p);
        if (names_label_value(v) || r->nvalues >= max)
            return -1;
        add_value(r, v);
        if (!comma)
            break;
        p = comma + 1;
    }
    return r->nvalues ? 0 : -1;
}

/* Parses one term into r. */
static int term(char *t, size_t max, struct label_req *r)
{
    t = trim(t);
    char *op;
    memset(r, 0, sizeof(*r));
    if (t[0] == '!') {
        r->op = LABEL_ABSENT;
        r->key = xstrdup(trim(t + 1));
    } else if ((op = strstr(t, " notin ")) || (op = strstr(t, " in "))) {
        bool notin = op[1] == 'n';
        *op = '\0';
        r->op = notin ? LABEL_NOTIN : LABEL_IN;
        r->key = xstrdup(trim(t));
        if (set_values(r, op + (notin ? 7 : 4), max) < 0)
            return -1;
    } else if ((op = strstr(t, "!=")) || (op = strchr(t, '='))) {
        bool ne = op[0] == '!';
        *op = '\0';
        char *v = op + (ne ? 2 : 1);
        if (!ne && *v == '=')
            v++;
        r->op = ne ? LABEL_NE : LABEL_EQ;
        r->key = xstrdup(trim(t));
        v = trim(v);
        if (names_label_value(v))
            return -1;
        add_value(r, v);
    } else {
        r->op = LABEL_EXISTS;
        r->key = xstrdup(t);
    }
    return names_label_key(r->key) ? -1 : 0;
}

/* Splits on commas outside parentheses. */
static char *next_term(char **p)
{
    char *start = *p;
    int depth = 0;
    for (char *q = start; *q; q++) {
        if (*q == '(')
            depth++;
        else if (*q == ')')
            depth--;
        else if (*q == ',' && depth == 0) {
            *q = '\0';
            *p = q + 1;
            return start;
        }
    }
    *p = NULL;
    return start;
}

/* Terms and the largest set's values, counted before anything is parsed. */
static bool within(const char *text, size_t max)
{
    size_t terms = 1, values = 0, depth = 0;
    for (const char *q = text; *q; q++) {
        if (*q == '(')
            depth++, values = 1;
        else if (*q == ')' && depth)
            depth--;
        else if (*q == ',' && depth == 0)
            terms++;
        else if (*q == ',' && ++values > max)
            return false;
    }
    return terms <= max;
}

int selector_parse(const char *text, size_t max_terms, struct label_req **out, size_t *n,
                   struct err *err)
{
    *out = NULL;
    *n = 0;
    if (!within(text, max_terms)) {
        err_set(err, ERR_INVALID,
                "the selector has more than %zu terms, or a set of more than %zu values", max_terms,
                max_terms);
        if (err)
            snprintf(err->reason, sizeof(err->reason), "max_terms");
        return -1;
    }
    char *copy = xstrdup(text), *p = copy;
    int rc = 0;
    while (p && rc == 0) {
        char *t = next_term(&p);
        char *shown = xstrdup(t);
        *out = xrealloc(*out, (*n + 1) * sizeof(**out));
        if (term(t, max_terms, &(*out)[*n]) < 0)
            rc = err_set(err, ERR_INVALID,
                         "selector term '%s' is not valid (use k=v, k!=v, k in (a,b), "
                         "k notin (a,b), k or !k)",
                         shown);
        (*n)++;
        free(shown);
    }
    free(copy);
    if (rc < 0) {
        selector_free(*out, *n);
        *out = NULL;
        *n = 0;
    }
    return rc;
}

void selector_free(struct label_req *reqs, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(reqs[i].key);
        for (size_t k = 0; k < reqs[i].nvalues; k++)
            free(reqs[i].values[k]);
        free(reqs[i].values);
    }
    free(reqs);
}
