/*
 * workers: what the ranks' trainyard-worker reports (OpenAPI tag "workers"; docs/worker.md,
 * "Daemon contract"): heartbeats with the metrics queued since the last one, and the preflight
 * report. Both need the job's worker token (or an admin's). The handler validates, stores what
 * is the store's (metric points, the preflight event, the node mark of a failed preflight) and
 * hands the report to the daemon (api->daemon.rank_report), which records liveness and fails a
 * rank whose preflight failed.
 */
#include <math.h>

#include "api/handlers.h"
#include "api/job_json.h"
#include "core/clock.h"
#include "core/jsonx.h"
#include "core/parse.h"
#include "core/xalloc.h"
#include "store/jobs.h"
#include "store/metrics.h"
#include "store/nodes.h"

#define HEARTBEAT_MAX_METRICS 1000

/* The job and rank of the path; NULL with the response set. An ended job takes no reports. */
static struct job *target(struct request *req, struct response *res, int *rank)
{
    struct job *j = job_from_path(req, res);
    if (!j)
        return NULL;
    if (parse_int(req->params[1], 0, j->nranks - 1, rank) < 0) {
        problem(req, res, ERR_NOT_FOUND, "job %s has no rank %s (ranks 0 to %d)", j->id,
                req->params[1], j->nranks - 1);
    } else if (jobstate_terminal(j->state)) {
        problem(req, res, ERR_CONFLICT, "the job already ended (%s)", jobstate_name(j->state));
    } else {
        return j;
    }
    job_free(j);
    return NULL;
}

static const char *check_metric(const json_t *m)
{
    const char *name = jsonx_str(m, "name");
    json_t *v = json_object_get(m, "value");
    if (!json_is_object(m))
        return "must be an object";
    if (!name || !*name || strlen(name) >= METRIC_NAME_MAX)
        return "name must be a string of 1 to 63 bytes";
    for (const char *p = name; *p; p++)
        if ((unsigned char)*p < 0x21 || (unsigned char)*p > 0x7e)
            return "name must be printable ASCII without spaces";
    if (!json_is_number(v) && !json_is_null(v))
        return "value must be a number (or null for NaN)";
    json_t *step = json_object_get(m, "step");
    if (step && !json_is_integer(step) && !json_is_null(step))
        return "step must be an integer";
    const char *t = jsonx_str(m, "time");
    int64_t ns;
    if (json_object_get(m, "time") && (!t || clock_parse(t, &ns) < 0))
        return "time must be an RFC 3339 time";
    return NULL;
}

/* Validates the heartbeat; fills points (names borrowed from body). -1 with err. */
static int heartbeat_points(const json_t *body, int rank, struct metric_point *p, size_t *n,
                            struct err *err)
{
    json_t *metrics = json_object_get(body, "metrics");
    if (!json_is_object(body))
        return err_field(err, "/", "the heartbeat must be a JSON object");
    if (metrics && !json_is_array(metrics))
        return err_field(err, "/metrics", "must be an array");
    if (json_array_size(metrics) > HEARTBEAT_MAX_METRICS)
        return err_field(err, "/metrics", "must have at most %d entries", HEARTBEAT_MAX_METRICS);
    static const char *const ints[] = { "step", "dropped", "exit_code", "signal" };
    for (size_t k = 0; k < sizeof(ints) / sizeof(ints[0]); k++) {
        json_t *v = json_object_get(body, ints[k]);
        char ptr[32];
        snprintf(ptr, sizeof(ptr), "/%s", ints[k]);
        if (v && !json_is_integer(v))
            err_field(err, ptr, "must be an integer");
    }
    int64_t now = clock_now_ns();
    size_t i;
    json_t *m;
    json_array_foreach(metrics, i, m)
    {
        const char *why = check_metric(m);
        if (why) {
            char ptr[32];
            snprintf(ptr, sizeof(ptr), "/metrics/%zu", i);
            err_field(err, ptr, "%s", why);
            continue;
        }
        int64_t t = now;
        if (jsonx_str(m, "time"))
            clock_parse(jsonx_str(m, "time"), &t);
        json_t *v = json_object_get(m, "value");
        p[(*n)++] = (struct metric_point){ .name = jsonx_str(m, "name"),
                                           .rank = rank,
                                           .step = jsonx_int(m, "step", -1),
                                           .value = json_is_null(v) ? NAN : json_number_value(v),
                                           .time = t };
    }
    return err_is_set(err) ? -1 : 0;
}

