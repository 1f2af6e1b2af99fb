/*
 * cli_out: tables, relative times and problem rendering for the CLI. Pure except the
 * cli_print_* helpers, which write to the FILE they are given. Widths count UTF-8 characters
 * (code points), which is right for the names, states and messages the API returns.
 * Not thread-safe state-wise: a table belongs to its caller.
 */
#include "server/cli/cli_out.h"

#include "core/clock.h"
#include "core/jsonx.h"
#include "core/utf8.h"
#include "core/xalloc.h"

void cli_table_init(struct cli_table *t, size_t ncols, const char *const *headers)
{
    memset(t, 0, sizeof(*t));
    t->ncols = ncols;
    cli_table_add(t, headers);
}

/* Length of the character at s (1 for ASCII and for bytes that are not valid UTF-8). */
static size_t char_len(const char *s, size_t left)
{
    if ((unsigned char)*s < 0x80)
        return 1;
    size_t n = utf8_valid_prefix(s, left);
    return n ? n : 1;
}

/* A copy of s on one line, cut to max characters (the cut ends in "..."). */
static char *clean_cell(const char *s, size_t max)
{
    if (!s || !*s)
        return xstrdup("-");
    struct buf b = BUF_INIT;
    size_t len = strlen(s), chars = 0, i = 0;
    while (i < len) {
        size_t n = char_len(s + i, len - i);
        if (chars + 1 > max && max > 3) {
            /* Drop the last characters again to make room for "...". */
            size_t back = 0, keep = b.len;
            while (back < 3 && keep > 0) {
                keep--;
                while (keep > 0 && ((unsigned char)b.data[keep] & 0xc0) == 0x80)
                    keep--;
                back++;
            }
            b.len = keep;
            buf_puts(&b, "...");
            break;
        }
        unsigned char c = (unsigned char)s[i];
        if (n == 1 && (c < 0x20 || c == 0x7f))
            buf_putc(&b, ' ');
        else if (n == 1 && c >= 0x80)
            buf_putc(&b, '?');
        else
            buf_append(&b, s + i, n);
        i += n;
        chars++;
    }
    size_t ignored;
    return buf_detach(&b, &ignored);
}

void cli_table_add(struct cli_table *t, const char *const *cells)
{
    if ((t->nrows + 1) * t->ncols > t->cap) {
        t->cap = t->cap ? t->cap * 2 : t->ncols * 16;
        t->cells = xrealloc(t->cells, t->cap * sizeof(char *));
    }
    size_t max = t->max_width ? t->max_width : 80;
    for (size_t c = 0; c < t->ncols; c++)
        t->cells[t->nrows * t->ncols + c] = clean_cell(cells[c], max);
    t->nrows++;
}

static size_t width_of(const char *s)
{
    size_t len = strlen(s), w = 0;
    for (size_t i = 0; i < len; w++)
        i += char_len(s + i, len - i);
    return w;
}

void cli_table_render(const struct cli_table *t, struct buf *out)
{
    size_t *w = xcalloc(t->ncols ? t->ncols : 1, sizeof(size_t));
    for (size_t r = 0; r < t->nrows; r++)
        for (size_t c = 0; c < t->ncols; c++) {
            size_t cw = width_of(t->cells[r * t->ncols + c]);
            if (cw > w[c])
                w[c] = cw;
        }
    for (size_t r = 0; r < t->nrows; r++) {
        for (size_t c = 0; c < t->ncols; c++) {
            const char *cell = t->cells[r * t->ncols + c];
            buf_puts(out, cell);
            if (c + 1 == t->ncols)
                break;
            for (size_t pad = width_of(cell); pad < w[c] + 2; pad++)
                buf_putc(out, ' ');
        }
        buf_putc(out, '\n');
    }
    free(w);
}

void cli_table_release(struct cli_table *t)
{
    for (size_t i = 0; i < t->nrows * t->ncols; i++)
        free(t->cells[i]);
    free(t->cells);
    memset(t, 0, sizeof(*t));
}

/* Two units at most: "5m12s", "3h5m", "4d2h"; the second is left out when zero. */
static void two_units(struct buf *out, int64_t secs)
{
    static const struct {
        int64_t secs;
        char unit;
    } units[] = { { 86400, 'd' }, { 3600, 'h' }, { 60, 'm' }, { 1, 's' } };
    for (size_t i = 0; i < 4; i++) {
        if (secs < units[i].secs && i < 3)
            continue;
        int64_t major = secs / units[i].secs;
        buf_printf(out, "%lld%c", (long long)major, units[i].unit);
        /* Beyond 10 minutes seconds are noise; beyond a week, hours are. */
        bool more = i < 3 && !(i == 2 && secs >= 600) && !(i == 0 && major >= 7);
        int64_t minor = more ? (secs % units[i].secs) / units[i + 1].secs : 0;
        if (minor)
            buf_printf(out, "%lld%c", (long long)minor, units[i + 1].unit);
        return;
    }
}

