/*
 * dispatch: api_handle(), the path every request takes: request id, route match (404/405),
 * authentication and scope (401/403), rate limit (429), then the handler.
 */
#include "api/auth.h"
#include "api/ratelimit.h"
#include "api/routes.h"
#include "server/core/buf.h"
#include "server/core/crypto.h"

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

void api_handle(struct request *req, struct response *res)
{
    if (!req->request_id[0])
        crypto_random_id(req->request_id, sizeof(req->request_id) - 1);
    static __thread char param_buf[512];
    unsigned allowed = 0;
    const struct route *route =
        routes_match(req->method, req->path, req->params, &req->nparams, param_buf, &allowed);
    if (!route) {
        if (allowed)
            method_not_allowed(req, res, allowed);
        else
            problem(req, res, ERR_NOT_FOUND, "no such path: %s", req->path);
        return;
    }
    req->route = route;
    struct err err;
    err_init(&err);
    if (auth_check(req, route, &err) < 0) {
        problem_respond(req, res, &err);
        if (err.code == ERR_UNAUTHORIZED)
            response_header(res, "WWW-Authenticate", "Bearer realm=\"trainyard\"");
        err_release(&err);
        return;
    }
    if (ratelimit_take(req, &err) < 0) {
        problem_respond(req, res, &err);
        err_release(&err);
        return;
    }
    route->handler(req, res);
}
