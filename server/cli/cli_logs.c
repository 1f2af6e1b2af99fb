/*
 * cli_logs: `trainyard logs` and the follow behind `logs -f` and `submit --follow`. A page read
 * walks the NDJSON pages (Trainyard-Next-After). A follow reads Server-Sent Events and keeps the
 * sequence number of the last line it printed: after a dropped connection or a daemon restart
 * it reconnects with Last-Event-ID (backoff, bounded by --retry-for without progress), and
 * skips anything at or below that number, so no line is lost or printed twice. Output: text
 * "[rank N] line" for people, the API's LogLine objects as NDJSON with --output json.
 */
#include <ctype.h>

#include "server/cli/cli_internal.h"
#include "server/cli/cli_sse.h"
#include "core/clock.h"
#include "core/crypto.h"
#include "core/jsonx.h"
#include "core/parse.h"

#define PAGE_LINES "2000"

struct follow {
    struct cli *c;
    struct cli_sse sse;
    int64_t last_seq;
    bool ended;
    bool progress; /* something arrived on this connection */
    char state[32];
};

/* Prints one LogLine; returns its seq (0 when it has none). */
static int64_t print_line(struct cli *c, const char *data, size_t len)
{
    json_t *l = jsonx_loadb(data, len, 8, NULL);
    int64_t seq = jsonx_int(l, "seq", 0);
    if (!l)
        return 0;
    if (c->json) {
        fwrite(data, 1, len, stdout);
        fputc('\n', stdout);
    } else {
        if (c->a.timestamps && jsonx_str(l, "time"))
            printf("%s ", jsonx_str(l, "time"));
        printf("[rank %lld] %s\n", (long long)jsonx_int(l, "rank", -1),
               jsonx_str(l, "line") ? jsonx_str(l, "line") : "");
    }
    json_decref(l);
    return seq;
}

static int on_event(void *ctx, const struct cli_sse_event *ev)
{
    struct follow *f = ctx;
    f->progress = true;
    if (strcmp(ev->event, "end") == 0) {
        json_t *d = jsonx_loadb(ev->data, ev->data_len, 4, NULL);
        snprintf(f->state, sizeof(f->state), "%s",
                 jsonx_str(d, "state") ? jsonx_str(d, "state") : "ended");
        json_decref(d);
        f->ended = true;
        return 1;
    }
    if (strcmp(ev->event, "dropped") == 0) {
        json_t *d = jsonx_loadb(ev->data, ev->data_len, 4, NULL);
        cli_note(f->c, "%lld older lines were dropped by the daemon's log retention",
                 (long long)jsonx_int(d, "dropped_lines", 0));
        json_decref(d);
        return 0;
    }
    int64_t seq = 0;
    if (ev->id[0] && parse_int64(ev->id, 0, INT64_MAX, &seq) == 0 && seq <= f->last_seq)
        return 0; /* already printed before a reconnect */
    seq = print_line(f->c, ev->data, ev->data_len);
    if (seq > f->last_seq)
        f->last_seq = seq;
    return 0;
}

static int on_data(void *ctx, const char *data, size_t len)
{
    struct follow *f = ctx;
    int rc = cli_sse_feed(&f->sse, data, len);
    fflush(stdout);
    return rc;
}

/* The options that choose lines, as query parameters (the daemon checks them). */
static void filters(struct cli *c, struct buf *path)
{
    cli_query(path, "rank", c->a.rank);
    cli_query(path, "attempt", c->a.attempt);
    cli_query(path, "since", c->a.since);
    cli_query(path, "until", c->a.until);
    cli_query(path, "q", c->a.grep);
    cli_query(path, "stream", c->a.stream);
    if (c->a.strip_ansi)
        cli_query(path, "strip_ansi", "true");
}

static void follow_path(struct cli *c, struct buf *path, const char *id, int64_t last_seq)
{
    cli_job_path(path, id, "/logs?follow=true&format=sse");
    filters(c, path);
    if (last_seq == 0) /* tail only picks the start; after that the seq does */
        cli_query(path, "tail", c->a.tail);
}

/* One connection. 0: ended or dropped (retry); CLI_API: refused for good (reported). */
static int connect_once(struct follow *f, const char *id, char *why, size_t cap)
{
    struct buf path = BUF_INIT;
    char last[64];
    snprintf(last, sizeof(last), "Last-Event-ID: %lld", (long long)f->last_seq);
    const char *headers[] = { "Accept: text/event-stream", f->last_seq ? last : NULL, NULL };
    struct httpc_response resp;
    httpc_response_init(&resp);
    struct err err;
    err_init(&err);
    follow_path(f->c, &path, id, f->last_seq);
    cli_sse_reset(&f->sse);
    f->progress = false;
    struct httpc_request rq = {
        .url = buf_cstr(&path), .headers = headers, .stream = on_data, .stream_ctx = f
    };
    int rc = httpc_do(f->c->http, &rq, &resp, &err);
    if (rc < 0 && resp.fatal)
        rc = cli_fail(f->c, CLI_LOST, "%s", err.msg);
    else if (rc < 0)
        snprintf(why, cap, "%s", err.msg);
    else if (resp.status >= 200 && resp.status <= 299)
        snprintf(why, cap, "the stream ended early");
    else if (httpc_status_retryable(resp.status))
        snprintf(why, cap, "the daemon answered HTTP %ld", resp.status);
    else {
        json_t *ignored;
        rc = cli_answer(f->c, &resp, &ignored);
    }
    err_release(&err);
    httpc_response_release(&resp);
    buf_release(&path);
    return rc > 0 ? rc : 0;
}

