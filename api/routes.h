/*
 * routes: the whole API in one table (routes.c). Dispatch, authentication scopes and the test
 * that keeps openapi/openapi.yaml equal to the routes all read this table.
 */
#ifndef TY_ROUTES_H
#define TY_ROUTES_H

#include "api/api.h"

typedef void (*handler_fn)(struct request *req, struct response *res);

struct route {
    enum http_method method;
    const char *pattern; /* "/v1/jobs/{id}"; a {name} matches one path segment */
    enum scope scope;
    const char *operation_id; /* the handler's name and the OpenAPI operationId */
    handler_fn handler;
};

extern const struct route routes[];
extern const size_t routes_count;

/* Finds the route for method and path, filling params (at most 4). When the path exists with
 * other methods, returns NULL and sets *allowed to a bit set of them (1 << method). */
const struct route *routes_match(enum http_method method, const char *path, const char **params,
                                 size_t *nparams, char param_buf[512], unsigned *allowed);

const char *http_method_name(enum http_method m);

#endif
