/*
 * dispatch: the path every request takes: request id, route match (404/405), authentication and
 * scope (401/403), rate limit (429), then the handler. The first part (api_admit) needs nothing
 * but the request's headers and target, so the HTTP layer runs it before it reads a body byte:
 * a request without a valid token is answered before its body costs memory.
 */
#include "api/apimetrics.h"
#include "api/auth.h"
#include "api/ratelimit.h"
#include "api/routes.h"
#include "core/buf.h"
#include "core/crypto.h"

static void method_not_allowed(struct request *req, struct response *res, unsigned allowed)
{
    struct buf allow = BUF_INIT;
    for (int m = 0; m < HTTP_METHOD_COUNT; m++)
        if (allowed & (1u << m))
            buf_printf(&allow, "%s%s", allow.len ? ", " : "",
                       http_method_name((enum http_method)m));
    problem(req, res, ERR_METHOD, "%s is not allowed on %s; allowed: %s",
            http_method_name(req->method), req->path, buf_cstr(&allow));
    response_header(res, "Allow", buf_cstr(&allow));
    buf_release(&allow);
}

/* A request id: unique enough to find a request in the logs, not a secret, so it comes from a
 * per-thread splitmix64 seeded once from the kernel rather than a getrandom() per request. */
static void new_request_id(char *out, size_t nchars)
{
    static const char alphabet[] = "abcdefghijklmnopqrstuvwxyz0123456789";
    static __thread uint64_t state;
    if (state == 0)
        crypto_random(&state, sizeof(state));
    uint64_t z = 0;
    for (size_t i = 0; i < nchars; i++) {
        if (i % 8 == 0) {
            z = (state += 0x9e3779b97f4a7c15ULL);
            z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
            z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
            z ^= z >> 31;
        }
        out[i] = i == 0 ? alphabet[(z & 0xff) % 26] : alphabet[(z & 0xff) % 36];
        z >>= 8;
    }
    out[nchars] = '\0';
}

void api_request_begin(struct request *req)
{
    if (!req->request_id[0])
        new_request_id(req->request_id, sizeof(req->request_id) - 1);
}

bool api_admit(struct request *req, struct response *res)
{
    api_request_begin(req);
    static __thread char param_buf[512];
    unsigned allowed = 0;
    const struct route *route =
        routes_match(req->method, req->path, req->params, &req->nparams, param_buf, &allowed);
    if (!route) {
        if (allowed)
            method_not_allowed(req, res, allowed);
        else
            problem(req, res, ERR_NOT_FOUND, "no such path: %s", req->path);
        return false;
    }
    req->route = route;
    struct err err;
    err_init(&err);
    if (auth_check(req, route, &err) < 0) {
        problem_respond(req, res, &err);
        if (err.code == ERR_UNAUTHORIZED) {
            response_header(res, "WWW-Authenticate", "Bearer realm=\"trainyard\"");
            apimetrics_unauthenticated(route, 401);
        }
        err_release(&err);
        return false;
    }
    if (ratelimit_take(req, &err) < 0) {
        problem_respond(req, res, &err);
        err_release(&err);
        return false;
    }
    return true;
}

void api_run(struct request *req, struct response *res)
{
    const struct route *route = req->route;
    route->handler(req, res);
}

bool api_anonymous_body(const struct request *req)
{
    const struct route *route = req->route;
    return route && (route->scope == SCOPE_HOOK || route->scope == SCOPE_PUBLIC);
}

void api_handle(struct request *req, struct response *res)
{
    if (api_admit(req, res))
        api_run(req, res);
}
