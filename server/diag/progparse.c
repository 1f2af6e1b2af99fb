/*
 * progparse: parsers of training-progress lines (see progparse.h). Dispatch is by cheap byte
 * searches: '{' then a quote (HF dict), "%|" (tqdm), '|' and "iteration" (Megatron), a
 * leading "steps: " (DeepSpeed pipeline), '=' (key=value, DeepSpeed step and timer lines).
 * Only a line that passes one of those is parsed. Numbers go through strtod on a bounded
 * copy (log lines are not NUL-terminated).
 *
 * Pure; thread-safe.
 */
#include "server/diag/progparse.h"

#include <ctype.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* Step keys in order of preference (DeepSpeed's global_step beats its micro steps). */
static const char *const step_keys[] = { "global_step", "step",       "iteration",   "iter",
                                         "steps",       "train_step", "global_steps" };
#define NSTEP_KEYS (sizeof(step_keys) / sizeof(step_keys[0]))

/* tqdm bars whose description says they are not the training loop. */
static const char *const bar_skip[] = { "map",     "filter", "download", "loading", "tokeniz",
                                        "generat", "eval",   "predict",  "fetch",   "resolv",
                                        "upload",  "shard",  "saving",   "valid",   "test" };

const char *progparse_format_name(enum progparse_format f)
{
    /* The names of the API's Progress.format enum (openapi.yaml). */
    static const char *const names[] = { "none", "hf", "megatron", "deepspeed", "tqdm", "kv" };
    return (unsigned)f < sizeof(names) / sizeof(names[0]) ? names[f] : "none";
}

static void reset(struct progparse *out)
{
    out->format = PROGPARSE_NONE;
    out->step = -1;
    out->total = -1;
    out->remaining_s = -1;
    out->final = false;
    out->n = 0;
}

/* Byte classes for names: 0 separator, 1 lower case or digit, 2 upper case, 3 '/'. */
static unsigned char name_class(unsigned char c)
{
    if ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'))
        return 1;
    if (c >= 'A' && c <= 'Z')
        return 2;
    return c == '/' ? 3 : 0;
}

size_t progparse_norm_name(const char *s, size_t n, char *out)
{
    size_t o = 0;
    bool sep = false;
    unsigned char prev = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i], k = name_class(c);
        if (k == 0) {
            sep = true;
            prev = 0;
            continue;
        }
        if (k == 2 && prev == 1 && !(s[i - 1] >= '0' && s[i - 1] <= '9'))
            sep = true; /* CamelCase boundary */
        size_t m = k == 3 ? 3 : 1;
        bool us = (sep || k == 3) && o > 0;
        if (o + m + us >= PROGPARSE_NAME_MAX)
            break;
        if (us)
            out[o++] = '_';
        if (k == 3)
            memcpy(out + o, "per", 3);
        else
            out[o] = (char)(k == 2 ? c + 32 : c);
        o += m;
        sep = k == 3;
        prev = k == 3 ? 0 : k;
    }
    out[o] = '\0';
    return o;
}

/* Bytes that can be part of a number: digits, sign, point, exponent, nan, inf(inity). */
static bool numchar(unsigned char c)
{
    static const char ok[256] = {
        ['0'] = 1, ['1'] = 1, ['2'] = 1, ['3'] = 1, ['4'] = 1, ['5'] = 1, ['6'] = 1,
        ['7'] = 1, ['8'] = 1, ['9'] = 1, ['.'] = 1, ['+'] = 1, ['-'] = 1, ['e'] = 1,
        ['E'] = 1, ['n'] = 1, ['N'] = 1, ['a'] = 1, ['A'] = 1, ['i'] = 1, ['I'] = 1,
        ['f'] = 1, ['F'] = 1, ['t'] = 1, ['T'] = 1, ['y'] = 1, ['Y'] = 1,
    };
    return ok[c];
}

/* Plain decimals ("-12.5", "7.123456E+00") without strtod: an integer mantissa of at most 15
 * digits scaled by an exact power of ten is correctly rounded. false: use strtod. */