int cli_follow_logs(struct cli *c, const char *id)
{
    struct follow f = { .c = c };
    cli_sse_init(&f.sse, on_event, &f);
    int64_t outage_start = 0;
    int attempt = 0, rc = 0;
    char why[400];
    while (!f.ended) {
        rc = connect_once(&f, id, why, sizeof(why));
        if (rc || f.ended)
            break;
        int64_t now = clock_mono_ns();
        if (f.progress || !outage_start) {
            outage_start = now;
            attempt = 0;
        }
        uint64_t rnd;
        crypto_random(&rnd, sizeof(rnd));
        int64_t delay = httpc_backoff_ms(attempt++, rnd, -1);
        int64_t left_ms = (c->retry_for_ns - (now - outage_start)) / NS_PER_MS;
        if (delay > left_ms)
            delay = left_ms; /* one last try when the budget runs out */
        if (left_ms <= 0) {
            rc = cli_fail(c, CLI_LOST, "lost connection while following job %s after line %lld: %s",
                          id, (long long)f.last_seq, why);
            break;
        }
        cli_note(c, "log stream interrupted (%s); resuming after line %lld in %.1fs", why,
                 (long long)f.last_seq, (double)delay / 1000.0);
        clock_sleep_ms(delay);
    }
    cli_sse_release(&f.sse);
    fflush(stdout);
    return rc;
}

/* Lines of an NDJSON page. */
static void print_page(struct cli *c, const struct buf *body)
{
    const char *p = buf_cstr(body), *end = p + body->len;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t len = nl ? (size_t)(nl - p) : (size_t)(end - p);
        if (len)
            print_line(c, p, len);
        p += len + 1;
    }
}

static int read_pages(struct cli *c, const char *id)
{
    struct buf path = BUF_INIT;
    int64_t after = 0;
    int rc = 0;
    do {
        cli_job_path(&path, id, "/logs?format=ndjson");
        filters(c, &path);
        cli_query(&path, c->a.tail ? "tail" : "limit", c->a.tail ? c->a.tail : PAGE_LINES);
        if (after)
            buf_printf(&path, "&after=%lld", (long long)after);
        static const char *const accept[] = {
            "Accept: application/x-ndjson, application/problem+json", NULL
        };
        struct httpc_request rq = { .url = buf_cstr(&path), .headers = accept, .retry = true };
        struct httpc_response resp;
        httpc_response_init(&resp);
        rc = cli_send(c, &rq, &resp);
        json_t *ignored = NULL;
        if (rc == 0 && (resp.status < 200 || resp.status > 299))
            rc = cli_answer(c, &resp, &ignored);
        if (rc == 0)
            print_page(c, &resp.body);
        char next[32];
        after = 0;
        if (!c->a.tail && httpc_header(&resp, "Trainyard-Next-After", next, sizeof(next)))
            parse_int64(next, 0, INT64_MAX, &after);
        httpc_response_release(&resp);
    } while (rc == 0 && after);
    buf_release(&path);
    return rc;
}

/* --since/--until: RFC 3339 as given; a duration ("10m": ten minutes ago) becomes a time once,
 * here, so that a follow that reconnects keeps the window it started with. */
static int resolve_time(struct cli *c, const char **opt, const char *name, char *out)
{
    int64_t ns, ago;
    if (!*opt || clock_parse(*opt, &ns) == 0)
        return 0;
    size_t len = strlen(*opt);
    if (!len || !isalpha((unsigned char)(*opt)[len - 1]) || parse_duration(*opt, &ago) < 0)
        return cli_fail(c, CLI_USAGE,
                        "--%s must be an RFC 3339 time (2026-11-22T03:00:00Z) or a duration "
                        "before now (10m, 90s, 2h)",
                        name);
    *opt = clock_format(clock_now_ns() - ago, out);
    return 0;
}

int cli_cmd_logs(struct cli *c)
{
    int64_t n;
    char since[CLOCK_RFC3339_MAX], until[CLOCK_RFC3339_MAX];
    if (c->a.tail && parse_int64(c->a.tail, 1, INT32_MAX, &n) < 0)
        return cli_fail(c, CLI_USAGE, "--tail must be a positive number of lines");
    if (c->a.attempt && parse_int64(c->a.attempt, 0, INT32_MAX, &n) < 0)
        return cli_fail(c, CLI_USAGE, "--attempt must be 0 (the first run) or more");
    int rc = resolve_time(c, &c->a.since, "since", since);
    if (rc || (rc = resolve_time(c, &c->a.until, "until", until)))
        return rc;
    if (c->a.stream && strcmp(c->a.stream, "stdout") != 0 && strcmp(c->a.stream, "stderr") != 0)
        return cli_fail(c, CLI_USAGE, "--stream must be stdout or stderr");
    rc = c->a.follow ? cli_follow_logs(c, c->a.pos[0]) : read_pages(c, c->a.pos[0]);
    fflush(stdout);
    return rc;
}
