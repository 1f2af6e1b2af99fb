/* words: tokenising and Bloom filters. Pure; thread-safe. */
#include "store/words.h"

#include "core/xalloc.h"

static bool word_char(unsigned char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

size_t words_ansi_len(const char *s, size_t len)
{
    if (len < 2 || s[0] != 0x1b)
        return 0;
    size_t i = 2;
    if (s[1] == '[') {
        while (i < len && !((unsigned char)s[i] >= 0x40 && (unsigned char)s[i] <= 0x7e))
            i++;
        return i < len ? i + 1 : len;
    }
    if (s[1] == ']') {
        while (i < len && s[i] != 0x07 && !(s[i] == 0x1b && i + 1 < len && s[i + 1] == '\\'))
            i++;
        return i >= len ? len : s[i] == 0x07 ? i + 1 : i + 2;
    }
    return 2;
}

/* Length of the run of ANSI escape sequences at text[i], 0 if none. */
static size_t escapes(const char *text, size_t len, size_t i)
{
    size_t n = 0, e;
    while (i + n < len && (e = words_ansi_len(text + i + n, len - i - n)) > 0)
        n += e;
    return n;
}

/* Reads the word at text[*i] into out, across colour codes inside it ("wat\e[1mchdog"). */
static void joined_word(const char *text, size_t len, size_t *i, size_t start, struct buf *out)
{
    buf_reset(out);
    buf_append(out, text + start, *i - start);
    size_t esc = escapes(text, len, *i);
    while (esc && *i + esc < len && word_char((unsigned char)text[*i + esc])) {
        *i += esc;
        size_t s = *i;
        while (*i < len && word_char((unsigned char)text[*i]))
            (*i)++;
        buf_append(out, text + s, *i - s);
        esc = escapes(text, len, *i);
    }
}

void words_each(const char *text, size_t len, void (*fn)(void *ctx, const char *w, size_t n),
                void *ctx)
{
    struct buf joined = BUF_INIT;
    size_t i = 0;
    while (i < len) {
        size_t start = i;
        while (i < len && word_char((unsigned char)text[i]))
            i++;
        if (i == start) {
            size_t esc = words_ansi_len(text + i, len - i);
            i += esc ? esc : 1;
            continue;
        }
        size_t esc = escapes(text, len, i);
        if (!esc || i + esc >= len || !word_char((unsigned char)text[i + esc])) {
            fn(ctx, text + start, i - start);
            continue;
        }
        /* Search matches lines without their escapes (logmatch.c): index the word it sees. */
        joined_word(text, len, &i, start, &joined);
        fn(ctx, joined.data, joined.len);
    }
    buf_release(&joined);
}

uint64_t words_hash(const char *w, size_t n)
{
    uint64_t h = 0xcbf29ce484222325ULL;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)w[i];
        if (c >= 'A' && c <= 'Z')
            c = (unsigned char)(c + 32);
        h = (h ^ c) * 0x100000001b3ULL;
    }
    /* Final mix so that the low and high halves are both usable as probes. */
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdULL;
    h ^= h >> 33;
    return h;
}

bool words_indexed(const char *w, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (w[i] < '0' || w[i] > '9')
            return true;
    return false;
}

void bloom_init(struct bloom *b)
{
    memset(b, 0, sizeof(*b));
}

void bloom_release(struct bloom *b)
{
    free(b->hashes);
    bloom_init(b);
}

void bloom_add(struct bloom *b, uint64_t hash)
{
    XGROW(b->hashes, b->n, b->cap);
    b->hashes[b->n++] = hash;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

#define BLOOM_PROBES 4

/* Probe i of hash in a filter of nbits (a power of two): double hashing. */
static size_t probe(uint64_t hash, int i, size_t nbits)
{
    uint64_t h1 = hash, h2 = (hash >> 32) | (hash << 32) | 1;
    return (size_t)((h1 + (uint64_t)i * h2) & (nbits - 1));
}

void bloom_build(struct bloom *b, struct buf *out)
{
    if (b->n > 1) /* qsort must not see the NULL of an empty filter */
        qsort(b->hashes, b->n, sizeof(*b->hashes), cmp_u64);
    size_t distinct = 0;
    for (size_t i = 0; i < b->n; i++)
        if (i == 0 || b->hashes[i] != b->hashes[i - 1])
            b->hashes[distinct++] = b->hashes[i];
    size_t nbits = 512;
    while (nbits < distinct * 10 && nbits < (1u << 20))
        nbits *= 2;
    size_t start = out->len;
    buf_reserve(out, nbits / 8);
    memset(out->data + start, 0, nbits / 8);
    out->len += nbits / 8;
    unsigned char *bits = (unsigned char *)out->data + start;
    for (size_t i = 0; i < distinct; i++)
        for (int k = 0; k < BLOOM_PROBES; k++) {
            size_t bit = probe(b->hashes[i], k, nbits);
            bits[bit >> 3] |= (unsigned char)(1u << (bit & 7));
        }
    out->data[out->len] = '\0';
}

bool bloom_may_contain(const unsigned char *filter, size_t len, uint64_t hash)
{
    size_t nbits = len * 8;
    if (nbits == 0 || (nbits & (nbits - 1)))
        return true; /* not a filter this code wrote: cannot rule anything out */
    for (int k = 0; k < BLOOM_PROBES; k++) {
        size_t bit = probe(hash, k, nbits);
        if (!(filter[bit >> 3] & (1u << (bit & 7))))
            return false;
    }
    return true;
}
