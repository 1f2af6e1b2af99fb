/*
 * response: building responses and problem+json errors; the one table mapping error codes to
 * HTTP statuses. Handlers never write status numbers for errors themselves.
 */
#include <stdarg.h>

#include "api/api.h"
#include "core/jsonx.h"
#include "core/log.h"
#include "core/xalloc.h"

static const struct {
    int status;
    const char *title;
} statuses[] = {
    [ERR_NONE] = { 500, "Internal Server Error" },
    [ERR_INVALID] = { 400, "Bad Request" },
    [ERR_VALIDATION] = { 422, "Unprocessable Content" },
    [ERR_UNAUTHORIZED] = { 401, "Unauthorized" },
    [ERR_FORBIDDEN] = { 403, "Forbidden" },
    [ERR_NOT_FOUND] = { 404, "Not Found" },
    [ERR_METHOD] = { 405, "Method Not Allowed" },
    [ERR_CONFLICT] = { 409, "Conflict" },
    [ERR_GONE] = { 410, "Gone" },
    [ERR_TOO_LARGE] = { 413, "Content Too Large" },
    [ERR_UNSUPPORTED] = { 415, "Unsupported Media Type" },
    [ERR_RATE_LIMITED] = { 429, "Too Many Requests" },
    [ERR_UNAVAILABLE] = { 503, "Service Unavailable" },
    [ERR_TIMEOUT] = { 504, "Gateway Timeout" },
    [ERR_UPSTREAM] = { 502, "Bad Gateway" },
    [ERR_IO] = { 500, "Internal Server Error" },
    [ERR_INTERNAL] = { 500, "Internal Server Error" },
};

int err_http_status(enum err_code code)
{
    if ((unsigned)code >= sizeof(statuses) / sizeof(statuses[0]))
        return 500;
    return statuses[code].status;
}

void stream_wake(struct stream *s)
{
    if (s && s->wake)
        s->wake(s->http_ctx);
}

const char *request_header(struct request *req, const char *name)
{
    return req->header ? req->header(req, name) : NULL;
}

const char *request_query(struct request *req, const char *name)
{
    return req->query ? req->query(req, name) : NULL;
}

void request_complete(struct request *req)
{
    if (req->complete)
        req->complete(req);
}

/* Browsers must take a body for what its Content-Type says: a log line or a label holding
 * HTML is data, never a page. Added once per response. */
static void nosniff(struct response *res)
{
    for (size_t i = 0; i < res->nheaders; i++)
        if (strcmp(res->headers[i].name, "X-Content-Type-Options") == 0)
            return;
    response_header(res, "X-Content-Type-Options", "nosniff");
}

struct buf *response_json_body(struct response *res, int status)
{
    nosniff(res);
    res->status = status;
    res->content_type = "application/json";
    buf_reset(&res->body);
    buf_reserve(&res->body, 4096); /* jansson writes token by token: grow once, not per doubling */
    return &res->body;
}

void response_json(struct response *res, int status, const json_t *body)
{
    struct buf *out = response_json_body(res, status);
    jsonx_dump(out, body);
    buf_putc(out, '\n');
}

void response_json_new(struct response *res, int status, json_t *body)
{
    response_json(res, status, body);
    json_decref(body);
}

void response_header(struct response *res, const char *name, const char *value)
{
    if (res->nheaders >= RESPONSE_MAX_HEADERS)
        return;
    res->headers[res->nheaders].name = xstrdup(name);
    res->headers[res->nheaders].value = xstrdup(value);
    res->nheaders++;
}

void response_release(struct response *res)
{
    buf_release(&res->body);
    for (size_t i = 0; i < res->nheaders; i++) {
        free(res->headers[i].name);
        free(res->headers[i].value);
    }
    res->nheaders = 0;
    if (res->stream && res->stream->free)
        res->stream->free(res->stream);
    res->stream = NULL;
}

void problem_respond(struct request *req, struct response *res, const struct err *err)
{
    problem_respond_extra(req, res, err, NULL);
}

void problem_respond_extra(struct request *req, struct response *res, const struct err *err,
                           json_t *extra)
{
    enum err_code code = err && err->code != ERR_NONE ? err->code : ERR_INTERNAL;
    int status = err_http_status(code);
    json_t *p = json_object();
    char type[96];
    snprintf(type, sizeof(type), "urn:trainyard:problem:%s", err_code_name(code));
    json_object_set_new(p, "type", json_string(type));
    json_object_set_new(p, "title", json_string(statuses[code].title));
    json_object_set_new(p, "status", json_integer(status));
    /* Internal errors are logged with the request id; the client sees no internals. */
    bool internal = code == ERR_IO || code == ERR_INTERNAL;
    const char *detail = err && err->msg[0] ? err->msg : statuses[code].title;
    json_object_set_new(p, "detail",
                        json_string(internal ? "internal error; see the daemon log" : detail));
    if (req) {
        json_object_set_new(p, "instance", json_string(req->path ? req->path : ""));
        json_object_set_new(p, "request_id", json_string(req->request_id));
    }
    if (err && err->nfields) {
        json_t *errors = json_array();
        for (size_t i = 0; i < err->nfields; i++)
            json_array_append_new(errors, json_pack("{s:s,s:s}", "pointer", err->fields[i].pointer,
                                                    "detail", err->fields[i].message));
        json_object_set_new(p, "errors", errors);
    }
    if (err && err->reason[0])
        json_object_set_new(p, "reason", json_string(err->reason));
    if (extra) {
        json_object_update(p, extra);
        json_decref(extra);
    }
    if (internal || status >= 500)
        log_error("request %s %s: %s", req ? req->request_id : "-", req ? req->path : "-", detail);
    response_json_new(res, status, p);
    res->content_type = "application/problem+json";
    if (err && err->retry_after > 0) {
        char secs[24];
        snprintf(secs, sizeof(secs), "%d", err->retry_after);
        response_header(res, "Retry-After", secs);
    }
}

void problem_respond_limit(struct request *req, struct response *res, const struct err *err,
                           const char *limit, long long max)
{
    struct err copy = *err;
    copy.reason[0] = '\0'; /* the core's name for the limit: "limit" says it in the API's terms */
    problem_respond_extra(req, res, &copy, json_pack("{s:s,s:I}", "limit", limit, "max", max));
}

void problem_limit(struct request *req, struct response *res, enum err_code code, const char *limit,
                   long long max, const char *fmt, ...)
{
    struct err err;
    err_init(&err);
    char msg[ERR_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    err_set(&err, code, "%s", msg);
    problem_respond_limit(req, res, &err, limit, max);
    err_release(&err);
}

void problem(struct request *req, struct response *res, enum err_code code, const char *fmt, ...)
{
    struct err err;
    err_init(&err);
    char msg[ERR_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    err_set(&err, code, "%s", msg);
    problem_respond(req, res, &err);
    err_release(&err);
}
