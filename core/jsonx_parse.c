/*
 * jsonx_parse: a strict RFC 8259 parser that builds jansson values in one pass over the text.
 * It accepts and rejects what json_loadb(JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL |
 * JSON_DECODE_ANY) does and builds equal values (tests/fuzz/fuzz_json.c checks both on
 * every input); it exists because jansson's lexer reads through a per-byte stream and copies each
 * token twice, which made it a fifth of a submission's request-side CPU.
 */
#include <errno.h>
#include <math.h>

#include "core/jsonx.h"
#include "core/utf8.h"
#include "core/xalloc.h"

struct parser {
    const char *start, *p, *end;
    int depth, max_depth;
    struct buf scratch; /* a string with escapes, or a long number, decoded */
    struct err *err;
    bool failed;
};

/* Records the first error with its line and column (1-based, in bytes). */
static json_t *fail(struct parser *ps, const char *what)
{
    if (ps->failed)
        return NULL;
    ps->failed = true;
    if (ps->depth > ps->max_depth) {
        err_set(ps->err, ERR_INVALID, "JSON nested deeper than %d levels", ps->max_depth);
        if (ps->err) /* which limit: the caller names its setting */
            snprintf(ps->err->reason, sizeof(ps->err->reason), "max_depth");
        return NULL;
    }
    int line = 1;
    const char *line_start = ps->start;
    for (const char *q = ps->start; q < ps->p && q < ps->end; q++)
        if (*q == '\n')
            line++, line_start = q + 1;
    err_set(ps->err, ERR_INVALID, "invalid JSON at line %d column %d: %s", line,
            (int)(ps->p - line_start) + 1, what);
    return NULL;
}

static void skip_space(struct parser *ps)
{
    while (ps->p < ps->end && (*ps->p == ' ' || *ps->p == '\n' || *ps->p == '\t' || *ps->p == '\r'))
        ps->p++;
}

static int hex4(const char *s, unsigned *out)
{
    unsigned v = 0;
    for (int i = 0; i < 4; i++) {
        char c = s[i];
        unsigned d = c >= '0' && c <= '9'   ? (unsigned)(c - '0')
                     : c >= 'a' && c <= 'f' ? (unsigned)(c - 'a' + 10)
                     : c >= 'A' && c <= 'F' ? (unsigned)(c - 'A' + 10)
                                            : 16u;
        if (d == 16)
            return -1;
        v = v << 4 | d;
    }
    *out = v;
    return 0;
}

