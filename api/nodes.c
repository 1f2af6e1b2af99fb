/*
 * nodes: the cluster's nodes (OpenAPI tag "nodes"). The Kubernetes executor keeps them from a
 * watch; the handler only hands out its latest snapshot (api->hooks.nodes), never waiting on
 * the API server.
 */
#include "api/handlers.h"

void nodes_list(struct request *req, struct response *res)
{
    struct err err;
    err_init(&err);
    json_t *doc = NULL;
    if (req->api->hooks.nodes)
        doc = req->api->hooks.nodes(req->api->hooks.ctx, &err);
    else
        err_set(&err, ERR_NOT_FOUND, "this daemon lists no nodes");
    if (doc)
        response_json_new(res, 200, doc);
    else
        problem_respond(req, res, &err);
    err_release(&err);
}