static bool fast_number(const char *s, size_t n, double *out, size_t *used)
{
    static const double p10[] = { 1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                  1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
                                  1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22 };
    size_t i = 0;
    bool neg = n > 0 && (s[0] == '-' || s[0] == '+');
    neg = neg && s[0] == '-';
    if (n > 0 && (s[0] == '-' || s[0] == '+'))
        i++;
    uint64_t mant = 0;
    int digits = 0, scale = 0;
    for (; i < n && isdigit((unsigned char)s[i]); i++, digits++)
        mant = mant * 10 + (uint64_t)(s[i] - '0');
    if (i < n && s[i] == '.')
        for (i++; i < n && isdigit((unsigned char)s[i]); i++, digits++, scale--)
            mant = mant * 10 + (uint64_t)(s[i] - '0');
    if (digits == 0 || digits > 15)
        return false;
    if (i < n && (s[i] == 'e' || s[i] == 'E')) {
        size_t j = i + 1;
        bool eneg = j < n && s[j] == '-';
        if (j < n && (s[j] == '-' || s[j] == '+'))
            j++;
        if (j >= n || !isdigit((unsigned char)s[j]))
            return false;
        int e = 0;
        for (; j < n && isdigit((unsigned char)s[j]) && e < 1000; j++)
            e = e * 10 + (s[j] - '0');
        scale += eneg ? -e : e;
        i = j;
    }
    if (scale < -22 || scale > 22 || (i < n && numchar((unsigned char)s[i])))
        return false;
    double v = (double)mant;
    v = scale < 0 ? v / p10[-scale] : v * p10[scale];
    *out = neg ? -v : v;
    *used = i;
    return true;
}

bool progparse_number(const char *s, size_t n, double *out, size_t *used)
{
    if (fast_number(s, n, out, used))
        return true;
    char buf[64];
    size_t k = 0;
    while (k < n && k < sizeof(buf) - 1 && numchar((unsigned char)s[k]))
        k++;
    if (k == 0)
        return false;
    memcpy(buf, s, k);
    buf[k] = '\0';
    char *end;
    double v = strtod(buf, &end);
    if (end == buf)
        return false;
    *out = v;
    *used = (size_t)(end - buf);
    return true;
}

/* memmem for short haystacks, without its setup cost. */
static bool contains(const char *h, size_t n, const char *lit, size_t m)
{
    for (const char *p = h; (p = memchr(p, lit[0], (size_t)(h + n - p))) != NULL; p++)
        if ((size_t)(h + n - p) >= m && memcmp(p, lit, m) == 0)
            return true;
    return false;
}

static int step_rank(const char *name)
{
    if (name[0] != 's' && name[0] != 'g' && name[0] != 'i' && name[0] != 't')
        return -1;
    for (size_t i = 0; i < NSTEP_KEYS; i++)
        if (strcmp(step_keys[i], name) == 0)
            return (int)i;
    return -1;
}

static bool is_loss(const char *name)
{
    return strstr(name, "loss") && !strstr(name, "scale");
}

/* Adds one value; step keys set the step instead. *best is the rank of the step key used. */
static void add(struct progparse *out, const char *key, size_t klen, double v, int *best)
{
    char name[PROGPARSE_NAME_MAX];
    if (progparse_norm_name(key, klen, name) == 0)
        return;
    int r = step_rank(name);
    if (r >= 0) {
        if (isfinite(v) && v >= 0 && v < 9e15 && (*best < 0 || r < *best)) {
            out->step = (int64_t)v;
            *best = r;
        }
        return;
    }
    if (out->n >= PROGPARSE_VALUES_MAX)
        return;
    memcpy(out->v[out->n].name, name, sizeof(name));
    out->v[out->n].value = v;
    out->n++;
}

static bool is_key_char(char c)
{
    return isalnum((unsigned char)c) || c == '_' || c == '.' || c == '-';
}

/* All key=value pairs with numeric values in s[0..n). Returns how many were found. */
static size_t kv_scan(const char *s, size_t n, struct progparse *out, int *best, bool *loss)
{
    const char *end = s + n;
    size_t pairs = 0;
    for (const char *eq = memchr(s, '=', n); eq; eq = memchr(eq + 1, '=', (size_t)(end - eq - 1))) {
        const char *k = eq;
        while (k > s &&
               (is_key_char(k[-1]) || (k[-1] == '/' && k - 1 > s && isalpha((unsigned char)k[-2]) &&
                                       k < eq && isalpha((unsigned char)k[0]))))
            k--;
        while (k < eq && !isalpha((unsigned char)*k))
            k++;
        const char *v = eq + 1;
        if (k == eq || v >= end)
            continue;
        if (*v == '[')
            v++;
        double val;
        size_t used;
        if (!progparse_number(v, (size_t)(end - v), &val, &used))
            continue;
        const char *after = v + used;
        while (after < end && (isalpha((unsigned char)*after) || *after == '%'))
            after++; /* a unit: 4.32GB, 120ms */
        if (after < end && !strchr(" \t,;|])/", *after))
            continue; /* 0x7f3a, 1.2.3, 10/20: not a plain number */
        add(out, k, (size_t)(eq - k), val, best);
        *loss = *loss || (out->n > 0 && is_loss(out->v[out->n - 1].name));
        pairs++;
    }
    return pairs;
}

