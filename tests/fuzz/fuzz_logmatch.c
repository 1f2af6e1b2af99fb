/*
 * fuzz_logmatch: log search (`q=`) on hostile queries and lines. Input: the query, a NUL, then
 * log lines separated by '\n' (any other byte, NUL included, is part of a line).
 * Properties: every highlighted span lies inside the line, and neither a block's Bloom filter
 * built the way store/logblock.c builds it nor the block-wide search for the longest term
 * (logmatch_hits) ever rules out a line that matches (a search must not skip a hit).
 */
#include "core/buf.h"
#include "store/logmatch.h"
#include "store/words.h"
#include "tests/fuzz/fuzz.h"

static void span(void *ctx, size_t start, size_t n)
{
    size_t len = *(size_t *)ctx;
    FUZZ_ASSERT(start <= len && n <= len - start);
}

static void index_word(void *ctx, const char *w, size_t n)
{
    if (words_indexed(w, n))
        bloom_add(ctx, words_hash(w, n));
}

static void one_line(const struct logmatch *m, const char *line, size_t len)
{
    bool hit = logmatch_line(m, line, len);
    logmatch_spans(m, line, len, span, &len);
    struct bloom b;
    bloom_init(&b);
    words_each(line, len, index_word, &b);
    struct buf filter = BUF_INIT;
    bloom_build(&b, &filter);
    if (hit)
        FUZZ_ASSERT(logmatch_block(m, (const unsigned char *)filter.data, filter.len));
    buf_release(&filter);
    bloom_release(&b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    size_t qlen;
    const uint8_t *qstart = fuzz_take(&data, &size, 0, &qlen);
    char *q = fuzz_cstr(qstart, qlen);
    struct logmatch m;
    struct err err;
    err_init(&err);
    if (logmatch_parse(&m, q, &err) == 0) {
        /* The lines as one block (the separators stand for the bytes between lines). */
        const uint8_t *start = data;
        char *block = malloc(size ? size : 1);
        memcpy(block, data, size);
        struct logmatch_hits hits = { 0 };
        logmatch_hits_find(&m, block, size, &hits);
        while (size) {
            size_t n;
            const uint8_t *line = fuzz_take(&data, &size, '\n', &n);
            /* An exact-size copy, so that reading past the line is caught. */
            char *copy = malloc(n ? n : 1);
            memcpy(copy, line, n);
            bool may = logmatch_hits_line(&hits, block + (line - start), n);
            one_line(&m, copy, n);
            /* The block-wide search never rules out a line that matches. */
            FUZZ_ASSERT(may || !logmatch_line(&m, copy, n));
            free(copy);
        }
        logmatch_hits_release(&hits);
        free(block);
        logmatch_release(&m);
    } else {
        FUZZ_ASSERT(err_is_set(&err));
    }
    err_release(&err);
    free(q);
    return 0;
}
