/* utf8: validation of byte strings that come from logs and requests. */
#ifndef TY_UTF8_H
#define TY_UTF8_H

#include <stdbool.h>
#include <stddef.h>

/* Length of the one UTF-8 sequence (non-ASCII) at s, or 0 when it is invalid or truncated. */
size_t utf8_valid_prefix(const char *s, size_t len);
/* True when all len bytes are valid UTF-8 without NUL bytes. */
bool utf8_valid(const char *s, size_t len);

#endif
