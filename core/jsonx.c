/* jsonx: jansson helpers. Thread-safe (no shared state). */
#include "core/jsonx.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "core/clock.h"
#include "core/utf8.h"
#include "core/xalloc.h"

/* A string as jansson writes it: '"' and '\\' escaped, control characters as \b \f \n \r \t or
 * \u00XX, everything else (UTF-8 included) as it is. Runs without escapes are copied at once. */
void jsonx_dump_string(struct buf *out, const char *s, size_t len)
{
    static const char hex[] = "0123456789ABCDEF";
    size_t plain = 0;
    while (plain < len && (unsigned char)s[plain] >= 0x20 && s[plain] != '"' && s[plain] != '\\')
        plain++;
    if (plain == len) { /* nothing to escape: the usual case, one copy */
        buf_reserve(out, len + 2);
        char *d = out->data + out->len;
        d[0] = '"';
        memcpy(d + 1, s, len);
        d[len + 1] = '"';
        out->len += len + 2;
        out->data[out->len] = '\0';
        return;
    }
    buf_putc(out, '"');
    size_t run = 0;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c >= 0x20 && c != '"' && c != '\\')
            continue;
        buf_append(out, s + run, i - run);
        run = i + 1;
        const char *esc = c == '"'    ? "\\\""
                          : c == '\\' ? "\\\\"
                          : c == '\b' ? "\\b"
                          : c == '\f' ? "\\f"
                          : c == '\n' ? "\\n"
                          : c == '\r' ? "\\r"
                          : c == '\t' ? "\\t"
                                      : NULL;
        if (esc) {
            buf_append(out, esc, 2);
        } else {
            char u[6] = { '\\', 'u', '0', '0', hex[c >> 4], hex[c & 15] };
            buf_append(out, u, sizeof(u));
        }
    }
    buf_append(out, s + run, len - run);
    buf_putc(out, '"');
}

#define DUMP_MAX_DEPTH 2048 /* parsed input is limited far below; this guards the stack */

void jsonx_put_real(struct buf *out, double v)
{
    char s[40];
    if (!isfinite(v)) { /* JSON has none; jansson refuses them too */
        buf_puts(out, "null");
        return;
    }
    /* The fewest digits that read back as the same double: a loss printed as 10.4461 is
     * answered as 10.4461, not as %.17g's 10.446099999999999. When any form of at most 15
     * digits reads back, %.15g (trailing zeros dropped) is that form, so three tries do. */
    for (int prec = 15; prec <= 17; prec++) {
        snprintf(s, sizeof(s), "%.*g", prec, v);
        if (prec == 17 || strtod(s, NULL) == v) /* 17 digits always read back */
            break;
    }
    /* jansson's marks of a real: ".0" when it would read as an integer, exponent unpadded */
    if (!strpbrk(s, ".eEn"))
        snprintf(s + strlen(s), sizeof(s) - strlen(s), ".0");
    char *e = strpbrk(s, "eE");
    if (e) { /* "1e+20" -> "1e20", "1e-07" -> "1e-7" */
        char *d = e[1] == '-' ? e + 2 : e + 1;
        char *z = e[1] == '+' ? e + 2 : d;
        while (*z == '0' && z[1])
            z++;
        memmove(d, z, strlen(z) + 1);
    }
    buf_puts(out, s);
}

/* jansson's compact output, byte for byte (reals excepted: jsonx_put_real), without its
 * per-container cycle check (a printf and a hash insert each) and callback per token: the daemon
 * dumps every response body. */
