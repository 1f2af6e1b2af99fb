/*
 * classify: the per-line matcher over the pattern table, and the small text helpers (detail
 * extraction, summary templates) that go with it.
 *
 * Prefilter (a Wu-Manber style sampling scan): the line is probed only every STRIDE bytes.
 * Every anchor of at least STRIDE + 3 bytes has one of its first STRIDE 4-byte windows under
 * some probe, so each anchor registers those windows (case-folded) in a 64 Ki-bit bitmap,
 * indexed by a multiplicative hash, and in a sorted key array with their offset. A probe folds
 * the 4 bytes under it (OR 0x20 per byte: ASCII letters lose their case, other bytes may
 * collide, which only costs a verification), tests one bit, and only on a hit looks the key up
 * and compares the anchors it may belong to. Whole-line rows (a bare "Killed") are compared
 * directly. The lowest table index wins.
 *
 * Pure functions over const tables; the tables are built once under pthread_once.
 */
#include "server/diag/classify.h"

#include <ctype.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/utf8.h"

#define MAX_SLOTS 512
#define STRIDE    4    /* the shortest anchor scanned is STRIDE + 3 bytes ("SIGSEGV") */
#define BUCKETS   4096 /* second-level index over the bitmap's hash: 12 bits */
#define MAX_WHOLE 8

struct slot {
    uint32_t key;
    uint16_t pat;
    uint8_t off; /* the window's offset in the anchor */
};

static uint64_t bits[65536 / 64];
static struct slot slots[MAX_SLOTS]; /* sorted by bucket, then key */
static size_t nslots;
static uint16_t bucket_start[BUCKETS + 1]; /* slots of bucket b: [start[b], start[b+1]) */
static uint16_t whole[MAX_WHOLE];          /* PAT_WHOLE rows */
static uint8_t anchor_len[MAX_SLOTS];
static uint64_t head[MAX_SLOTS], head_mask[MAX_SLOTS]; /* folded first 8 bytes of each anchor */
static size_t nwhole;
static pthread_once_t once = PTHREAD_ONCE_INIT;

static inline uint32_t fold4(const char *p)
{
    uint32_t v;
    memcpy(&v, p, 4);
    return v | 0x20202020u;
}

static inline uint32_t hash16(uint32_t key)
{
    return (key * 0x9E3779B1u) >> 16;
}

static inline uint32_t bucket(uint32_t key)
{
    return hash16(key) >> 4;
}

static int slot_cmp(const void *a, const void *b)
{
    const struct slot *x = a, *y = b;
    if (bucket(x->key) != bucket(y->key))
        return bucket(x->key) < bucket(y->key) ? -1 : 1;
    if (x->key != y->key)
        return x->key < y->key ? -1 : 1;
    return (int)x->pat - (int)y->pat;
}

static void build(void)
{
    size_t n;
    const struct diag_pattern *t = patterns_table(&n);
    if (n > MAX_SLOTS)
        abort();
    for (size_t i = 0; i < n; i++) {
        size_t alen = strlen(t[i].anchor);
        anchor_len[i] = (uint8_t)(alen < 255 ? alen : 255);
        char h8[8] = { 0 };
        memcpy(h8, t[i].anchor, alen < 8 ? alen : 8);
        memcpy(&head[i], h8, 8);
        head_mask[i] = alen >= 8 ? ~0ull : (1ull << (8 * alen)) - 1;
        head[i] = (head[i] | 0x2020202020202020ull) & head_mask[i];
        if (t[i].flags & PAT_WHOLE) {
            if (nwhole == MAX_WHOLE)
                abort();
            whole[nwhole++] = (uint16_t)i;
            continue;
        }
        if (alen < STRIDE + 3 || alen > 255 || nslots + STRIDE > MAX_SLOTS)
            abort(); /* a table bug; the unit test names the row */
        for (size_t k = 0; k < STRIDE; k++) {
            uint32_t key = fold4(t[i].anchor + k);
            uint32_t h = hash16(key);
            bits[h >> 6] |= 1ull << (h & 63);
            slots[nslots++] = (struct slot){ key, (uint16_t)i, (uint8_t)k };
        }
    }
    qsort(slots, nslots, sizeof(slots[0]), slot_cmp);
    size_t k = 0;
    for (uint32_t b = 0; b <= BUCKETS; b++) {
        while (k < nslots && bucket(slots[k].key) < b)
            k++;
        bucket_start[b] = (uint16_t)k;
    }
}

