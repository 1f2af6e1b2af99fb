/* logrec: see logrec.h. Pure; thread-safe. */
#include "server/ingest/logrec.h"

#include "core/linesplit.h"

/* Formats by hand: the shim writes one record per line of output, so printf would dominate. */
void logrec_format(struct buf *out, const struct logrec *r)
{
    char head[32], *p = head + sizeof(head);
    *--p = ' ';
    *--p = r->flags & LINE_PROGRESS ? 'p' : r->flags & LINE_PARTIAL ? 'u' : '-';
    *--p = r->stream == STREAM_STDERR ? 'e' : 'o';
    *--p = ' ';
    uint64_t t = r->time > 0 ? (uint64_t)r->time : 0;
    do {
        *--p = (char)('0' + t % 10);
        t /= 10;
    } while (t);
    size_t hlen = (size_t)(head + sizeof(head) - p);
    buf_reserve(out, hlen + r->len + 1);
    memcpy(out->data + out->len, p, hlen);
    if (r->len)
        memcpy(out->data + out->len + hlen, r->text, r->len);
    out->len += hlen + r->len;
    out->data[out->len++] = '\n';
    out->data[out->len] = '\0';
}

long logrec_parse(const char *data, size_t len, struct logrec *r)
{
    const char *nl = memchr(data, '\n', len);
    if (!nl)
        return 0;
    long consumed = (long)(nl - data) + 1;
    const char *p = data;
    uint64_t t = 0; /* 19 digits fit; the range is checked below */
    int digits = 0;
    while (p < nl && *p >= '0' && *p <= '9' && digits < 19) {
        t = t * 10 + (uint64_t)(*p++ - '0');
        digits++;
    }
    if (digits == 0 || t > INT64_MAX || nl - p < 4 || p[0] != ' ' || (p[1] != 'o' && p[1] != 'e') ||
        p[3] != ' ')
        return -consumed;
    r->time = (int64_t)t;
    r->stream = p[1] == 'e' ? STREAM_STDERR : STREAM_STDOUT;
    r->flags = p[2] == 'p' ? LINE_PROGRESS : p[2] == 'u' ? LINE_PARTIAL : 0;
    r->text = p + 4;
    r->len = (size_t)(nl - (p + 4));
    return consumed;
}