static void dump_value(struct buf *out, const json_t *v, int depth)
{
    json_t *m = (json_t *)v;
    if (depth > DUMP_MAX_DEPTH) {
        buf_puts(out, "null");
        return;
    }
    switch (json_typeof(v)) {
    case JSON_OBJECT:
        buf_putc(out, '{');
        for (void *it = json_object_iter(m), *first = it; it; it = json_object_iter_next(m, it)) {
            if (it != first)
                buf_putc(out, ',');
            jsonx_dump_string(out, json_object_iter_key(it), json_object_iter_key_len(it));
            buf_putc(out, ':');
            dump_value(out, json_object_iter_value(it), depth + 1);
        }
        buf_putc(out, '}');
        break;
    case JSON_ARRAY:
        buf_putc(out, '[');
        for (size_t i = 0; i < json_array_size(v); i++) {
            if (i)
                buf_putc(out, ',');
            dump_value(out, json_array_get(v, i), depth + 1);
        }
        buf_putc(out, ']');
        break;
    case JSON_STRING:
        jsonx_dump_string(out, json_string_value(v), json_string_length(v));
        break;
    case JSON_INTEGER:
        buf_put_int(out, json_integer_value(v));
        break;
    case JSON_REAL:
        jsonx_put_real(out, json_real_value(v));
        break;
    case JSON_TRUE:
        buf_puts(out, "true");
        break;
    case JSON_FALSE:
        buf_puts(out, "false");
        break;
    case JSON_NULL:
        buf_puts(out, "null");
        break;
    }
}

void jsonx_dump(struct buf *out, const json_t *v)
{
    if (v)
        dump_value(out, v, 0);
}

char *jsonx_dumps(const json_t *v)
{
    struct buf b = BUF_INIT;
    buf_reserve(&b, 256);
    jsonx_dump(&b, v);
    return buf_detach(&b, NULL);
}

const char *jsonx_str(const json_t *obj, const char *key)
{
    json_t *v = json_object_get(obj, key);
    return json_is_string(v) ? json_string_value(v) : NULL;
}

int64_t jsonx_int(const json_t *obj, const char *key, int64_t def)
{
    json_t *v = json_object_get(obj, key);
    return json_is_integer(v) ? (int64_t)json_integer_value(v) : def;
}

bool jsonx_bool(const json_t *obj, const char *key, bool def)
{
    json_t *v = json_object_get(obj, key);
    return json_is_boolean(v) ? json_is_true(v) : def;
}

void jsonx_set_str(json_t *obj, const char *key, const char *value)
{
    json_object_set_new(obj, key, value ? json_string(value) : json_null());
}

void jsonx_set_time(json_t *obj, const char *key, int64_t ns)
{
    char ts[CLOCK_RFC3339_MAX];
    json_object_set_new(obj, key, ns ? json_string(clock_format(ns, ts)) : json_null());
}

void jsonx_escape_bytes(struct buf *out, const char *s, size_t len)
{
    static const char hex[] = "0123456789abcdef";
    size_t i = 0;
    while (i < len) {
        unsigned char c = (unsigned char)s[i];
        if (c >= 0x20 && c < 0x80 && c != '"' && c != '\\') {
            size_t start = i;
            while (i < len && (unsigned char)s[i] >= 0x20 && (unsigned char)s[i] < 0x80 &&
                   s[i] != '"' && s[i] != '\\')
                i++;
            buf_append(out, s + start, i - start);
            continue;
        }
        if (c == '"' || c == '\\') {
            char e[2] = { '\\', (char)c };
            buf_append(out, e, 2);
            i++;
        } else if (c == '\n') {
            buf_append(out, "\\n", 2);
            i++;
        } else if (c == '\t') {
            buf_append(out, "\\t", 2);
            i++;
        } else if (c == '\r') {
            buf_append(out, "\\r", 2);
            i++;
        } else if (c == 0) {
            buf_append(out, "\\\\x00", 5);
            i++;
        } else if (c < 0x20 || c == 0x7f) {
            char e[6] = { '\\', 'u', '0', '0', hex[c >> 4], hex[c & 15] };
            buf_append(out, e, 6);
            i++;
        } else {
            size_t n = utf8_valid_prefix(s + i, len - i);
            if (n > 0) {
                buf_append(out, s + i, n);
                i += n;
            } else {
                /* An invalid byte is shown, not dropped: "\\xff" reads as \xff once decoded. */
                char e[5] = { '\\', '\\', 'x', hex[c >> 4], hex[c & 15] };
                buf_append(out, e, 5);
                i++;
            }
        }
    }
}

void jsonx_pointer_append(struct buf *out, const char *token)
{
    for (const char *p = token; *p; p++) {
        if (*p == '~')
            buf_puts(out, "~0");
        else if (*p == '/')
            buf_puts(out, "~1");
        else
            buf_putc(out, *p);
    }
}
