/*
 * words: how log text is cut into searchable words, and the per-block Bloom filter of those
 * words that lets a search skip most of a job's blocks without reading them.
 *
 * A word is a maximal run of ASCII letters, digits and '_', compared case-insensitively. Words
 * made only of digits are not indexed (step counters would fill every filter); a query on such
 * a word scans instead.
 */
#ifndef TY_WORDS_H
#define TY_WORDS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/buf.h"

/* Length of the ANSI escape sequence at s (CSI "\e[...m" or OSC "\e]...\a"), 0 if none. */
size_t words_ansi_len(const char *s, size_t len);
/* Calls fn for each word of text. ANSI escape sequences separate words, except inside one
 * ("wat\e[1mchdog" is the word "watchdog", as search sees the line): then w points to a copy,
 * valid during the call; otherwise into text. */
void words_each(const char *text, size_t len, void (*fn)(void *ctx, const char *w, size_t n),
                void *ctx);
/* Case-insensitive 64-bit hash of a word. */
uint64_t words_hash(const char *w, size_t n);
/* True when the word is indexed (not all digits). */
bool words_indexed(const char *w, size_t n);

/* A Bloom filter under construction: add word hashes, then serialise. */
struct bloom {
    uint64_t *hashes;
    size_t n, cap;
};
void bloom_init(struct bloom *b);
void bloom_release(struct bloom *b);
void bloom_add(struct bloom *b, uint64_t hash);
/* Appends the filter (about 10 bits per distinct word, 4 probes) to out. */
void bloom_build(struct bloom *b, struct buf *out);
/* True when the serialised filter may contain hash (false means certainly not). */
bool bloom_may_contain(const unsigned char *filter, size_t len, uint64_t hash);

#endif
