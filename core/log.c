/* log: leveled lines on stderr, each written with one write(2) so threads never interleave.
 * A record is one line whatever its arguments hold: control characters (a request path's
 * decoded %0a once wrote a forged line) are written as \xNN. */
#include "core/log.h"

#include <stdarg.h>
#include <unistd.h>

#include "core/clock.h"

static enum log_level min_level = LOG_INFO;
static const char *const level_names[] = { "debug", "info", "warn", "error" };

void log_set_level(enum log_level level)
{
    min_level = level;
}

int log_parse_level(const char *name, enum log_level *level)
{
    for (int i = 0; i < 4; i++) {
        if (strcmp(name, level_names[i]) == 0) {
            *level = (enum log_level)i;
            return 0;
        }
    }
    return -1;
}

void log_write(enum log_level level, const char *fmt, ...)
{
    if (level < min_level)
        return;
    static const char hex[] = "0123456789abcdef";
    char msg[2048], line[2048 + 64], ts[CLOCK_RFC3339_MAX];
    int n = snprintf(line, sizeof(line), "%s %s ", clock_format(clock_now_ns(), ts),
                     level_names[level]);
    va_list ap;
    va_start(ap, fmt);
    int m = vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    size_t len = (size_t)n, mlen = m < 0 ? 0 : (size_t)m;
    if (mlen > sizeof(msg) - 1)
        mlen = sizeof(msg) - 1;
    for (size_t i = 0; i < mlen && len + 5 < sizeof(line); i++) {
        unsigned char c = (unsigned char)msg[i];
        if (c >= 0x20 && c != 0x7f) {
            line[len++] = (char)c;
            continue;
        }
        line[len++] = '\\';
        line[len++] = 'x';
        line[len++] = hex[c >> 4];
        line[len++] = hex[c & 15];
    }
    line[len++] = '\n';
    if (write(2, line, len) < 0) {
        /* stderr is gone; nothing sensible to do */
    }
}
