/*
 * xalloc: allocation that aborts on out-of-memory, so callers never check for NULL. A daemon
 * that cannot allocate a few bytes cannot do anything useful; failing loudly beats limping.
 */
#ifndef TY_XALLOC_H
#define TY_XALLOC_H

#include <stddef.h>

void *xmalloc(size_t size);
void *xcalloc(size_t n, size_t size);
void *xrealloc(void *ptr, size_t size);
/* Caller frees. */
char *xstrdup(const char *s);
char *xstrndup(const char *s, size_t n);
/* Caller frees; like asprintf. */
char *xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#define XNEW(type) ((type *)xcalloc(1, sizeof(type)))

/* Makes room for one more element in a growable array: arr holds n of cap; doubles when full. */
#define XGROW(arr, n, cap)                                                                         \
    do {                                                                                           \
        if ((n) == (cap)) {                                                                        \
            (cap) = (cap) ? (cap)*2 : 8;                                                           \
            (arr) = xrealloc((arr), (cap) * sizeof(*(arr)));                                       \
        }                                                                                          \
    } while (0)

#endif
