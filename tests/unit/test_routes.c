/*
 * The route table (api/routes.c) and the contract (openapi/openapi.yaml) must say the same:
 * every route is documented with its operationId and scope, and every documented operation is
 * routed. A new route without a scope or without documentation fails here.
 */
#include "tests/unit/check.h"

#include <strings.h>

#include "api/routes.h"
#include "core/jsonx.h"
#include "core/yamljson.h"

static const char *method_key(enum http_method m)
{
    static const char *const keys[] = {
        "get", "head", "post", "put", "patch", "delete", "options"
    };
    return keys[m];
}

static void routes_are_documented(json_t *paths)
{
    for (size_t i = 0; i < routes_count; i++) {
        const struct route *r = &routes[i];
        json_t *op = json_object_get(json_object_get(paths, r->pattern), method_key(r->method));
        if (!op) {
            fprintf(stderr, "undocumented route: %s %s\n", http_method_name(r->method), r->pattern);
            CHECK(op != NULL);
            continue;
        }
        CHECK_STR(jsonx_str(op, "operationId"), r->operation_id);
        CHECK_STR(jsonx_str(op, "x-scope"), scope_name(r->scope));
    }
}

static void documented_operations_are_routed(json_t *paths)
{
    const char *path;
    json_t *item;
    json_object_foreach(paths, path, item)
    {
        const char *method;
        json_t *op;
        json_object_foreach(item, method, op)
        {
            if (strcmp(method, "parameters") == 0)
                continue;
            bool found = false;
            for (size_t i = 0; i < routes_count && !found; i++)
                found = strcmp(routes[i].pattern, path) == 0 &&
                        strcasecmp(http_method_name(routes[i].method), method) == 0;
            if (!found)
                fprintf(stderr, "documented but not routed: %s %s\n", method, path);
            CHECK(found);
        }
    }
}

static void operation_ids_are_unique(void)
{
    for (size_t i = 0; i < routes_count; i++)
        for (size_t k = i + 1; k < routes_count; k++)
            CHECK(strcmp(routes[i].operation_id, routes[k].operation_id) != 0);
}

static void matching(void)
{
    const char *params[4];
    size_t n;
    char buf[512];
    unsigned allowed;
    const struct route *r = routes_match(HTTP_GET, "/v1/jobs/abc/logs", params, &n, buf, &allowed);
    CHECK(r != NULL && strcmp(r->operation_id, "jobs_logs") == 0);
    CHECK_INT(n, 1);
    CHECK_STR(params[0], "abc");
    CHECK(routes_match(HTTP_PUT, "/v1/jobs/abc", params, &n, buf, &allowed) == NULL);
    CHECK(allowed & (1u << HTTP_GET));
    CHECK(allowed & (1u << HTTP_DELETE));
    CHECK(routes_match(HTTP_GET, "/v1/jobs//logs", params, &n, buf, &allowed) == NULL);
    CHECK(routes_match(HTTP_GET, "/nope", params, &n, buf, &allowed) == NULL);
    CHECK_INT(allowed, 0);
    r = routes_match(HTTP_HEAD, "/healthz", params, &n, buf, &allowed);
    CHECK(r != NULL);
}

int main(void)
{
    struct err err;
    err_init(&err);
    json_t *doc = yamljson_load_file("../../openapi/openapi.yaml", 1 << 22, &err);
    if (!doc)
        fprintf(stderr, "%s\n", err.msg);
    CHECK(doc != NULL);
    json_t *paths = json_object_get(doc, "paths");
    CHECK(json_is_object(paths));
    routes_are_documented(paths);
    documented_operations_are_routed(paths);
    operation_ids_are_unique();
    matching();
    json_decref(doc);
    err_release(&err);
    return check_done();
}