void ranks_heartbeat(struct request *req, struct response *res)
{
    int rank;
    struct job *j = target(req, res, &rank);
    if (!j)
        return;
    json_t *body = request_body_doc(req, res);
    struct metric_point *p = NULL;
    struct err err;
    err_init(&err);
    if (!body)
        goto out;
    p = xcalloc(json_array_size(json_object_get(body, "metrics")) + 1, sizeof(*p));
    size_t n = 0;
    if (heartbeat_points(body, rank, p, &n, &err) < 0 ||
        store_metrics_append(req->api->store, j->pk, p, n, &err) < 0) {
        problem_respond(req, res, &err);
        goto out;
    }
    if (req->api->daemon.rank_report)
        req->api->daemon.rank_report(req->api->daemon.ctx, j->pk, j->attempt, rank, "heartbeat",
                                     body);
    response_json_new(res, 200, json_pack("{s:i}", "accepted", (int)n));
out:
    err_release(&err);
    free(p);
    json_decref(body);
    job_free(j);
}

/* The node the rank runs on, as the executor named it ("" when not placed yet). */
static void rank_node(struct request *req, const struct job *j, int rank, char *out, size_t cap)
{
    struct rank *ranks = NULL;
    size_t n = 0;
    out[0] = '\0';
    if (store_ranks_get(req->api->store, j->pk, &ranks, &n, NULL) == 0)
        for (size_t i = 0; i < n; i++)
            if (ranks[i].rank == rank)
                snprintf(out, cap, "%s", ranks[i].node);
    ranks_free(ranks, n);
}

/* "2 failed of 11: container.shm, gpu.0.memory" for the event and the node mark. */
static void preflight_text(const json_t *report, char *out, size_t cap)
{
    size_t i, used = 0, failed = 0;
    json_t *c, *checks = json_object_get(report, "checks");
    char names[256] = "";
    json_array_foreach(checks, i, c)
    {
        const char *st = jsonx_str(c, "status"), *name = jsonx_str(c, "name");
        if (!st || strcmp(st, "fail") != 0)
            continue;
        failed++;
        int w = snprintf(names + used, sizeof(names) - used, "%s%s", used ? ", " : "",
                         name ? name : "?");
        if (w > 0 && (size_t)w < sizeof(names) - used)
            used += (size_t)w;
    }
    if (failed)
        snprintf(out, cap, "%zu of %zu checks failed: %s", failed, json_array_size(checks), names);
    else
        snprintf(out, cap, "%zu checks passed", json_array_size(checks));
}

/* The report comes from inside the job (its worker token): evidence, which marks the node for
 * every job only when the job is an admin's or jobs of several owners agree (store/nodes.h). */
static void mark_node(struct request *req, const struct job *j, const char *node, const char *text)
{
    struct node_evidence e = { .node = node,
                               .job_id = j->id,
                               .owner_id = j->owner_id,
                               .owner = j->owner,
                               .reason = "PreflightFailed",
                               .message = text,
                               .source = "preflight" };
    store_node_evidence(req->api->store, &e, NULL, NULL);
}

void ranks_preflight(struct request *req, struct response *res)
{
    int rank;
    struct job *j = target(req, res, &rank);
    if (!j)
        return;
    json_t *body = request_body_doc(req, res);
    if (!body)
        goto out;
    json_t *ok = json_object_get(body, "ok");
    if (!json_is_object(body) || !json_is_boolean(ok) ||
        !json_is_array(json_object_get(body, "checks"))) {
        problem(req, res, ERR_VALIDATION,
                "a preflight report is an object with \"ok\" (boolean) and \"checks\" (array)");
        goto out;
    }
    char node[128], text[384];
    rank_node(req, j, rank, node, sizeof(node));
    if (!node[0] && jsonx_str(body, "hostname"))
        snprintf(node, sizeof(node), "%s", jsonx_str(body, "hostname"));
    preflight_text(body, text, sizeof(text));
    struct job_event e = { .type = "preflight",
                           .reason = json_is_true(ok) ? "PreflightPassed" : "PreflightFailed",
                           .message = text,
                           .rank = rank };
    struct job_update u = { .pk = j->pk, .events = &e, .nevents = 1 };
    store_job_update(req->api->store, &u, NULL);
    bool marked = !json_is_true(ok) && node[0];
    if (marked)
        mark_node(req, j, node, text);
    if (req->api->daemon.rank_report)
        req->api->daemon.rank_report(req->api->daemon.ctx, j->pk, j->attempt, rank, "preflight",
                                     body);
    json_t *o = json_pack("{s:b,s:b}", "ok", json_is_true(ok), "node_marked", marked);
    jsonx_set_str(o, "node", node[0] ? node : NULL);
    response_json_new(res, 200, o);
out:
    json_decref(body);
    job_free(j);
}
