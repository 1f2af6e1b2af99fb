/*
 * http_target: request-target parsing (see http_target.h). One pass counts the parameters (the
 * limit is checked before anything is allocated), a second decodes every string into one block
 * no larger than the target itself.
 */
#include "server/http/http_target.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/xalloc.h"

static int hexval(char c)
{
    return c >= '0' && c <= '9'   ? c - '0'
           : c >= 'a' && c <= 'f' ? c - 'a' + 10
           : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                  : -1;
}

/* Decodes n bytes of s into out (NUL-terminated); returns the decoded length. */
static size_t decode(const char *s, size_t n, bool plus_is_space, char *out)
{
    size_t w = 0;
    for (size_t i = 0; i < n; i++) {
        int hi, lo;
        if (s[i] == '%' && i + 2 < n && (hi = hexval(s[i + 1])) >= 0 &&
            (lo = hexval(s[i + 2])) >= 0) {
            out[w++] = (char)(hi << 4 | lo);
            i += 2;
        } else {
            out[w++] = plus_is_space && s[i] == '+' ? ' ' : s[i];
        }
    }
    out[w] = '\0';
    return w;
}

static int fail(struct err *err, const char *reason, const char *fmt, const char *arg)
{
    err_set(err, ERR_INVALID, fmt, arg);
    if (err)
        snprintf(err->reason, sizeof(err->reason), "%s", reason);
    return -1;
}

/* The number of non-empty '&'-separated parameters in q[0..n). */
static size_t count_params(const char *q, size_t n)
{
    size_t count = 0;
    bool in_param = false;
    for (size_t i = 0; i < n; i++) {
        if (q[i] == '&') {
            in_param = false;
        } else if (!in_param) {
            in_param = true;
            count++;
        }
    }
    return count;
}

/* Decodes one "k=v" (or "k") parameter into the next slot of t. */
static int add_param(struct http_target *t, const char *p, size_t n, char **w, struct err *err)
{
    const char *eq = memchr(p, '=', n);
    size_t klen = eq ? (size_t)(eq - p) : n;
    char *key = *w;
    size_t kd = decode(p, klen, true, key);
    *w += kd + 1;
    char *value = NULL;
    size_t vd = 0;
    if (eq) {
        value = *w;
        vd = decode(eq + 1, n - klen - 1, true, value);
        *w += vd + 1;
    }
    if (memchr(key, '\0', kd) || (value && memchr(value, '\0', vd)))
        return fail(err, "nul", "query parameter '%s' holds a NUL byte (%%00)", key);
    t->keys[t->nparams] = key;
    t->values[t->nparams++] = value;
    return 0;
}

int http_target_parse(struct http_target *t, const char *raw, size_t len,
                      const struct http_target_limits *lim, struct err *err)
{
    memset(t, 0, sizeof(*t));
    if (len > lim->max_bytes) {
        err_set(err, ERR_INVALID, "the request target is longer than %zu bytes", lim->max_bytes);
        if (err)
            snprintf(err->reason, sizeof(err->reason), "max_bytes");
        return -1;
    }
    const char *hash = memchr(raw, '#', len);
    if (hash)
        len = (size_t)(hash - raw);
    const char *q = memchr(raw, '?', len);
    size_t plen = q ? (size_t)(q - raw) : len;
    size_t qlen = q ? len - plen - 1 : 0;
    size_t n = q ? count_params(q + 1, qlen) : 0;
    if (n > lim->max_params) {
        err_set(err, ERR_INVALID, "the query has %zu parameters, more than %zu", n,
                lim->max_params);
        if (err)
            snprintf(err->reason, sizeof(err->reason), "max_params");
        return -1;
    }
    /* Decoding never lengthens: the target's bytes plus a terminator per string suffice. */
    t->storage = xmalloc(len + 2 * n + 2);
    t->keys = xcalloc(n + 1, sizeof(char *));
    t->values = xcalloc(n + 1, sizeof(char *));
    char *w = t->storage;
    t->path = w;
    size_t pd = decode(raw, plen, false, w);
    w += pd + 1;
    for (size_t i = 0; i < pd; i++) {
        unsigned char c = (unsigned char)t->path[i];
        if (c < 0x20 || c == 0x7f) {
            http_target_release(t);
            return fail(err, "control", "%s",
                        "the path holds a NUL or control character (%00-%1F, %7F)");
        }
    }
    for (size_t i = 0; q && i < qlen;) {
        const char *p = q + 1 + i;
        const char *amp = memchr(p, '&', qlen - i);
        size_t pn = amp ? (size_t)(amp - p) : qlen - i;
        if (pn && add_param(t, p, pn, &w, err) < 0) {
            http_target_release(t);
            return -1;
        }
        i += pn + 1;
    }
    return 0;
}

const char *http_target_query(const struct http_target *t, const char *key)
{
    for (size_t i = 0; i < t->nparams; i++)
        if (strcasecmp(t->keys[i], key) == 0) /* as libmicrohttpd compared them */
            return t->values[i];
    return NULL;
}

void http_target_release(struct http_target *t)
{
    free(t->storage);
    free(t->keys);
    free(t->values);
    memset(t, 0, sizeof(*t));
}
