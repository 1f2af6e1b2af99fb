/* logmatch: see logmatch.h. Pure; thread-safe once parsed. */
#include "store/logmatch.h"

#include <ctype.h>

#include "core/buf.h"
#include "store/words.h"
#include "core/xalloc.h"

static char *lower_dup(const char *s, size_t n)
{
    char *out = xstrndup(s, n);
    for (size_t i = 0; i < n; i++)
        out[i] = (char)tolower((unsigned char)out[i]);
    return out;
}

static void add_word(struct logmatch *m, const char *w, size_t n)
{
    m->words = xrealloc(m->words, (m->nwords + 1) * sizeof(char *));
    m->words[m->nwords++] = lower_dup(w, n);
}

static void require(struct logmatch *m, const char *w, size_t n)
{
    if (!words_indexed(w, n))
        return;
    m->required = xrealloc(m->required, (m->nrequired + 1) * sizeof(uint64_t));
    m->required[m->nrequired++] = words_hash(w, n);
}

struct phrase_scan {
    struct logmatch *m;
    const char *phrase;
    size_t len;
};

/* Inside a phrase only words bounded on both sides are whole words of the line. */
static void phrase_word(void *ctx, const char *w, size_t n)
{
    struct phrase_scan *ps = ctx;
    if (w > ps->phrase && w + n < ps->phrase + ps->len)
        require(ps->m, w, n);
}

static void add_phrase(struct logmatch *m, const char *p, size_t n)
{
    m->phrases = xrealloc(m->phrases, (m->nphrases + 1) * sizeof(char *));
    m->phrases[m->nphrases++] = lower_dup(p, n);
    if (memchr(p, 0x1b, n))
        return; /* lines are matched without escapes: hardly a match, and no word to require */
    struct phrase_scan ps = { m, p, n };
    words_each(p, n, phrase_word, &ps);
}

static bool all_word_chars(const char *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!isalnum((unsigned char)p[i]) && p[i] != '_')
            return false;
    return n > 0;
}

/* A bare term: a word when it is one ("watchdog"), else a phrase ("run-33", "10.0.1.7"). */
static void add_term(struct logmatch *m, const char *p, size_t n)
{
    if (all_word_chars(p, n)) {
        add_word(m, p, n);
        require(m, p, n);
    } else if (n) {
        add_phrase(m, p, n);
    }
}

int logmatch_parse(struct logmatch *m, const char *q, struct err *err)
{
    memset(m, 0, sizeof(*m));
    const char *p = q;
    while (*p) {
        if (*p == '"') {
            const char *end = strchr(p + 1, '"');
            if (!end) {
                logmatch_release(m);
                return err_set(err, ERR_INVALID, "q has an unterminated \"phrase\"");
            }
            if (end > p + 1)
                add_phrase(m, p + 1, (size_t)(end - p - 1));
            p = end + 1;
            continue;
        }
        const char *end = p;
        while (*end && *end != '"' && *end != ' ')
            end++;
        add_term(m, p, (size_t)(end - p));
        p = *end == ' ' ? end + 1 : end;
    }
    if (m->nwords == 0 && m->nphrases == 0) {
        logmatch_release(m);
        return err_set(err, ERR_INVALID, "q must hold at least one word or \"phrase\"");
    }
    return 0;
}

void logmatch_release(struct logmatch *m)
{
    for (size_t i = 0; i < m->nwords; i++)
        free(m->words[i]);
    for (size_t i = 0; i < m->nphrases; i++)
        free(m->phrases[i]);
    free(m->words);
    free(m->phrases);
    free(m->required);
    memset(m, 0, sizeof(*m));
}

static bool is_word_char(char c)
{
    return isalnum((unsigned char)c) || c == '_';
}

/* Finds word w (lowercase) as a whole word in lowered text; returns its start or NULL. */
static const char *find_word(const char *text, size_t len, const char *w)
{
    size_t wn = strlen(w), off = 0;
    while (off < len) {
        const char *hit = memmem(text + off, len - off, w, wn);
        if (!hit)
            return NULL;
        bool left = hit == text || !is_word_char(hit[-1]);
        bool right = hit + wn == text + len || !is_word_char(hit[wn]);
        if (left && right)
            return hit;
        off = (size_t)(hit - text) + 1;
    }
    return NULL;
}

/* ASCII lowercase without a locale lookup, so that the compiler can vectorise the loop. */
static inline char ascii_lower(char c)
{
    unsigned char u = (unsigned char)c;
    return (char)(u | (((unsigned char)(u - 'A') < 26) << 5));
}

/* Lowercases n bytes eight at a time (SWAR: GCC does not vectorise the byte loop at -O2): a byte
 * in 'A'..'Z' gains 0x20, every other byte (UTF-8 included) is copied as it is. The worst search,
 * every term common in every block but rare together, lowercases every line it reads. */