static bool same(const char *a, const char *b, size_t n, bool nocase)
{
    if (!nocase)
        return memcmp(a, b, n) == 0;
    for (size_t i = 0; i < n; i++)
        if (tolower((unsigned char)a[i]) != tolower((unsigned char)b[i]))
            return false;
    return true;
}

const char *classify_find(const char *hay, size_t n, const char *needle, size_t m, bool nocase)
{
    if (m == 0)
        return hay;
    if (!nocase)
        return memmem(hay, n, needle, m);
    for (size_t i = 0; i + m <= n; i++)
        if (same(hay + i, needle, m, true))
            return hay + i;
    return NULL;
}

/* Does pattern p (row pi) match text with its anchor at offset i? */
static bool verify(const struct diag_pattern *p, size_t pi, const char *text, size_t len, size_t i)
{
    bool nocase = p->flags & PAT_NOCASE;
    size_t m = anchor_len[pi];
    if (i + m > len)
        return false;
    if (i + 8 <= len) { /* most candidates differ in their first 8 bytes: one compare */
        uint64_t v;
        memcpy(&v, text + i, 8);
        if (((v | 0x2020202020202020ull) & head_mask[pi]) != head[pi])
            return false;
    }
    if (!same(text + i, p->anchor, m, nocase))
        return false;
    if (p->also && !classify_find(text, len, p->also, strlen(p->also), nocase))
        return false;
    return true;
}

/* The lowest whole-line row equal to the trimmed line, or SIZE_MAX. */
static size_t match_whole(const struct diag_pattern *t, const char *text, size_t len, size_t *at)
{
    size_t s = 0, e = len;
    while (s < e && isspace((unsigned char)text[s]))
        s++;
    while (e > s && isspace((unsigned char)text[e - 1]))
        e--;
    for (size_t w = 0; w < nwhole; w++) {
        const struct diag_pattern *p = &t[whole[w]];
        if (strlen(p->anchor) == e - s && same(text + s, p->anchor, e - s, p->flags & PAT_NOCASE)) {
            *at = s;
            return whole[w];
        }
    }
    return SIZE_MAX;
}

const struct diag_pattern *classify_line(const char *text, size_t len, size_t *at)
{
    pthread_once(&once, build);
    size_t n;
    const struct diag_pattern *t = patterns_table(&n);
    size_t best_at = 0;
    if (len > CLASSIFY_SCAN_MAX)
        len = CLASSIFY_SCAN_MAX;
    size_t best = len <= 40 ? match_whole(t, text, len, &best_at) : SIZE_MAX;
    for (size_t i = 0; i + 4 <= len; i += STRIDE) {
        uint32_t key = fold4(text + i);
        uint32_t h = hash16(key);
        if (!((bits[h >> 6] >> (h & 63)) & 1))
            continue;
        for (size_t s = bucket_start[h >> 4]; s < bucket_start[(h >> 4) + 1]; s++) {
            size_t pi = slots[s].pat, start = i - slots[s].off;
            if (slots[s].key == key && pi < best && slots[s].off <= i &&
                verify(&t[pi], pi, text, len, start)) {
                best = pi;
                best_at = start;
            }
        }
    }
    if (best == SIZE_MAX)
        return NULL;
    if (at)
        *at = best_at;
    return &t[best];
}

size_t classify_clean(char *out, size_t cap, const char *s, size_t n)
{
    size_t o = 0;
    if (cap == 0)
        return 0;
    while (n > 0 && isspace((unsigned char)*s)) {
        s++;
        n--;
    }
    bool cut = false;
    for (size_t i = 0; i < n;) {
        unsigned char c = (unsigned char)s[i];
        size_t k = c < 0x80 ? 1 : utf8_valid_prefix(s + i, n - i);
        if (o + (k ? k : 1) >= cap) {
            cut = true;
            break;
        }
        if (k == 0) {
            out[o++] = '?';
            i++;
        } else if (k == 1) {
            out[o++] = (c < 0x20 || c == 0x7f) ? ' ' : (char)c;
            i++;
        } else {
            memcpy(out + o, s + i, k);
            o += k;
            i += k;
        }
    }
    if (cut && cap > 8) { /* show that text was cut: "..." on a character boundary */
        size_t end = o;   /* out[end] is where the next character would have started */
        o = o + 4 > cap ? cap - 4 : o;
        while (o > 0 && o < end && ((unsigned char)out[o] & 0xC0) == 0x80)
            o--;
        memcpy(out + o, "...", 3);
        o += 3;
    }
    while (o > 0 && out[o - 1] == ' ')
        o--;
    out[o] = '\0';
    return o;
}

