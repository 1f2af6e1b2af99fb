/*
 * queues: the named queues (OpenAPI tag "queues"). An admin sets each queue's priority (higher
 * runs first) and GPU quota (the GPUs its running jobs may hold at once; none: unbounded); jobs
 * name their queue in the spec. GET lists every configured queue and the default one, with what
 * their jobs use and how many wait. The scheduler (server/control/scheduler.h) reads them on
 * every pass. Changes are audited by the store in the same transaction.
 */
#include "api/handlers.h"
#include "core/jsonx.h"
#include "job/names.h"
#include "store/queues.h"
#include "core/clock.h"

static json_t *queue_json(const struct queue_def *q)
{
    json_t *o = json_pack("{s:s,s:i,s:s}", "name", q->name, "priority", q->priority, "description",
                          q->description);
    json_object_set_new(o, "gpu_quota",
                        q->gpu_quota >= 0 ? json_integer(q->gpu_quota) : json_null());
    jsonx_set_str(o, "updated_by", q->updated_by[0] ? q->updated_by : NULL);
    jsonx_set_time(o, "created_at", q->created_at);
    jsonx_set_time(o, "updated_at", q->updated_at);
    return o;
}

/* Adds the queue's live counts from the usage rows (store_queue_usage). */
static void add_usage(json_t *o, const json_t *usage)
{
    const json_t *u = json_object_get(usage, jsonx_str(o, "name"));
    json_object_set_new(o, "running_jobs", json_integer(jsonx_int(u, "running_jobs", 0)));
    json_object_set_new(o, "waiting_jobs", json_integer(jsonx_int(u, "waiting_jobs", 0)));
    json_object_set_new(o, "gpus_used", json_integer(jsonx_int(u, "gpus_used", 0)));
}

void queues_list(struct request *req, struct response *res)
{
    struct queue_def *qs = NULL;
    size_t n = 0;
    struct err err;
    err_init(&err);
    json_t *usage = NULL;
    if (store_queues_list(req->api->store, &qs, &n, &err) < 0 ||
        !(usage = store_queue_usage(req->api->store, &err))) {
        problem_respond(req, res, &err);
        goto out;
    }
    json_t *items = json_array();
    struct queue_def def = { .name = "default",
                             .gpu_quota = -1,
                             .description = "jobs that "
                                            "name no queue",
                             .updated_by = "" };
    bool have_default = false;
    for (size_t i = 0; i < n; i++)
        have_default |= strcmp(qs[i].name, "default") == 0;
    if (!have_default)
        json_array_append_new(items, queue_json(&def));
    for (size_t i = 0; i < n; i++)
        json_array_append_new(items, queue_json(&qs[i]));
    size_t i;
    json_t *o;
    json_array_foreach(items, i, o) add_usage(o, usage);
    response_json_new(res, 200, json_pack("{s:o}", "items", items));
out:
    json_decref(usage);
    queues_free(qs, n);
    err_release(&err);
}

/* The body of PUT: priority, gpu_quota (null: none), description; every bad field listed. */
static int parse_queue(const json_t *body, struct queue_def *q, struct err *err)
{
    json_t *prio = json_object_get(body, "priority"), *quota = json_object_get(body, "gpu_quota");
    json_t *desc = json_object_get(body, "description");
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)body, key, v) if (strcmp(key, "priority") != 0 &&
                                                    strcmp(key, "gpu_quota") != 0 &&
                                                    strcmp(key, "description") != 0)
        err_field(err, "/", "unknown field '%.64s'", key);
    if (prio && !(json_is_integer(prio) && json_integer_value(prio) >= -1000 &&
                  json_integer_value(prio) <= 1000))
        err_field(err, "/priority", "must be an integer from -1000 to 1000");
    if (quota && !json_is_null(quota) &&
        !(json_is_integer(quota) && json_integer_value(quota) >= 0 &&
          json_integer_value(quota) <= 1000000))
        err_field(err, "/gpu_quota", "must be null (no quota) or an integer from 0 to 1000000");
    if (desc && !(json_is_string(desc) && json_string_length(desc) <= 1024))
        err_field(err, "/description", "must be a string of at most 1024 bytes");
    q->priority = prio ? (int)json_integer_value(prio) : 0;
    q->gpu_quota = quota && json_is_integer(quota) ? json_integer_value(quota) : -1;
    q->description = (char *)(desc ? json_string_value(desc) : "");
    return err_is_set(err) ? -1 : 0;
}

void queues_put(struct request *req, struct response *res)
{
    const char *name = req->params[0], *bad = names_dns1123_label(name);
    if (bad || strlen(name) > 63) {
        problem(req, res, ERR_INVALID, "queue name: %s", bad ? bad : "at most 63 characters");
        return;
    }
    json_t *body = request_body_doc(req, res);
    if (!body)
        return;
    struct err err;
    err_init(&err);
    struct queue_def q = { .name = (char *)name };
    if (!json_is_object(body))
        err_field(&err, "/", "must be an object");
    if (!err_is_set(&err) && parse_queue(body, &q, &err) == 0 &&
        store_queue_put(req->api->store, &q, req->who.name, req->request_id, &err) == 0) {
        q.updated_by = req->who.name;
        q.created_at = q.updated_at = clock_now_ns();
        response_json_new(res, 200, queue_json(&q));
        if (req->api->daemon.job_changed)
            req->api->daemon.job_changed(req->api->daemon.ctx, 0); /* a new order: a pass */
    } else {
        problem_respond(req, res, &err);
    }
    err_release(&err);
    json_decref(body);
}

void queues_delete(struct request *req, struct response *res)
{
    struct err err;
    err_init(&err);
    if (store_queue_delete(req->api->store, req->params[0], req->who.name, req->request_id, &err) ==
        0) {
        res->status = 204;
        if (req->api->daemon.job_changed)
            req->api->daemon.job_changed(req->api->daemon.ctx, 0);
    } else {
        problem_respond(req, res, &err);
    }
    err_release(&err);
}
