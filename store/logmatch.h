/*
 * logmatch: the text query of log search (`q=`). Terms are words and "quoted phrases"; a line
 * matches when it holds every term, case-insensitively: a word as a whole word (see words.h),
 * a phrase as a substring. logmatch_block() says whether a block's Bloom filter rules a match
 * out, so that most blocks are skipped without being read.
 */
#ifndef TY_LOGMATCH_H
#define TY_LOGMATCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/buf.h"
#include "core/err.h"

struct logmatch {
    char **words; /* lowercase */
    size_t nwords;
    char **phrases; /* lowercase */
    size_t nphrases;
    uint64_t *required; /* word hashes every matching block's filter must hold */
    size_t nrequired;
};

/* Parses q; ERR_INVALID for an empty query or an unterminated quote. */
int logmatch_parse(struct logmatch *m, const char *q, struct err *err);
void logmatch_release(struct logmatch *m);
bool logmatch_line(const struct logmatch *m, const char *text, size_t len);
/* False when the filter proves no line of the block matches. */
bool logmatch_block(const struct logmatch *m, const unsigned char *bloom, size_t len);
/* A block's text searched at once for the query's longest term, so that the lines it does not
 * occur in are ruled out without being lowercased and searched one by one: the worst search
 * (terms common in every block, rare together on a line) reads every line of every block.
 * logmatch_hits_find() takes the block's bytes (lines and whatever lies between them);
 * logmatch_hits_line() is then asked about its lines in order, each a range of those bytes. */
struct logmatch_hits {
    const char *base;
    size_t len, term_len;
    struct buf lowered;
    size_t *at; /* offsets of the term in base, ascending */
    size_t n, cap, next;
};
void logmatch_hits_find(const struct logmatch *m, const char *text, size_t len,
                        struct logmatch_hits *h);
/* False when the line (within the bytes last given to find) certainly does not match. */
bool logmatch_hits_line(struct logmatch_hits *h, const char *line, size_t len);
void logmatch_hits_release(struct logmatch_hits *h); /* a zeroed struct needs no find first */

/* Byte ranges of the line that match (for highlighting): calls fn(ctx, start, len). */
void logmatch_spans(const struct logmatch *m, const char *text, size_t len,
                    void (*fn)(void *ctx, size_t start, size_t n), void *ctx);

#endif