/* Where the detail ends: the first `until` literal after start, else the end of the line. */
static size_t detail_end(const struct diag_pattern *p, const char *text, size_t len, size_t start)
{
    size_t end = len;
    const char *u = p->until;
    while (u && *u) {
        const char *bar = strchr(u, '|');
        size_t m = bar ? (size_t)(bar - u) : strlen(u);
        if (m > 0 && !(m == 1 && *u == '\n')) {
            const char *f = classify_find(text + start, end - start, u, m, false);
            if (f)
                end = (size_t)(f - text);
        }
        u = bar ? bar + 1 : NULL;
    }
    for (size_t i = start; i < end; i++)
        if (text[i] == '\r' || text[i] == '\n')
            return i;
    return end;
}

size_t classify_detail(const struct diag_pattern *p, const char *text, size_t len, size_t at,
                       char *out, size_t cap)
{
    if (cap)
        out[0] = '\0';
    if (!p->after || cap == 0)
        return 0;
    bool nocase = p->flags & PAT_NOCASE;
    size_t m = strlen(p->after);
    if (at > len)
        at = len;
    const char *f = classify_find(text + at, len - at, p->after, m, nocase);
    if (!f)
        f = classify_find(text, len, p->after, m, nocase);
    if (!f)
        return 0;
    size_t start = (size_t)(f - text) + m;
    size_t end = detail_end(p, text, len, start);
    if (end - start > CLASSIFY_DETAIL_MAX)
        end = start + CLASSIFY_DETAIL_MAX;
    return classify_clean(out, cap, text + start, end - start);
}

bool classify_num(const struct diag_pattern *p, const char *text, size_t len, size_t at, long *out)
{
    if (!p->num) {
        *out = p->code;
        return p->code != 0;
    }
    if (at > len)
        at = len;
    size_t m = strlen(p->num);
    const char *f = classify_find(text + at, len - at, p->num, m, false);
    if (!f)
        return false;
    const char *s = f + m, *e = text + len;
    bool neg = s < e && *s == '-';
    if (neg)
        s++;
    if (s >= e || !isdigit((unsigned char)*s))
        return false;
    long v = 0;
    for (; s < e && isdigit((unsigned char)*s) && v < 100000000000L; s++)
        v = v * 10 + (*s - '0');
    *out = neg ? -v : v;
    return true;
}

static const char *var(const struct classify_vars *v, const char *name, size_t n)
{
    static const char *const names[] = { "who", "node", "detail", "num", "text" };
    const char *vals[] = { v->who, v->node, v->detail, v->num, v->text };
    for (size_t i = 0; i < 5; i++)
        if (strlen(names[i]) == n && memcmp(names[i], name, n) == 0)
            return vals[i] ? vals[i] : "";
    return "";
}

/* Expands tmpl[0..n) into out at *o; returns false when a placeholder was empty. */
static bool expand(const char *tmpl, size_t n, const struct classify_vars *v, char *out, size_t cap,
                   size_t *o)
{
    bool full = true;
    for (size_t i = 0; i < n; i++) {
        const char *s = tmpl + i;
        size_t k = 1;
        if (*s == '{') {
            const char *close = memchr(s, '}', n - i);
            if (close) {
                s = var(v, tmpl + i + 1, (size_t)(close - tmpl - i - 1));
                k = strlen(s);
                full = full && k > 0;
                i = (size_t)(close - tmpl);
            }
        }
        for (size_t j = 0; j < k && *o + 1 < cap; j++)
            out[(*o)++] = s[j];
    }
    return full;
}

void classify_render(const char *tmpl, const struct classify_vars *v, char *out, size_t cap)
{
    size_t o = 0;
    if (cap == 0)
        return;
    while (tmpl && *tmpl) {
        const char *open = strchr(tmpl, '[');
        size_t lit = open ? (size_t)(open - tmpl) : strlen(tmpl);
        expand(tmpl, lit, v, out, cap, &o);
        if (!open)
            break;
        const char *close = strchr(open, ']');
        if (!close)
            break;
        size_t mark = o;
        if (!expand(open + 1, (size_t)(close - open - 1), v, out, cap, &o))
            o = mark; /* an empty placeholder drops the whole optional part */
        tmpl = close + 1;
    }
    out[o] = '\0';
}