static bool parse_kv(const char *s, size_t n, struct progparse *out)
{
    int best = -1;
    bool loss = false;
    size_t pairs = kv_scan(s, n, out, &best, &loss);
    if (pairs < 2 || (best < 0 && !loss)) {
        reset(out);
        return false;
    }
    bool ds = best == 0 || contains(s, n, "[Rank ", 6); /* global_step, or log_dist's tag */
    out->format = ds ? PROGPARSE_DEEPSPEED : PROGPARSE_KV;
    return true;
}

/* "key: value" pairs; a key starts after the last '|' before its colon. */
static void colon_pairs(const char *s, size_t n, struct progparse *out, int *best)
{
    const char *end = s + n, *pos = s, *colon;
    while (pos < end && (colon = memchr(pos, ':', (size_t)(end - pos)))) {
        const char *k = pos;
        for (const char *q = pos; q < colon; q++)
            if (*q == '|')
                k = q + 1;
        const char *v = colon + 1;
        while (v < end && *v == ' ')
            v++;
        double val;
        size_t used;
        if (progparse_number(v, (size_t)(end - v), &val, &used) &&
            (v + used == end || strchr(" \t|,", v[used]))) {
            add(out, k, (size_t)(colon - k), val, best);
            pos = v + used;
        } else {
            pos = colon + 1;
        }
    }
}

static bool parse_int(const char **p, const char *end, int64_t *out)
{
    const char *s = *p;
    while (s < end && *s == ' ')
        s++;
    if (s >= end || !isdigit((unsigned char)*s))
        return false;
    int64_t v = 0;
    for (; s < end && isdigit((unsigned char)*s) && v < 100000000000000LL; s++)
        v = v * 10 + (*s - '0');
    *out = v;
    *p = s;
    return true;
}

static bool parse_megatron(const char *s, size_t n, const char *it, struct progparse *out)
{
    const char *end = s + n, *p = it + 9;
    int64_t step, total;
    if (!parse_int(&p, end, &step))
        return false;
    while (p < end && *p == ' ')
        p++;
    if (p >= end || *p != '/')
        return false;
    p++;
    if (!parse_int(&p, end, &total))
        return false;
    int best = -1;
    colon_pairs(p, (size_t)(end - p), out, &best);
    out->step = step;
    out->total = total;
    out->format = PROGPARSE_MEGATRON;
    return true;
}

static bool parse_hf(const char *s, size_t n, struct progparse *out)
{
    const char *end = s + n, *p = s + 1;
    bool training = false;
    int best = -1;
    while (p < end && *p != '}') {
        while (p < end && (*p == ' ' || *p == ','))
            p++;
        if (p >= end || (*p != '\'' && *p != '"'))
            break;
        char q = *p++;
        const char *k = p, *ke = memchr(p, q, (size_t)(end - p));
        if (!ke || ke + 1 >= end || ke[1] != ':')
            break;
        p = ke + 2;
        while (p < end && *p == ' ')
            p++;
        double v;
        size_t used;
        if (progparse_number(p, (size_t)(end - p), &v, &used)) {
            add(out, k, (size_t)(ke - k), v, &best);
            size_t kl = (size_t)(ke - k);
            training =
                training ||
                (kl >= 4 && (contains(k, kl, "loss", 4) || contains(k, kl, "epoch", 5) ||
                             contains(k, kl, "learning_rate", 13) || contains(k, kl, "train_", 6)));
            out->final = out->final || (kl == 13 && memcmp(k, "train_runtime", 13) == 0);
        }
        while (p < end && *p != ',' && *p != '}') /* skip the rest of this value */
            p++;
    }
    if (!training || (out->n == 0 && out->step < 0)) {
        reset(out);
        return false;
    }
    out->format = PROGPARSE_HF;
    return true;
}

/* "01:40", "1:02:03" -> seconds; -1 for "?" or junk. */
static double clock_text(const char *s, const char *end)
{
    double t = 0;
    int parts = 0;
    while (s < end && parts < 3) {
        int64_t v;
        if (!parse_int(&s, end, &v))
            return -1;
        t = t * 60 + (double)v;
        parts++;
        if (s >= end || *s != ':')
            break;
        s++;
    }
    return parts > 0 ? t : -1;
}