static void put_utf8(struct buf *b, unsigned cp)
{
    char s[4];
    size_t n;
    if (cp < 0x80) {
        s[0] = (char)cp, n = 1;
    } else if (cp < 0x800) {
        s[0] = (char)(0xc0 | cp >> 6), s[1] = (char)(0x80 | (cp & 0x3f)), n = 2;
    } else if (cp < 0x10000) {
        s[0] = (char)(0xe0 | cp >> 12), s[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
        s[2] = (char)(0x80 | (cp & 0x3f)), n = 3;
    } else {
        s[0] = (char)(0xf0 | cp >> 18), s[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
        s[2] = (char)(0x80 | ((cp >> 6) & 0x3f)), s[3] = (char)(0x80 | (cp & 0x3f)), n = 4;
    }
    buf_append(b, s, n);
}

/* One escape after the backslash at ps->p; appends what it stands for to the scratch buffer. */
static int unescape(struct parser *ps)
{
    const char *e = ps->p + 1;
    if (e >= ps->end)
        return fail(ps, "premature end of input"), -1;
    static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
    const char *k = *e ? strchr(from, *e) : NULL;
    if (k) {
        buf_putc(&ps->scratch, to[k - from]);
        ps->p = e + 1;
        return 0;
    }
    unsigned cp, lo;
    if (*e != 'u' || ps->end - e < 5 || hex4(e + 1, &cp) < 0)
        return fail(ps, "invalid escape"), -1;
    ps->p = e + 5;
    if (cp >= 0xdc00 && cp <= 0xdfff)
        return fail(ps, "invalid Unicode escape (lone low surrogate)"), -1;
    if (cp >= 0xd800 && cp <= 0xdbff) {
        if (ps->end - ps->p < 6 || ps->p[0] != '\\' || ps->p[1] != 'u' ||
            hex4(ps->p + 2, &lo) < 0 || lo < 0xdc00 || lo > 0xdfff)
            return fail(ps, "invalid Unicode escape (unpaired high surrogate)"), -1;
        cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
        ps->p += 6;
    }
    put_utf8(&ps->scratch, cp);
    return 0;
}

/* A string at ps->p (on the opening quote). Sets *s and *len to its decoded bytes: the input
 * itself when it holds no escapes, else the scratch buffer. */
static int scan_string(struct parser *ps, const char **s, size_t *len)
{
    const char *run = ++ps->p;
    bool escaped = false;
    buf_reset(&ps->scratch);
    while (ps->p < ps->end) {
        unsigned char c = (unsigned char)*ps->p;
        if (c == '"') {
            if (escaped)
                buf_append(&ps->scratch, run, (size_t)(ps->p - run));
            *s = escaped ? ps->scratch.data : run;
            *len = escaped ? ps->scratch.len : (size_t)(ps->p - run);
            ps->p++;
            return 0;
        }
        if (c < 0x20)
            return fail(ps, "control character in string"), -1;
        if (c == '\\') {
            buf_append(&ps->scratch, run, (size_t)(ps->p - run));
            escaped = true;
            if (unescape(ps) < 0)
                return -1;
            run = ps->p;
        } else if (c < 0x80) {
            ps->p++;
        } else {
            size_t n = utf8_valid_prefix(ps->p, (size_t)(ps->end - ps->p));
            if (n == 0)
                return fail(ps, "invalid UTF-8"), -1;
            ps->p += n;
        }
    }
    return fail(ps, "premature end of input"), -1;
}

static json_t *parse_string(struct parser *ps)
{
    const char *s;
    size_t len;
    if (scan_string(ps, &s, &len) < 0)
        return NULL;
    return json_stringn_nocheck(s ? s : "", len);
}

static const char *digits(const char *p, const char *end)
{
    while (p < end && *p >= '0' && *p <= '9')
        p++;
    return p;
}

/* A number: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?; an integer when it has neither a
 * fraction nor an exponent, as jansson decides. */
static json_t *parse_number(struct parser *ps)
{
    const char *p = ps->p, *end = ps->end;
    bool real = false;
    if (p < end && *p == '-')
        p++;
    if (p == end || !(*p >= '0' && *p <= '9'))
        return fail(ps, "invalid token");
    p = *p == '0' ? p + 1 : digits(p, end);
    if (p < end && *p == '.') {
        const char *f = digits(p + 1, end);
        if (f == p + 1)
            return fail(ps, "invalid number");
        p = f, real = true;
    }
    if (p < end && (*p == 'e' || *p == 'E')) {
        p++;
        if (p < end && (*p == '+' || *p == '-'))
            p++;
        const char *x = digits(p, end);
        if (x == p)
            return fail(ps, "invalid number");
        p = x, real = true;
    }
    buf_reset(&ps->scratch);
    buf_append(&ps->scratch, ps->p, (size_t)(p - ps->p));
    const char *text = buf_cstr(&ps->scratch);
    char *stop;
    errno = 0;
    json_t *v;
    if (real) {
        double d = strtod(text, &stop);
        if (errno == ERANGE && isinf(d))
            return fail(ps, "real number overflow");
        v = json_real(d);
    } else {
        long long i = strtoll(text, &stop, 10);
        if (errno == ERANGE)
            return fail(ps, i < 0 ? "too big negative integer" : "too big integer");
        v = json_integer(i);
    }
    ps->p = p;
    return v;
}

static json_t *parse_literal(struct parser *ps)
{
    static const struct {
        const char *word;
        size_t len;
    } words[] = { { "true", 4 }, { "false", 5 }, { "null", 4 } };
    for (int i = 0; i < 3; i++) {
        if ((size_t)(ps->end - ps->p) >= words[i].len &&
            memcmp(ps->p, words[i].word, words[i].len) == 0) {
            ps->p += words[i].len;
            return i == 0 ? json_true() : i == 1 ? json_false() : json_null();
        }
    }
    return fail(ps, "invalid token");
}

static json_t *parse_value(struct parser *ps);

/* After a member or an element: ',' (returns 1), the closing bracket (0) or an error (-1). */
static int next_item(struct parser *ps, char close)
{
    skip_space(ps);
    if (ps->p < ps->end && *ps->p == ',') {
        ps->p++;
        return 1;
    }
    if (ps->p < ps->end && *ps->p == close) {
        ps->p++;
        return 0;
    }
    fail(ps, ps->p < ps->end ? "unexpected token" : "premature end of input");
    return -1;
}

static int parse_member(struct parser *ps, json_t *obj)
{
    skip_space(ps);
    const char *key;
    size_t klen;
    if (ps->p >= ps->end || *ps->p != '"')
        return fail(ps, "string or '}' expected"), -1;
    if (scan_string(ps, &key, &klen) < 0)
        return -1;
    if (memchr(key, '\0', klen))
        return fail(ps, "NUL byte in object key not supported"), -1;
    if (json_object_getn(obj, key, klen))
        return fail(ps, "duplicate object key"), -1;
    /* A key with escapes lives in the scratch buffer, which the value reuses: copy it. */
    char small[64], *kcopy = (char *)key;
    if (key == ps->scratch.data) {
        kcopy = klen < sizeof(small) ? small : xmalloc(klen);
        memcpy(kcopy, key, klen);
    }
    skip_space(ps);
    json_t *v = NULL;
    if (ps->p < ps->end && *ps->p == ':') {
        ps->p++;
        v = parse_value(ps);
    } else {
        fail(ps, "':' expected");
    }
    int rc = v ? json_object_setn_new_nocheck(obj, kcopy, klen, v) : -1;
    if (kcopy != key && kcopy != small)
        free(kcopy);
    return rc;
}

static json_t *parse_object(struct parser *ps)
{
    json_t *obj = json_object();
    ps->p++;
    skip_space(ps);
    if (ps->p < ps->end && *ps->p == '}') {
        ps->p++;
        return obj;
    }
    int more = 1;
    while (more == 1)
        more = parse_member(ps, obj) < 0 ? -1 : next_item(ps, '}');
    if (more < 0)
        json_decref(obj), obj = NULL;
    return obj;
}

static json_t *parse_array(struct parser *ps)
{
    json_t *arr = json_array();
    ps->p++;
    skip_space(ps);
    if (ps->p < ps->end && *ps->p == ']') {
        ps->p++;
        return arr;
    }
    int more = 1;
    while (more == 1) {
        json_t *v = parse_value(ps);
        more = v && json_array_append_new(arr, v) == 0 ? next_item(ps, ']') : -1;
    }
    if (more < 0)
        json_decref(arr), arr = NULL;
    return arr;
}

static json_t *parse_value(struct parser *ps)
{
    skip_space(ps);
    if (ps->p >= ps->end)
        return fail(ps, "premature end of input");
    char c = *ps->p;
    if (c == '{' || c == '[') {
        if (++ps->depth > ps->max_depth)
            return fail(ps, "nested too deep");
        json_t *v = c == '{' ? parse_object(ps) : parse_array(ps);
        ps->depth--;
        return v;
    }
    if (c == '"')
        return parse_string(ps);
    if (c == '-' || (c >= '0' && c <= '9'))
        return parse_number(ps);
    return parse_literal(ps);
}

json_t *jsonx_loadb(const char *data, size_t len, int max_depth, struct err *err)
{
    struct parser ps = { .start = data,
                         .p = data,
                         .end = data + len,
                         .max_depth = max_depth,
                         .scratch = BUF_INIT,
                         .err = err };
    json_t *v = parse_value(&ps);
    skip_space(&ps);
    if (v && ps.p != ps.end) {
        fail(&ps, "end of file expected");
        json_decref(v);
        v = NULL;
    }
    buf_release(&ps.scratch);
    return v;
}
