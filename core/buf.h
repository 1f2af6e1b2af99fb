/*
 * buf: a growable byte buffer, always NUL-terminated so it can be used as a C string.
 * Lives in the caller's storage: buf_init() / buf_release(); buf_detach() hands the bytes to the
 * caller (who frees them with free()) and leaves the buf empty.
 */
#ifndef TY_BUF_H
#define TY_BUF_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

struct buf {
    char *data; /* NULL until the first append; buf_cstr() never returns NULL */
    size_t len;
    size_t cap;
};

#define BUF_INIT                                                                                   \
    {                                                                                              \
        NULL, 0, 0                                                                                 \
    }

void buf_init(struct buf *b);
void buf_release(struct buf *b);
void buf_reserve(struct buf *b, size_t extra);
void buf_append(struct buf *b, const void *data, size_t len);
void buf_puts(struct buf *b, const char *s);
void buf_putc(struct buf *b, char c);
/* Appends v in decimal (printf's %lld without the cost of printf). */
void buf_put_int(struct buf *b, int64_t v);
void buf_printf(struct buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void buf_vprintf(struct buf *b, const char *fmt, va_list ap);
void buf_reset(struct buf *b);
/* Removes the first n bytes. */
void buf_consume(struct buf *b, size_t n);
/* Returns the bytes (caller frees) and empties b. Never NULL. */
char *buf_detach(struct buf *b, size_t *len);
const char *buf_cstr(const struct buf *b);

#endif
