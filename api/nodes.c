/*
 * nodes: the cluster's nodes and trainyard's marks on them (OpenAPI tag "nodes"). The
 * Kubernetes executor keeps the nodes from a watch: GET /v1/nodes hands out its latest
 * snapshot (api->daemon.nodes), never waiting on the API server, with each node's mark from the
 * store added, and the marked nodes it does not list (so that marks are listed everywhere).
 * Marks (store/nodes.h): the daemon marks a node `suspect` after a failed preflight or a
 * hardware finding (Xid, ECC); an admin can mark a node `suspect` or `bad` and remove marks.
 * Executors avoid marked nodes when they place ranks.
 */
#include "api/handlers.h"
#include "core/jsonx.h"
#include "job/names.h"
#include "core/xalloc.h"
#include "store/nodes.h"
#include "store/tokens.h"

static json_t *node_mark_json(const struct node_mark *m)
{
    json_t *o = json_pack("{s:s,s:s,s:s,s:s,s:s}", "node", m->name, "state", m->state, "reason",
                          m->reason, "message", m->message, "source", m->source);
    jsonx_set_str(o, "job_id", m->job_id[0] ? m->job_id : NULL);
    jsonx_set_str(o, "created_by", m->created_by[0] ? m->created_by : NULL);
    jsonx_set_time(o, "created_at", m->created_at);
    jsonx_set_time(o, "updated_at", m->updated_at);
    return o;
}

static int by_name(const void *a, const void *b)
{
    const char *x = jsonx_str(*(json_t *const *)a, "name"),
               *y = jsonx_str(*(json_t *const *)b, "name");
    return strcmp(x ? x : "", y ? y : "");
}

/* Sorts the array by "name" in place. */
static void sort_by_name(json_t *items)
{
    size_t n = json_array_size(items);
    json_t **v = xcalloc(n ? n : 1, sizeof(*v));
    for (size_t i = 0; i < n; i++)
        v[i] = json_incref(json_array_get(items, i));
    qsort(v, n, sizeof(*v), by_name);
    json_array_clear(items);
    for (size_t i = 0; i < n; i++)
        json_array_append_new(items, v[i]);
    free(v);
}

/* Adds each listed node's mark ("marked", "mark"), and lists the marked nodes the executor
 * does not (no Kubernetes executor, or a node that left the cluster) with their mark only. */
static int add_marks(struct store *st, json_t *items, struct err *err)
{
    struct node_mark **marks = NULL;
    size_t n = 0;
    if (store_node_marks_list(st, &marks, &n, err) < 0)
        return -1;
    bool *seen = xcalloc(n ? n : 1, sizeof(*seen));
    size_t i;
    json_t *node;
    json_array_foreach(items, i, node)
    {
        const char *name = jsonx_str(node, "name");
        size_t k = 0;
        while (name && k < n && strcmp(marks[k]->name, name) != 0)
            k++;
        bool hit = name && k < n;
        if (hit)
            seen[k] = true;
        json_object_set_new(node, "marked", json_boolean(hit));
        json_object_set_new(node, "mark", hit ? node_mark_json(marks[k]) : json_null());
    }
    for (size_t k = 0; k < n; k++)
        if (!seen[k])
            json_array_append_new(items,
                                  json_pack("{s:s,s:b,s:o,s:[]}", "name", marks[k]->name, "marked",
                                            1, "mark", node_mark_json(marks[k]), "jobs"));
    sort_by_name(items);
    free(seen);
    node_marks_free(marks, n);
    return 0;
}

void nodes_list(struct request *req, struct response *res)
{
    struct err err;
    err_init(&err);
    json_t *doc = req->api->daemon.nodes ? req->api->daemon.nodes(req->api->daemon.ctx, &err)
                                         : json_pack("{s:[]}", "items");
    if (doc && add_marks(req->api->store, json_object_get(doc, "items"), &err) == 0)
        response_json_new(res, 200, json_incref(doc));
    else
        problem_respond(req, res, &err);
    json_decref(doc);
    err_release(&err);
}

static int check_name(struct request *req, struct response *res)
{
    const char *why = names_dns1123_subdomain(req->params[0]);
    if (why) {
        problem(req, res, ERR_INVALID, "node name %s", why);
        return -1;
    }
    return 0;
}

static void respond_mark(struct request *req, struct response *res, int status)
{
    struct err err;
    err_init(&err);
    struct node_mark *m = store_node_mark_get(req->api->store, req->params[0], &err);
    if (m)
        response_json_new(res, status, node_mark_json(m));
    else
        problem_respond(req, res, &err);
    node_mark_free(m);
    err_release(&err);
}

void nodes_get_mark(struct request *req, struct response *res)
{
    if (check_name(req, res) == 0)
        respond_mark(req, res, 200);
}

static void audit(struct request *req, const char *action)
{
    char target[300];
    snprintf(target, sizeof(target), "node/%s", req->params[0]);
    struct audit_entry e = {
        .actor = req->who.name, .action = action, .target = target, .request_id = req->request_id
    };
    store_audit_add(req->api->store, &e, NULL);
}

void nodes_mark(struct request *req, struct response *res)
{
    if (check_name(req, res) < 0)
        return;
    json_t *body = request_body_doc(req, res);
    if (!body)
        return;
    const char *state = jsonx_str(body, "state"), *why = jsonx_str(body, "reason");
    const char *msg = jsonx_str(body, "message");
    struct err err;
    err_init(&err);
    if (!state || (strcmp(state, "suspect") != 0 && strcmp(state, "bad") != 0))
        err_field(&err, "/state", "must be \"suspect\" or \"bad\"");
    if (!why || !*why || strlen(why) > 128)
        err_field(&err, "/reason", "is required: 1 to 128 characters");
    if (json_object_get(body, "message") && (!msg || strlen(msg) > 1024))
        err_field(&err, "/message", "must be a string of at most 1024 characters");
    struct node_mark_new m = { .name = req->params[0],
                               .state = state,
                               .reason = why,
                               .message = msg,
                               .source = "admin",
                               .created_by = req->who.name };
    if (!err_is_set(&err) && store_node_mark(req->api->store, &m, &err) == 0) {
        audit(req, "node.mark");
        respond_mark(req, res, 200);
    } else {
        problem_respond(req, res, &err);
    }
    err_release(&err);
    json_decref(body);
}

void nodes_unmark(struct request *req, struct response *res)
{
    if (check_name(req, res) < 0)
        return;
    struct err err;
    err_init(&err);
    if (store_node_unmark(req->api->store, req->params[0], &err) == 0) {
        audit(req, "node.unmark");
        res->status = 204;
    } else {
        problem_respond(req, res, &err);
    }
    err_release(&err);
}
