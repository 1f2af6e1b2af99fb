/* job_json: jobs written as JSON text straight into the answer. The 201, GET and list answers
 * are the daemon's hottest output: building a jansson tree per job and dumping it cost more than
 * writing the text. Key order and escaping are what jansson's compact dump of the same document
 * writes. Pure; thread-safe. */
#include "api/job_json.h"

#include "core/clock.h"
#include "core/jsonx.h"

/* ,"key": (the first member of an object is written with its brace by the caller) */
static void key(struct buf *out, const char *k)
{
    buf_putc(out, ',');
    jsonx_dump_string(out, k, strlen(k));
    buf_putc(out, ':');
}

static void put_str(struct buf *out, const char *k, const char *v)
{
    key(out, k);
    if (v)
        jsonx_dump_string(out, v, strlen(v));
    else
        buf_puts(out, "null");
}

/* An integer, or null when it is not set (below min). */
static void put_int(struct buf *out, const char *k, int64_t v, int64_t min)
{
    key(out, k);
    if (v >= min)
        buf_put_int(out, v);
    else
        buf_puts(out, "null");
}

static void put_time(struct buf *out, const char *k, int64_t ns)
{
    char ts[CLOCK_RFC3339_MAX];
    put_str(out, k, ns ? clock_format(ns, ts) : NULL);
}

static void put_doc(struct buf *out, const char *k, const json_t *v, const char *absent)
{
    key(out, k);
    if (v)
        jsonx_dump(out, v);
    else
        buf_puts(out, absent);
}

static const char *nonempty(const char *s)
{
    return s && s[0] ? s : NULL;
}

static void put_rank(struct buf *out, const struct rank *r)
{
    buf_puts(out, "{\"rank\":");
    buf_put_int(out, r->rank);
    put_str(out, "state", rankstate_name(r->state));
    put_int(out, "exit_code", r->exit_code, 0);
    put_int(out, "signal", r->signal, 1);
    put_int(out, "restarts", r->restarts, INT64_MIN);
    put_str(out, "node", nonempty(r->node));
    put_int(out, "pid", r->pid, 1);
    put_str(out, "pod", nonempty(r->pod));
    put_str(out, "reason", r->reason ? r->reason : "");
    put_str(out, "message", r->message ? r->message : "");
    put_time(out, "started_at", r->started_at);
    put_time(out, "finished_at", r->finished_at);
    buf_putc(out, '}');
}

static void put_links(struct buf *out, const char *id)
{
    static const char *const names[] = {
        "self", "logs", "events", "diagnosis", "metrics", "health"
    };
    key(out, "links");
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        buf_puts(out, i ? ",\"" : "{\"");
        buf_puts(out, names[i]);
        buf_puts(out, "\":\"/v1/jobs/");
        buf_puts(out, id); /* [a-z0-9]: nothing to escape */
        if (i) {
            buf_putc(out, '/');
            buf_puts(out, names[i]);
        }
        buf_putc(out, '"');
    }
    buf_putc(out, '}');
}

static bool suspended(const struct job *j)
{
    return j->desired && strcmp(j->desired, "hold") == 0;
}

/* The row's reason and message, or what the job's state says better: a running job that
 * stalled says so (its row still says "every rank is running"); a queued job resumed after
 * trainyard held it is no longer "Suspended" (resuming changes no state, so the row keeps it;
 * a job Kueue suspends has its own message and stays "Suspended"); a queued job waits for what
 * the scheduler said last. */
static void put_reason(struct buf *out, const struct job *j, const struct job_view *v)
{
    const char *reason = j->reason ? j->reason : "", *message = j->message ? j->message : "";
    if (j->state == JOB_RUNNING && v->stalled && v->stall_summary) {
        reason = "Stalled";
        message = v->stall_summary;
    } else if (v->wait) { /* why it waits, from the scheduler's last pass */
        reason = v->wait->reason;
        message = v->wait->message;
    } else if (j->state == JOB_QUEUED && !suspended(j) && strcmp(reason, "Suspended") == 0 &&
               strncmp(message, "held until", 10) == 0) { /* trainyard's hold, not Kueue's */
        reason = "Resumed";
        message = "resumed; waiting for free slots";
    }
    put_str(out, "reason", reason);
    put_str(out, "message", message);
}

/* A job that ended expects nothing more: no ETA; and one that succeeded has finished even when
 * its framework printed no closing summary. */
static void put_progress(struct buf *out, const struct job *j, const json_t *p)
{
    if (!json_is_object(p) || !jobstate_terminal(j->state)) {
        put_doc(out, "progress", p, "null");
        return;
    }
    json_t *c = json_copy((json_t *)p);
    bool ok = j->state == JOB_SUCCEEDED;
    json_object_set_new(c, "eta_seconds", ok ? json_integer(0) : json_null());
    if (ok)
        json_object_set_new(c, "finished", json_true());
    put_doc(out, "progress", c, "null");
    json_decref(c);
}

void job_json_write(struct buf *out, const struct job *j, const struct job_view *v)
{
    buf_puts(out, "{\"id\":");
    jsonx_dump_string(out, j->id, strlen(j->id));
    put_str(out, "name", j->name);
    put_str(out, "executor", j->executor);
    put_str(out, "state", jobstate_name(j->state));
    put_reason(out, j, v);
    put_str(out, "owner", j->owner ? j->owner : "");
    put_int(out, "priority", j->priority, INT64_MIN);
    put_str(out, "queue", nonempty(j->queue));
    put_int(out, "nranks", j->nranks, INT64_MIN);
    put_int(out, "restarts", j->attempt, INT64_MIN);
    key(out, "suspended");
    buf_puts(out, suspended(j) ? "true" : "false");
    key(out, "backfill");
    buf_puts(out, j->desired && strcmp(j->desired, "backfill") == 0 ? "true" : "false");
    put_int(out, "queue_position", v->wait ? v->wait->position : 0, 1);
    put_time(out, "created_at", j->created_at);
    put_time(out, "started_at", j->started_at);
    put_time(out, "finished_at", j->finished_at);
    put_time(out, "updated_at", j->updated_at);
    put_doc(out, "labels", v->labels, "{}");
    /* Stored as compact JSON by the controller (jsonx_dumps): copied as it is. */
    key(out, "first_failure");
    buf_puts(out, j->first_failure && j->first_failure[0] == '{' ? j->first_failure : "null");
    if (v->ranks) {
        key(out, "ranks");
        buf_putc(out, '[');
        for (size_t i = 0; i < v->nranks; i++) {
            if (i)
                buf_putc(out, ',');
            put_rank(out, &v->ranks[i]);
        }
        buf_putc(out, ']');
    }
    put_links(out, j->id);
    put_progress(out, j, v->progress);
    key(out, "stalled");
    buf_puts(out, v->stalled ? "true" : "false");
    if (v->usage) { /* usage: written by api/usage_job.c, copied as it is */
        key(out, "usage");
        buf_puts(out, v->usage);
    }
    key(out, v->spec_size ? "spec_size" : "spec");
    buf_puts(out, j->spec && j->spec[0] ? j->spec : "null");
    buf_putc(out, '}');
}

bool job_wait_get(struct api *api, const struct job *j, struct job_wait_view *w)
{
    if (j->state != JOB_QUEUED || !api->daemon.queue_status ||
        (j->desired && strcmp(j->desired, "hold") == 0))
        return false;
    return api->daemon.queue_status(api->daemon.ctx, j->pk, w->reason, sizeof(w->reason),
                                    w->message, sizeof(w->message), &w->position);
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