static void lower_ascii(char *dst, const char *src, size_t n)
{
    const uint64_t ones = 0x0101010101010101ULL;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t x;
        memcpy(&x, src + i, 8);
        uint64_t low7 = x & (0x7f * ones);    /* no carry crosses a byte below */
        uint64_t ge_a = low7 + (0x3f * ones); /* high bit set: byte >= 'A' */
        uint64_t gt_z = low7 + (0x25 * ones); /* high bit set: byte > 'Z' */
        uint64_t upper = (ge_a ^ gt_z) & ~x & (0x80 * ones);
        x |= upper >> 2;
        memcpy(dst + i, &x, 8);
    }
    for (; i < n; i++)
        dst[i] = ascii_lower(src[i]);
}

/* The line lowercased (and without ANSI codes when strip), for memmem. */
static void lowered(struct buf *out, const char *text, size_t len, bool strip)
{
    buf_reset(out);
    buf_reserve(out, len);
    char *o = out->data;
    size_t n = 0;
    if (!strip || !memchr(text, 0x1b, len)) { /* nothing to take out: eight bytes at a time */
        lower_ascii(o, text, len);
        n = len;
    }
    for (size_t i = n; i < len;) {
        size_t esc = strip && text[i] == 0x1b ? words_ansi_len(text + i, len - i) : 0;
        if (esc) {
            i += esc;
            continue;
        }
        o[n++] = ascii_lower(text[i++]);
    }
    out->len = n;
    o[n] = '\0';
}

static bool match_lowered(const struct logmatch *m, const char *text, size_t len)
{
    for (size_t i = 0; i < m->nphrases; i++)
        if (!memmem(text, len, m->phrases[i], strlen(m->phrases[i])))
            return false;
    for (size_t i = 0; i < m->nwords; i++)
        if (!find_word(text, len, m->words[i]))
            return false;
    return true;
}

bool logmatch_line(const struct logmatch *m, const char *text, size_t len)
{
    static __thread char stack[4096];
    if (len < sizeof(stack) && !memchr(text, 0x1b, len)) {
        lower_ascii(stack, text, len);
        return match_lowered(m, stack, len);
    }
    struct buf low = BUF_INIT;
    lowered(&low, text, len, true);
    bool ok = match_lowered(m, buf_cstr(&low), low.len);
    buf_release(&low);
    return ok;
}

bool logmatch_block(const struct logmatch *m, const unsigned char *bloom, size_t len)
{
    if (!bloom || len == 0)
        return true;
    for (size_t i = 0; i < m->nrequired; i++)
        if (!bloom_may_contain(bloom, len, m->required[i]))
            return false;
    return true;
}

/* The longest term: the fewest places to look at, and memmem skips fastest with it. */
static const char *longest_term(const struct logmatch *m)
{
    const char *best = "";
    for (size_t i = 0; i < m->nphrases; i++)
        if (strlen(m->phrases[i]) > strlen(best))
            best = m->phrases[i];
    for (size_t i = 0; i < m->nwords; i++)
        if (strlen(m->words[i]) > strlen(best))
            best = m->words[i];
    return best;
}

void logmatch_hits_find(const struct logmatch *m, const char *text, size_t len,
                        struct logmatch_hits *h)
{
    const char *term = longest_term(m);
    h->base = text;
    h->len = len;
    h->term_len = strlen(term);
    h->n = h->next = 0;
    if (!h->term_len)
        return;
    buf_reset(&h->lowered);
    buf_reserve(&h->lowered, len);
    lower_ascii(h->lowered.data, text, len);
    const char *low = h->lowered.data;
    for (size_t off = 0; off + h->term_len <= len;) {
        const char *hit = memmem(low + off, len - off, term, h->term_len);
        if (!hit)
            break;
        XGROW(h->at, h->n, h->cap);
        h->at[h->n++] = (size_t)(hit - low);
        off = (size_t)(hit - low) + 1;
    }
}

bool logmatch_hits_line(struct logmatch_hits *h, const char *line, size_t len)
{
    if (!h->term_len || line < h->base || line + len > h->base + h->len)
        return true; /* nothing to go by */
    size_t start = (size_t)(line - h->base), end = start + len;
    while (h->next < h->n && h->at[h->next] < start)
        h->next++;
    if (h->next < h->n && h->at[h->next] + h->term_len <= end)
        return true;
    /* logmatch_line() matches text with its ANSI codes taken out: a term may span one. */
    return memchr(line, 0x1b, len) != NULL;
}

void logmatch_hits_release(struct logmatch_hits *h)
{
    buf_release(&h->lowered);
    free(h->at);
    memset(h, 0, sizeof(*h));
}

void logmatch_spans(const struct logmatch *m, const char *text, size_t len,
                    void (*fn)(void *ctx, size_t start, size_t n), void *ctx)
{
    struct buf low = BUF_INIT;
    lowered(&low, text, len, false); /* positions must stay those of the shown line */
    const char *t = buf_cstr(&low);
    for (size_t i = 0; i < m->nwords; i++) {
        const char *hit = find_word(t, low.len, m->words[i]);
        if (hit)
            fn(ctx, (size_t)(hit - t), strlen(m->words[i]));
    }
    for (size_t i = 0; i < m->nphrases; i++) {
        size_t n = strlen(m->phrases[i]);
        const char *hit = memmem(t, low.len, m->phrases[i], n);
        if (hit)
            fn(ctx, (size_t)(hit - t), n);
    }
    buf_release(&low);
}
