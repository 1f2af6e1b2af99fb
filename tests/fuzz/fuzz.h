/*
 * fuzz: what every libFuzzer target shares. A target defines LLVMFuzzerTestOneInput(), takes
 * the input as outside data would arrive, and frees everything it made: a leak is a failure.
 * FUZZ_ASSERT states a property the parser promises (a round trip, an idempotent canonical
 * form); when it does not hold the target aborts, which libFuzzer reports like a crash.
 */
#ifndef TY_FUZZ_H
#define TY_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_ASSERT(cond)                                                                          \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "%s:%d: property does not hold: %s\n", __FILE__, __LINE__, #cond);     \
            abort();                                                                               \
        }                                                                                          \
    } while (0)

/* A NUL-terminated copy of n bytes (NULs inside stay: C string parsers see a prefix, as they
 * would from a query string). Caller frees. */
static inline char *fuzz_cstr(const void *data, size_t n)
{
    char *s = malloc(n + 1);
    if (!s)
        abort();
    if (n)
        memcpy(s, data, n);
    s[n] = '\0';
    return s;
}

/* Splits off the bytes up to the next sep (or the end) of *data: returns where they start,
 * sets *len to their number, and advances *data and *size past the separator. */
static inline const uint8_t *fuzz_take(const uint8_t **data, size_t *size, uint8_t sep, size_t *len)
{
    const uint8_t *start = *data;
    const uint8_t *p = *size ? memchr(start, sep, *size) : NULL;
    *len = p ? (size_t)(p - start) : *size;
    *data += *len + (p ? 1 : 0);
    *size -= *len + (p ? 1 : 0);
    return start;
}

#endif
