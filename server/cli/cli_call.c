/*
 * cli_call: what every CLI command does with the daemon: send a request, turn the answer into
 * a document or into a reported error and an exit status, build paths, pick table cells out of
 * JSON. Errors are printed here, once, as the API states them; with --output json stdout still
 * gets exactly one JSON document (the problem, or the CLI's own problem-shaped failure).
 */
#include <stdarg.h>

#include "server/cli/cli_internal.h"
#include "server/cli/cli_out.h"
#include "core/jsonx.h"
#include "core/xalloc.h"

static const char *kind_of(int code)
{
    switch (code) {
    case CLI_USAGE:
        return "usage";
    case CLI_TIMEOUT:
        return "timeout";
    case CLI_LOST:
        return "lost-connection";
    case CLI_API:
        return "api";
    default:
        return "error";
    }
}

int cli_fail(struct cli *c, int code, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    fprintf(stderr, "trainyard: %s\n", msg);
    if (c->json) {
        char type[64];
        snprintf(type, sizeof(type), "urn:trainyard:cli:%s", kind_of(code));
        json_t *doc = json_pack("{s:s,s:s,s:s,s:i}", "type", type, "title",
                                code == CLI_LOST ? "Lost connection" : "CLI error", "detail", msg,
                                "exit_status", code);
        cli_print_json(stdout, doc);
        json_decref(doc);
    }
    return code;
}

void cli_note(struct cli *c, const char *fmt, ...)
{
    if (c->a.quiet)
        return;
    va_list ap;
    va_start(ap, fmt);
    fputs("trainyard: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

const char *const cli_accept_json[] = { "Accept: application/json, application/problem+json",
                                        NULL };

int cli_send(struct cli *c, const struct httpc_request *rq, struct httpc_response *resp)
{
    struct err err;
    err_init(&err);
    int rc = httpc_do(c->http, rq, resp, &err);
    if (rc < 0)
        rc = cli_fail(c, CLI_LOST, "%s", err.msg);
    else if (resp->truncated)
        rc = cli_fail(c, CLI_API, "the daemon's answer is larger than %u MiB", CLI_BODY_MAX >> 20);
    err_release(&err);
    return rc;
}

int cli_answer(struct cli *c, const struct httpc_response *resp, json_t **doc)
{
    *doc = NULL;
    if (resp->status < 200 || resp->status > 299) {
        struct buf text = BUF_INIT;
        cli_problem_text(&text, resp->status, buf_cstr(&resp->body), resp->body.len);
        fputs(buf_cstr(&text), stderr);
        if (resp->status == 404 && c->hint_404 && strstr(buf_cstr(&text), ": no such path: "))
            cli_note(c, "%s", c->hint_404);
        buf_release(&text);
        if (c->json) {
            json_t *p = jsonx_loadb(buf_cstr(&resp->body), resp->body.len, 32, NULL);
            if (!json_is_object(p)) {
                json_decref(p);
                p = json_pack("{s:s,s:s,s:I}", "type", "about:blank", "title", "HTTP error",
                              "status", (json_int_t)resp->status);
            }
            cli_print_json(stdout, p);
            json_decref(p);
        }
        return CLI_API;
    }
    if (resp->body.len == 0)
        return 0;
    struct err err;
    err_init(&err);
    *doc = jsonx_loadb(buf_cstr(&resp->body), resp->body.len, 128, &err);
    int rc = *doc ? 0 : cli_fail(c, CLI_API, "the daemon's answer is not JSON: %s", err.msg);
    err_release(&err);
    return rc;
}

int cli_get(struct cli *c, const char *path, json_t **doc)
{
    struct httpc_request rq = { .url = path, .headers = cli_accept_json, .retry = true };
    struct httpc_response resp;
    httpc_response_init(&resp);
    int rc = cli_send(c, &rq, &resp);
    if (rc == 0)
        rc = cli_answer(c, &resp, doc);
    httpc_response_release(&resp);
    return rc;
}

void cli_job_path(struct buf *out, const char *id, const char *suffix)
{
    buf_reset(out);
    buf_puts(out, "/v1/jobs/");
    httpc_escape(out, id);
    buf_puts(out, suffix);
}

void cli_query(struct buf *out, const char *name, const char *value)
{
    if (!value)
        return;
    buf_printf(out, "%c%s=", strchr(buf_cstr(out), '?') ? '&' : '?', name);
    httpc_escape(out, value);
}

json_t *cli_lookup(const json_t *v, const char *path)
{
    char seg[64];
    while (v && *path) {
        json_t *whole = json_is_object(v) ? json_object_get(v, path) : NULL;
        if (whole) /* a key with dots in it, e.g. nvidia.com/gpu */
            return whole;
        size_t n = strcspn(path, ".");
        snprintf(seg, sizeof(seg), "%.*s", (int)n, path);
        v = json_is_object(v) ? json_object_get(v, seg) : NULL;
        path += n + (path[n] == '.');
    }
    return (json_t *)v;
}

static void list_cell(struct buf *out, const json_t *v)
{
    size_t i;
    json_t *e;
    bool strings = true;
    json_array_foreach(v, i, e) strings &= json_is_string(e) || json_is_integer(e);
    if (!strings || json_array_size(v) > 8) {
        buf_printf(out, "%zu", json_array_size(v));
        return;
    }
    json_array_foreach(v, i, e)
    {
        if (i)
            buf_putc(out, ',');
        if (json_is_string(e))
            buf_puts(out, json_string_value(e));
        else
            buf_printf(out, "%lld", (long long)json_integer_value(e));
    }
}

void cli_cell(struct buf *out, const json_t *item, const char *paths, char how, int64_t now)
{
    const json_t *v = NULL;
    char path[96];
    for (const char *p = paths; *p && (!v || json_is_null(v));) {
        size_t n = strcspn(p, "|");
        snprintf(path, sizeof(path), "%.*s", (int)n, p);
        v = cli_lookup(item, path);
        p += n + (p[n] == '|');
    }
    if (!v || json_is_null(v) || (json_is_string(v) && !*json_string_value(v)))
        buf_putc(out, '-');
    else if (how == 'a' && json_is_string(v))
        cli_reltime_str(out, json_string_value(v), now);
    else if (json_is_array(v))
        list_cell(out, v);
    else if (json_is_object(v) && how == 'l')
        buf_printf(out, "%zu", json_object_size(v));
    else if (json_is_boolean(v))
        buf_puts(out, json_is_true(v) ? "yes" : "no");
    else if (json_is_string(v))
        buf_puts(out, json_string_value(v));
    else if (json_is_integer(v))
        buf_printf(out, "%lld", (long long)json_integer_value(v));
    else if (json_is_real(v))
        buf_printf(out, "%g", json_real_value(v));
    else
        jsonx_dump(out, v);
}
