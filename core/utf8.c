/* utf8: strict UTF-8 validation (no overlongs, no surrogates, at most U+10FFFF). */
#include "core/utf8.h"

size_t utf8_valid_prefix(const char *str, size_t len)
{
    const unsigned char *s = (const unsigned char *)str;
    if (len == 0)
        return 0;
    unsigned char c = s[0];
    size_t n;
    unsigned min;
    unsigned cp;
    if (c < 0x80)
        return 1;
    if (c >= 0xc2 && c <= 0xdf) {
        n = 2, min = 0x80, cp = c & 0x1f;
    } else if (c >= 0xe0 && c <= 0xef) {
        n = 3, min = 0x800, cp = c & 0x0f;
    } else if (c >= 0xf0 && c <= 0xf4) {
        n = 4, min = 0x10000, cp = c & 0x07;
    } else {
        return 0;
    }
    if (len < n)
        return 0;
    for (size_t i = 1; i < n; i++) {
        if ((s[i] & 0xc0) != 0x80)
            return 0;
        cp = (cp << 6) | (s[i] & 0x3f);
    }
    if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
        return 0;
    return n;
}

bool utf8_valid(const char *s, size_t len)
{
    size_t i = 0;
    while (i < len) {
        if (s[i] == '\0')
            return false;
        if ((unsigned char)s[i] < 0x80) {
            i++;
            continue;
        }
        size_t n = utf8_valid_prefix(s + i, len - i);
        if (n == 0)
            return false;
        i += n;
    }
    return true;
}
