/* job_json: rendering jobs and ranks as JSON. Pure; thread-safe. */
#include "api/job_json.h"

#include "server/core/jsonx.h"

json_t *rank_json(const struct rank *r)
{
    json_t *o = json_object();
    json_object_set_new(o, "rank", json_integer(r->rank));
    json_object_set_new(o, "state", json_string(rankstate_name(r->state)));
    json_object_set_new(o, "exit_code",
                        r->exit_code >= 0 ? json_integer(r->exit_code) : json_null());
    json_object_set_new(o, "signal", r->signal > 0 ? json_integer(r->signal) : json_null());
    json_object_set_new(o, "restarts", json_integer(r->restarts));
    jsonx_set_str(o, "node", r->node && r->node[0] ? r->node : NULL);
    json_object_set_new(o, "pid", r->pid > 0 ? json_integer(r->pid) : json_null());
    jsonx_set_str(o, "pod", r->pod && r->pod[0] ? r->pod : NULL);
    jsonx_set_str(o, "reason", r->reason ? r->reason : "");
    jsonx_set_str(o, "message", r->message ? r->message : "");
    jsonx_set_time(o, "started_at", r->started_at);
    jsonx_set_time(o, "finished_at", r->finished_at);
    return o;
}

static json_t *links(const char *id)
{
    char self[96], logs[112], events[112], diag[112], metrics[112], health[112];
    snprintf(self, sizeof(self), "/v1/jobs/%s", id);
    snprintf(logs, sizeof(logs), "/v1/jobs/%s/logs", id);
    snprintf(events, sizeof(events), "/v1/jobs/%s/events", id);
    snprintf(diag, sizeof(diag), "/v1/jobs/%s/diagnosis", id);
    snprintf(metrics, sizeof(metrics), "/v1/jobs/%s/metrics", id);
    snprintf(health, sizeof(health), "/v1/jobs/%s/health", id);
    return json_pack("{s:s,s:s,s:s,s:s,s:s,s:s}", "self", self, "logs", logs, "events", events,
                     "diagnosis", diag, "metrics", metrics, "health", health);
}

void job_json_progress(json_t *job, json_t *progress, bool stalled)
{
    json_object_set_new(job, "progress", progress ? progress : json_null());
    json_object_set_new(job, "stalled", json_boolean(stalled));
}

json_t *job_json_base(const struct job *j, json_t *labels, const struct rank *ranks, size_t nranks)
{
    json_t *o = json_object();
    json_object_set_new(o, "id", json_string(j->id));
    json_object_set_new(o, "name", json_string(j->name));
    json_object_set_new(o, "executor", json_string(j->executor));
    json_object_set_new(o, "state", json_string(jobstate_name(j->state)));
    json_object_set_new(o, "reason", json_string(j->reason ? j->reason : ""));
    json_object_set_new(o, "message", json_string(j->message ? j->message : ""));
    json_object_set_new(o, "owner", json_string(j->owner ? j->owner : ""));
    json_object_set_new(o, "priority", json_integer(j->priority));
    jsonx_set_str(o, "queue", j->queue && j->queue[0] ? j->queue : NULL);
    json_object_set_new(o, "nranks", json_integer(j->nranks));
    json_object_set_new(o, "restarts", json_integer(j->attempt));
    json_object_set_new(o, "suspended",
                        json_boolean(j->desired && strcmp(j->desired, "hold") == 0));
    jsonx_set_time(o, "created_at", j->created_at);
    jsonx_set_time(o, "started_at", j->started_at);
    jsonx_set_time(o, "finished_at", j->finished_at);
    jsonx_set_time(o, "updated_at", j->updated_at);
    json_object_set_new(o, "labels", labels ? json_incref(labels) : json_object());
    json_t *ff = j->first_failure ? json_loads(j->first_failure, 0, NULL) : NULL;
    json_object_set_new(o, "first_failure", ff ? ff : json_null());
    if (ranks) {
        json_t *arr = json_array();
        for (size_t i = 0; i < nranks; i++)
            json_array_append_new(arr, rank_json(&ranks[i]));
        json_object_set_new(o, "ranks", arr);
    }
    json_object_set_new(o, "links", links(j->id));
    return o;
}

void job_json_write(struct buf *out, const json_t *job, const char *spec_text)
{
    jsonx_dump(out, job);
    if (out->len == 0 || out->data[out->len - 1] != '}')
        return; /* not an object: nothing to splice into */
    out->len--;
    buf_puts(out, json_object_size(job) ? ",\"spec\":" : "\"spec\":");
    buf_puts(out, spec_text);
    buf_putc(out, '}');
}

struct job *job_from_path(struct request *req, struct response *res)
{
    struct err err;
    err_init(&err);
    struct job *j = store_job_get(req->api->store, req->params[0], &err);
    if (!j)
        problem_respond(req, res, &err);
    err_release(&err);
    return j;
}
