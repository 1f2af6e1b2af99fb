/*
 * cli_sse: Server-Sent Events parsing. Lines end in LF, CRLF or CR; "field: value" with one
 * optional space after the colon; lines starting with ':' are comments (the daemon's
 * keep-alives); a blank line dispatches the event. Pure; one parser per stream.
 */
#include "server/cli/cli_sse.h"

void cli_sse_init(struct cli_sse *s, cli_sse_fn fn, void *ctx)
{
    memset(s, 0, sizeof(*s));
    s->fn = fn;
    s->ctx = ctx;
}

void cli_sse_release(struct cli_sse *s)
{
    buf_release(&s->line);
    buf_release(&s->id);
    buf_release(&s->event);
    buf_release(&s->data);
}

void cli_sse_reset(struct cli_sse *s)
{
    buf_reset(&s->line);
    buf_reset(&s->id);
    buf_reset(&s->event);
    buf_reset(&s->data);
    s->has_data = false;
    s->after_cr = false;
}

static int dispatch(struct cli_sse *s)
{
    int rc = 0;
    if (s->has_data || s->event.len) {
        struct cli_sse_event ev = { buf_cstr(&s->id),
                                    s->event.len ? buf_cstr(&s->event) : "message",
                                    buf_cstr(&s->data), s->data.len };
        rc = s->fn(s->ctx, &ev);
    }
    buf_reset(&s->id);
    buf_reset(&s->event);
    buf_reset(&s->data);
    s->has_data = false;
    return rc;
}

static int line(struct cli_sse *s)
{
    const char *l = buf_cstr(&s->line);
    size_t len = s->line.len;
    if (len == 0)
        return dispatch(s);
    if (l[0] == ':')
        return 0;
    size_t name_len = strcspn(l, ":");
    const char *value = l + name_len;
    size_t vlen = len - name_len;
    if (vlen) { /* skip ':' and one optional space */
        value++, vlen--;
        if (vlen && *value == ' ')
            value++, vlen--;
    }
    if (name_len == 4 && memcmp(l, "data", 4) == 0) {
        if (s->has_data)
            buf_putc(&s->data, '\n');
        buf_append(&s->data, value, vlen);
        s->has_data = true;
    } else if (name_len == 5 && memcmp(l, "event", 5) == 0) {
        buf_reset(&s->event);
        buf_append(&s->event, value, vlen);
    } else if (name_len == 2 && memcmp(l, "id", 2) == 0 && !memchr(value, '\0', vlen)) {
        buf_reset(&s->id);
        buf_append(&s->id, value, vlen);
    }
    return 0;
}

int cli_sse_feed(struct cli_sse *s, const char *data, size_t len)
{
    for (size_t i = 0; i < len; i++) {
        char c = data[i];
        if (c != '\n' && c != '\r') {
            s->after_cr = false;
            size_t run = i;
            while (run < len && data[run] != '\n' && data[run] != '\r')
                run++;
            buf_append(&s->line, data + i, run - i);
            i = run - 1;
            continue;
        }
        /* CRLF: the LF after a CR ends nothing (the CR did), even across feeds. */
        bool lf_after_cr = c == '\n' && s->after_cr;
        s->after_cr = c == '\r';
        if (lf_after_cr)
            continue;
        int rc = line(s);
        buf_reset(&s->line);
        if (rc)
            return rc;
    }
    return 0;
}