static bool skipped_bar(const char *desc, size_t n)
{
    for (size_t i = 0; i < sizeof(bar_skip) / sizeof(bar_skip[0]); i++) {
        size_t m = strlen(bar_skip[i]);
        for (size_t j = 0; j + m <= n; j++)
            if (strncasecmp(desc + j, bar_skip[i], m) == 0)
                return true;
    }
    return false;
}

/* The part after "n/total [elapsed<remaining, rate, postfix]". */
static void tqdm_bracket(const char *p, const char *end, struct progparse *out)
{
    const char *lt = memchr(p, '<', (size_t)(end - p));
    const char *comma = lt ? memchr(lt, ',', (size_t)(end - lt)) : NULL;
    const char *close = memchr(p, ']', (size_t)(end - p));
    if (!lt || !comma || !close || comma > close)
        return;
    out->remaining_s = clock_text(lt + 1, comma);
    const char *r = comma + 1;
    while (r < close && *r == ' ')
        r++;
    double rate;
    size_t used;
    if (progparse_number(r, (size_t)(close - r), &rate, &used) && rate > 0) {
        const char *u = r + used, *ue = u;
        while (ue < close && *ue != ',')
            ue++;
        bool inverse = ue - u > 2 && u[0] == 's' && u[1] == '/'; /* "1.23s/it" */
        const char *us = inverse ? u + 2 : u, *uend = ue;
        if (!inverse && uend - us > 2 && memcmp(uend - 2, "/s", 2) == 0)
            uend -= 2;
        char key[PROGPARSE_NAME_MAX];
        size_t kl = (size_t)(uend - us) < 20 ? (size_t)(uend - us) : 20;
        memcpy(key, us, kl);
        memcpy(key + kl, "_per_sec", 9);
        int best = -1;
        add(out, key, kl + 8, inverse ? 1.0 / rate : rate, &best);
        if (ue < close) { /* postfix: ", loss=2.31, lr=0.0001" */
            bool loss = false;
            kv_scan(ue + 1, (size_t)(close - ue - 1), out, &best, &loss);
        }
    }
}

static bool parse_tqdm(const char *s, size_t n, const char *bar, struct progparse *out)
{
    const char *end = s + n, *d = bar - 1;
    while (d > s && isdigit((unsigned char)d[-1]))
        d--;
    if (skipped_bar(s, (size_t)(d - s)))
        return false;
    const char *bar2 = memchr(bar + 1, '|', (size_t)(end - bar - 1));
    if (!bar2)
        return false;
    const char *p = bar2 + 1;
    int64_t done, total = -1;
    if (!parse_int(&p, end, &done) || p >= end || *p != '/')
        return false;
    p++;
    if (!parse_int(&p, end, &total)) {
        if (p >= end || *p != '?')
            return false;
        total = -1;
    }
    if (p < end && *p != ' ' && *p != '?') /* "1.23G/2.73G": a download, not steps */
        return false;
    out->step = done;
    out->total = total;
    out->format = PROGPARSE_TQDM;
    tqdm_bracket(p, end, out);
    return true;
}

bool progparse_line(const char *text, size_t len, struct progparse *out)
{
    reset(out);
    /* A carriage-return redraw: only the last non-empty segment counts. */
    const char *cr;
    while (len > 0 && (cr = memrchr(text, '\r', len))) {
        size_t tail = len - (size_t)(cr - text) - 1;
        if (tail > 0) {
            text = cr + 1;
            len = tail;
            break;
        }
        len--;
    }
    if (len < 6)
        return false;
    const char *end = text + len;
    const char *brace = memchr(text, '{', len);
    if (brace && brace + 1 < end && (brace[1] == '\'' || brace[1] == '"') &&
        parse_hf(brace, (size_t)(end - brace), out))
        return true;
    const char *bar = memchr(text, '|', len);
    if (bar) {
        if (bar > text && bar[-1] == '%')
            return parse_tqdm(text, len, bar, out);
        const char *it = memmem(text, (size_t)(bar - text), "iteration ", 10);
        if (it && parse_megatron(text, len, it, out))
            return true;
    }
    size_t lead = 0;
    while (lead < len && text[lead] == ' ')
        lead++;
    if (len - lead > 7 && memcmp(text + lead, "steps: ", 7) == 0) {
        int best = -1;
        colon_pairs(text + lead, len - lead, out, &best);
        out->format = PROGPARSE_DEEPSPEED;
        if (out->step >= 0)
            return true;
        reset(out);
        return false;
    }
    if (memchr(text, '=', len))
        return parse_kv(text, len, out);
    return false;
}
