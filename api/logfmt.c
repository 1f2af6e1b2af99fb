/* logfmt: rendering log lines. Pure; thread-safe. */
#include <jansson.h>

#include "api/logfmt.h"
#include "core/clock.h"
#include "core/jsonx.h"
#include "core/utf8.h"

void logfmt_strip_ansi(struct buf *out, const char *s, size_t len)
{
    size_t i = 0;
    while (i < len) {
        if (s[i] != 0x1b || i + 1 >= len) {
            buf_putc(out, s[i++]);
            continue;
        }
        char kind = s[i + 1];
        i += 2;
        if (kind == '[') { /* CSI: parameters, then a final byte 0x40..0x7e */
            while (i < len && !((unsigned char)s[i] >= 0x40 && (unsigned char)s[i] <= 0x7e))
                i++;
            i++;
        } else if (kind == ']') { /* OSC: ends with BEL or ESC \ */
            while (i < len && s[i] != 0x07 && !(s[i] == 0x1b && i + 1 < len && s[i + 1] == '\\'))
                i++;
            i += i < len && s[i] == 0x07 ? 1 : 2;
        }
    }
}

/* Text output: raw bytes, except NUL and invalid UTF-8, which are shown as \xNN. */
static void text_bytes(struct buf *out, const char *s, size_t len)
{
    static const char hex[] = "0123456789abcdef";
    size_t i = 0;
    while (i < len) {
        unsigned char c = (unsigned char)s[i];
        size_t n = c && c < 0x80 ? 1 : c ? utf8_valid_prefix(s + i, len - i) : 0;
        if (n) {
            buf_append(out, s + i, n);
            i += n;
        } else {
            char e[4] = { '\\', 'x', hex[c >> 4], hex[c & 15] };
            buf_append(out, e, 4);
            i++;
        }
    }
}

/* The line's text for display: ANSI stripped on request, invalid bytes shown as \xNN. */
static void display_text(struct buf *out, const struct log_line *l, bool strip_ansi)
{
    if (!strip_ansi) {
        text_bytes(out, l->text, l->len);
        return;
    }
    struct buf plain = BUF_INIT;
    logfmt_strip_ansi(&plain, l->text, l->len);
    text_bytes(out, buf_cstr(&plain), plain.len);
    buf_release(&plain);
}

json_t *logfmt_json(const struct log_line *l, bool strip_ansi)
{
    char ts[CLOCK_RFC3339_MAX];
    struct buf text = BUF_INIT;
    display_text(&text, l, strip_ansi);
    json_t *o =
        json_pack("{s:I,s:i,s:i,s:s,s:s,s:s%}", "seq", (json_int_t)l->seq, "rank", l->rank,
                  "attempt", l->attempt, "stream", l->flags & LOGF_STDERR ? "stderr" : "stdout",
                  "time", clock_format(l->time, ts), "line", buf_cstr(&text), text.len);
    if (l->pod)
        json_object_set_new(o, "pod", json_string(l->pod));
    else if (l->pid)
        json_object_set_new(o, "pid", json_integer(l->pid));
    if (l->flags & LOGF_PROGRESS)
        json_object_set_new(o, "progress", json_true());
    if (l->flags & LOGF_PARTIAL)
        json_object_set_new(o, "partial", json_true());
    buf_release(&text);
    return o;
}

/* NDJSON without building a json_t: this runs for every line sent to every follower. */
static void json_line(struct buf *out, const struct log_line *l, bool strip_ansi)
{
    char ts[CLOCK_RFC3339_MAX];
    buf_printf(out,
               "{\"seq\":%lld,\"rank\":%d,\"attempt\":%d,\"stream\":\"%s\",\"time\":\"%s\","
               "\"line\":\"",
               (long long)l->seq, l->rank, l->attempt, l->flags & LOGF_STDERR ? "stderr" : "stdout",
               clock_format(l->time, ts));
    struct buf text = BUF_INIT;
    display_text(&text, l, strip_ansi);
    jsonx_escape_bytes(out, buf_cstr(&text), text.len);
    buf_release(&text);
    buf_putc(out, '"');
    if (l->pod) {
        buf_puts(out, ",\"pod\":\"");
        jsonx_escape_bytes(out, l->pod, strlen(l->pod));
        buf_putc(out, '"');
    } else if (l->pid) {
        buf_printf(out, ",\"pid\":%d", l->pid);
    }
    if (l->flags & LOGF_PROGRESS)
        buf_puts(out, ",\"progress\":true");
    if (l->flags & LOGF_PARTIAL)
        buf_puts(out, ",\"partial\":true");
    buf_putc(out, '}');
}

void logfmt_line(const struct logfmt *f, struct buf *out, const struct log_line *l)
{
    if (f->format == LOGFMT_TEXT) {
        if (f->show_rank)
            buf_printf(out, "[rank %d] ", l->rank);
        display_text(out, l, f->strip_ansi);
        buf_putc(out, '\n');
        return;
    }
    if (f->format == LOGFMT_SSE)
        buf_printf(out, "id: %lld\nevent: line\ndata: ", (long long)l->seq);
    json_line(out, l, f->strip_ansi);
    buf_puts(out, f->format == LOGFMT_SSE ? "\n\n" : "\n");
}
