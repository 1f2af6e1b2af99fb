/* logrec: see logrec.h. Pure; thread-safe. */
#include "server/core/logrec.h"

#include "server/core/linesplit.h"

void logrec_format(struct buf *out, const struct logrec *r)
{
    char flag = r->flags & LINE_PROGRESS ? 'p' : r->flags & LINE_PARTIAL ? 'u' : '-';
    buf_printf(out, "%lld %c%c ", (long long)r->time, r->stream == STREAM_STDERR ? 'e' : 'o',
               flag);
    buf_append(out, r->text, r->len);
    buf_putc(out, '\n');
}

long logrec_parse(const char *data, size_t len, struct logrec *r)
{
    const char *nl = memchr(data, '\n', len);
    if (!nl)
        return 0;
    long consumed = (long)(nl - data) + 1;
    const char *p = data;
    int64_t t = 0;
    int digits = 0;
    while (p < nl && *p >= '0' && *p <= '9' && digits < 19) {
        t = t * 10 + (*p++ - '0');
        digits++;
    }
    if (digits == 0 || nl - p < 4 || p[0] != ' ' || (p[1] != 'o' && p[1] != 'e') || p[3] != ' ')
        return -consumed;
    r->time = t;
    r->stream = p[1] == 'e' ? STREAM_STDERR : STREAM_STDOUT;
    r->flags = p[2] == 'p' ? LINE_PROGRESS : p[2] == 'u' ? LINE_PARTIAL : 0;
    r->text = p + 4;
    r->len = (size_t)(nl - (p + 4));
    return consumed;
}
