/*
 * metrics: a small hand-written scanner (no regex) over one line. Bounded: names longer than
 * METRIC_NAME_MAX are skipped, values must parse completely with strtod. Pure functions.
 */
#include "worker/metrics.h"

#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static int is_step_key(const char *k)
{
    return !strcmp(k, "step") || !strcmp(k, "global_step") || !strcmp(k, "iter") ||
           !strcmp(k, "iteration");
}

/* Stores name=value as a metric or the step. Returns the new count. */
static int emit(const char *name, size_t nlen, const char *val, size_t vlen, struct metric_kv *out,
                int n, int max, int64_t *step)
{
    char num[64], key[METRIC_NAME_MAX];
    if (nlen == 0 || nlen >= sizeof(key) || vlen == 0 || vlen >= sizeof(num))
        return n;
    memcpy(key, name, nlen);
    key[nlen] = '\0';
    memcpy(num, val, vlen);
    num[vlen] = '\0';
    char *end;
    double v = strtod(num, &end);
    if (*end != '\0' || end == num)
        return n;
    if (is_step_key(key)) {
        if (v >= 0 && v < 9e15 && v == floor(v))
            *step = (int64_t)v;
        return n;
    }
    if (n < max) {
        memcpy(out[n].name, key, nlen + 1);
        out[n].value = v;
        n++;
    }
    return n;
}

/* Value of a dict entry starting at p: a number, or tensor(number...). Sets *vs and *vl. */
static const char *dict_value(const char *p, const char *e, const char **vs, size_t *vl)
{
    int depth = 0;
    while (p < e && *p == ' ')
        p++;
    if (e - p > 7 && memcmp(p, "tensor(", 7) == 0) {
        p += 7;
        depth = 1;
    }
    *vs = p;
    while (p < e && *p != ',' && *p != '}' && *p != ')')
        p++;
    *vl = (size_t)(p - *vs);
    while (*vl > 0 && (*vs)[*vl - 1] == ' ')
        (*vl)--;
    /* skip to the comma that ends this entry (past a tensor's device=... arguments) */
    while (p < e && !(depth == 0 && (*p == ',' || *p == '}'))) {
        depth += *p == '(' ? 1 : *p == ')' ? -1 : 0;
        p++;
    }
    return p;
}

static int parse_dict(const char *p, const char *e, struct metric_kv *out, int max, int64_t *step)
{
    int n = 0;
    p++; /* '{' */
    while (p < e) {
        while (p < e && (*p == ' ' || *p == ','))
            p++;
        if (p >= e || (*p != '\'' && *p != '"'))
            break;
        char q = *p++;
        const char *ks = p;
        while (p < e && *p != q)
            p++;
        size_t kl = (size_t)(p - ks);
        p++;
        while (p < e && *p == ' ')
            p++;
        if (p >= e || *p != ':')
            break;
        const char *vs;
        size_t vl;
        p = dict_value(p + 1, e, &vs, &vl);
        if (vl > 0 && (*vs == '\'' || *vs == '"'))
            continue; /* a string value */
        n = emit(ks, kl, vs, vl, out, n, max, step);
    }
    return n;
}

static int parse_pairs(const char *p, const char *e, struct metric_kv *out, int max, int64_t *step)
{
    int n = 0;
    while (p < e) {
        while (p < e && (isspace((unsigned char)*p) || *p == ',' || *p == ';' || *p == '|'))
            p++;
        const char *tok = p;
        while (p < e && !isspace((unsigned char)*p) && *p != ',' && *p != ';' && *p != '|')
            p++;
        const char *eq = memchr(tok, '=', (size_t)(p - tok));
        if (!eq || eq == tok || !(isalpha((unsigned char)*tok) || *tok == '_'))
            continue;
        n = emit(tok, (size_t)(eq - tok), eq + 1, (size_t)(p - eq - 1), out, n, max, step);
    }
    return n;
}

int metrics_parse_line(const char *line, size_t len, struct metric_kv *out, int max, int64_t *step)
{
    const char *p = line, *e = line + len;
    *step = -1;
    while (p < e && isspace((unsigned char)*p))
        p++;
    while (e > p && isspace((unsigned char)e[-1]))
        e--;
    if (p < e && *p == '{' && e[-1] == '}')
        return parse_dict(p, e, out, max, step);
    return parse_pairs(p, e, out, max, step);
}
