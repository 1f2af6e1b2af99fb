/* logmatch: see logmatch.h. Pure; thread-safe once parsed. */
#include "server/core/logmatch.h"

#include <ctype.h>

#include "server/core/words.h"
#include "server/core/xalloc.h"

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

static void query_word(void *ctx, const char *w, size_t n)
{
    struct logmatch *m = ctx;
    add_word(m, w, n);
    require(m, w, n);
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
            size_t n = (size_t)(end - p - 1);
            if (n) {
                m->phrases = xrealloc(m->phrases, (m->nphrases + 1) * sizeof(char *));
                m->phrases[m->nphrases++] = lower_dup(p + 1, n);
                struct phrase_scan ps = { m, p + 1, n };
                words_each(p + 1, n, phrase_word, &ps);
            }
            p = end + 1;
            continue;
        }
        const char *end = p;
        while (*end && *end != '"' && *end != ' ')
            end++;
        words_each(p, (size_t)(end - p), query_word, m);
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

/* Case-insensitive search of needle (lowercase) in hay. */
static const char *find_ci(const char *hay, size_t hn, const char *needle, size_t nn)
{
    if (nn == 0 || nn > hn)
        return nn == 0 ? hay : NULL;
    char first = needle[0];
    for (size_t i = 0; i + nn <= hn; i++) {
        if (tolower((unsigned char)hay[i]) != first)
            continue;
        size_t k = 1;
        while (k < nn && tolower((unsigned char)hay[i + k]) == needle[k])
            k++;
        if (k == nn)
            return hay + i;
    }
    return NULL;
}

static bool is_word_char(char c)
{
    return isalnum((unsigned char)c) || c == '_';
}

/* Finds word w (lowercase) as a whole word in text; returns its start or NULL. */
static const char *find_word(const char *text, size_t len, const char *w)
{
    size_t wn = strlen(w), off = 0;
    while (off < len) {
        const char *hit = find_ci(text + off, len - off, w, wn);
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

static bool match_plain(const struct logmatch *m, const char *text, size_t len);

/* Colour codes glue to words ("\e[31mred"): lines holding them are matched without them. */
bool logmatch_line(const struct logmatch *m, const char *text, size_t len)
{
    if (!memchr(text, 0x1b, len))
        return match_plain(m, text, len);
    char stack[1024] = { 0 }; /* zeroed: gcc 12 -O2 sees a read of it as uninitialised */
    char *plain = len <= sizeof(stack) ? stack : xmalloc(len);
    size_t n = 0;
    for (size_t i = 0; i < len;) {
        size_t esc = words_ansi_len(text + i, len - i);
        if (esc) {
            i += esc;
            continue;
        }
        plain[n++] = text[i++];
    }
    bool ok = match_plain(m, plain, n);
    if (plain != stack)
        free(plain);
    return ok;
}

static bool match_plain(const struct logmatch *m, const char *text, size_t len)
{
    for (size_t i = 0; i < m->nwords; i++)
        if (!find_word(text, len, m->words[i]))
            return false;
    for (size_t i = 0; i < m->nphrases; i++)
        if (!find_ci(text, len, m->phrases[i], strlen(m->phrases[i])))
            return false;
    return true;
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

void logmatch_spans(const struct logmatch *m, const char *text, size_t len,
                    void (*fn)(void *ctx, size_t start, size_t n), void *ctx)
{
    for (size_t i = 0; i < m->nwords; i++) {
        const char *hit = find_word(text, len, m->words[i]);
        if (hit)
            fn(ctx, (size_t)(hit - text), strlen(m->words[i]));
    }
    for (size_t i = 0; i < m->nphrases; i++) {
        size_t n = strlen(m->phrases[i]);
        const char *hit = find_ci(text, len, m->phrases[i], n);
        if (hit)
            fn(ctx, (size_t)(hit - text), n);
    }
}