void cli_duration(struct buf *out, int64_t ns)
{
    if (ns < 0)
        ns = 0;
    if (ns < NS_PER_SEC) {
        buf_printf(out, "%lldms", (long long)(ns / NS_PER_MS));
        return;
    }
    two_units(out, ns / NS_PER_SEC);
}

void cli_reltime(struct buf *out, int64_t then_ns, int64_t now_ns)
{
    int64_t d = now_ns - then_ns;
    /* A few seconds ahead is the daemon's clock a little ahead of ours, not the future. */
    if (d > -5 * NS_PER_SEC && d < NS_PER_SEC) {
        buf_puts(out, "just now");
        return;
    }
    if (d < 0) {
        buf_puts(out, "in ");
        two_units(out, -d / NS_PER_SEC);
        return;
    }
    two_units(out, d / NS_PER_SEC);
    buf_puts(out, " ago");
}

void cli_reltime_str(struct buf *out, const char *rfc3339, int64_t now_ns)
{
    int64_t t;
    if (!rfc3339 || clock_parse(rfc3339, &t) < 0) {
        buf_putc(out, '-');
        return;
    }
    cli_reltime(out, t, now_ns);
}

const char *cli_restart_words(const char *retry_class, const char *cause)
{
    if (!retry_class)
        return NULL;
    if (strcmp(retry_class, "retryable") == 0)
        return "a restart may help";
    if (strcmp(retry_class, "deterministic") == 0)
        return "a restart will not help: it fails the same way again";
    if (strcmp(retry_class, "unknown") != 0)
        return NULL;
    if (cause && strcmp(cause, "hang") == 0)
        return "a restart may help if the hang was transient; look at the quiet rank first";
    return "unknown whether a restart helps";
}

void cli_print_json(FILE *f, const json_t *v)
{
    json_dumpf(v, f, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    fputc('\n', f);
}

static const char *status_title(long status)
{
    switch (status) {
    case 400:
        return "Bad Request";
    case 401:
        return "Unauthorized";
    case 403:
        return "Forbidden";
    case 404:
        return "Not Found";
    case 405:
        return "Method Not Allowed";
    case 409:
        return "Conflict";
    case 413:
        return "Content Too Large";
    case 415:
        return "Unsupported Media Type";
    case 422:
        return "Unprocessable Content";
    case 429:
        return "Too Many Requests";
    case 500:
        return "Internal Server Error";
    case 502:
        return "Bad Gateway";
    case 503:
        return "Service Unavailable";
    case 504:
        return "Gateway Timeout";
    default:
        return "Error";
    }
}

void cli_problem_text(struct buf *out, long status, const char *body, size_t len)
{
    json_t *p = body && len ? jsonx_loadb(body, len, 16, NULL) : NULL;
    const char *title = json_is_object(p) ? jsonx_str(p, "title") : NULL;
    const char *detail = json_is_object(p) ? jsonx_str(p, "detail") : NULL;
    if (!title)
        title = status_title(status);
    if (detail)
        buf_printf(out, "trainyard: %s (HTTP %ld %s)\n", detail, status, title);
    else if (body && len && !p)
        buf_printf(out, "trainyard: HTTP %ld %s: %.*s\n", status, title,
                   (int)strcspn(body, "\r\n") < 200 ? (int)strcspn(body, "\r\n") : 200, body);
    else
        buf_printf(out, "trainyard: HTTP %ld %s\n", status, title);
    json_t *errors = json_is_object(p) ? json_object_get(p, "errors") : NULL;
    size_t i;
    json_t *e;
    json_array_foreach(errors, i, e)
    {
        const char *ptr = jsonx_str(e, "pointer"), *d = jsonx_str(e, "detail");
        buf_printf(out, "  %s: %s\n", ptr && *ptr ? ptr : "(document)", d ? d : "invalid");
    }
    const char *reason = json_is_object(p) ? jsonx_str(p, "reason") : NULL;
    if (reason && *reason)
        buf_printf(out, "  reason: %s\n", reason);
    const char *rid = json_is_object(p) ? jsonx_str(p, "request_id") : NULL;
    if (rid && *rid && status >= 500)
        buf_printf(out, "  request id: %s\n", rid);
    json_decref(p);
}
