/*
 * health: the routes of a job's health (OpenAPI tag "health"). Reads come from the store,
 * where the daemon's health registry saves the diagnosis of each attempt, its progress, stall
 * verdict and per-rank health (store/findings.h), and the metric series (store/metrics.h).
 * Workers report in with heartbeats and preflight reports: recorded here, then handed to the
 * daemon (api->daemon.rank_report), which acts on them in its own loops.
 */
#include <math.h>

#include "api/handlers.h"
#include "api/job_json.h"
#include "api/healthview.h"
#include "core/clock.h"
#include "core/jsonx.h"
#include "core/parse.h"
#include "core/xalloc.h"
#include "store/findings.h"
#include "store/jobs.h"
#include "store/metrics.h"
#include "store/nodes.h"

#define HEARTBEAT_MAX_METRICS 1000

struct unknown {
    const char *const *allowed;
    char bad[64];
};

static void check_param(void *ctx, const char *k, const char *v)
{
    (void)v;
    struct unknown *u = ctx;
    for (const char *const *a = u->allowed; *a; a++)
        if (strcmp(*a, k) == 0)
            return;
    if (!u->bad[0])
        snprintf(u->bad, sizeof(u->bad), "%s", k);
}

/* 400 when the query has a parameter not in allowed. */
static int known_params(struct request *req, struct response *res, const char *const *allowed)
{
    struct unknown u = { .allowed = allowed };
    if (req->query_each)
        req->query_each(req, check_param, &u);
    if (!u.bad[0])
        return 0;
    problem(req, res, ERR_INVALID, "unknown parameter '%s'", u.bad);
    return -1;
}

static int time_param(struct request *req, struct response *res, const char *name, int64_t *out)
{
    const char *t = request_query(req, name);
    *out = 0;
    if (t && clock_parse(t, out) < 0) {
        problem(req, res, ERR_INVALID, "parameter '%s' must be an RFC 3339 time", name);
        return -1;
    }
    return 0;
}

/* The diagnosis of an attempt; an attempt with nothing saved yet has none. */
static json_t *diagnosis_of(struct request *req, struct response *res, const struct job *j,
                            int attempt)
{
    struct err err;
    err_init(&err);
    json_t *d = store_diag_get(req->api->store, j->pk, attempt, &err);
    if (!d && err.code == ERR_NOT_FOUND && (attempt < 0 || attempt == j->attempt))
        d = json_pack("{s:i,s:n,s:[],s:i,s:n}", "attempt", attempt < 0 ? j->attempt : attempt,
                      "summary", "findings", "findings_dropped", 0, "decision");
    else if (!d)
        problem_respond(req, res, &err);
    err_release(&err);
    return d;
}

void jobs_diagnosis(struct request *req, struct response *res)
{
    static const char *const allowed[] = { "attempt", NULL };
    struct job *j = job_from_path(req, res);
    if (!j || known_params(req, res, allowed) < 0)
        goto out;
    int attempt = -1;
    const char *a = request_query(req, "attempt");
    if (a && parse_int(a, 0, 1000000, &attempt) < 0) {
        problem(req, res, ERR_INVALID, "parameter 'attempt' must be a non-negative integer");
        goto out;
    }
    json_t *d = diagnosis_of(req, res, j, attempt);
    if (!d)
        goto out;
    json_t *o = json_object();
    json_object_set_new(o, "job_id", json_string(j->id));
    json_object_set(o, "attempt", json_object_get(d, "attempt"));
    json_object_set(o, "summary", json_object_get(d, "summary"));
    json_object_set(o, "findings", json_object_get(d, "findings"));
    json_object_set(o, "findings_dropped", json_object_get(d, "findings_dropped"));
    json_object_set(o, "decision", json_object_get(d, "decision"));
    json_t *att = store_diag_attempts(req->api->store, j->pk, NULL);
    json_object_set_new(o, "attempts", att ? att : json_array());
    json_object_set(o, "updated_at",
                    json_object_get(d, "updated_at") ? json_object_get(d, "updated_at")
                                                     : json_null());
    json_decref(d);
    response_json_new(res, 200, o);
out:
    job_free(j);
}

void jobs_metrics(struct request *req, struct response *res)
{
    static const char *const allowed[] = { "name", "rank", "since", "until", "downsample", NULL };
    struct job *j = job_from_path(req, res);
    struct metric_query q = { .name = request_query(req, "name"), .rank = -1, .max_points = 1000 };
    const char *rank = request_query(req, "rank"), *down = request_query(req, "downsample");
    if (!j || known_params(req, res, allowed) < 0 || time_param(req, res, "since", &q.since) < 0 ||
        time_param(req, res, "until", &q.until) < 0)
        goto out;
    if (rank && parse_int(rank, 0, j->nranks - 1, &q.rank) < 0) {
        problem(req, res, ERR_INVALID, "parameter 'rank' must be a rank of the job (0 to %d)",
                j->nranks - 1);
        goto out;
    }
    if (down && parse_int(down, 1, 100000, &q.max_points) < 0) {
        problem(req, res, ERR_INVALID, "parameter 'downsample' must be from 1 to 100000");
        goto out;
    }
    struct err err;
    err_init(&err);
    json_t *o = store_metrics_query(req->api->store, j->pk, &q, &err);
    if (o) {
        json_object_set_new(o, "job_id", json_string(j->id));
        response_json_new(res, 200, o);
    } else {
        problem_respond(req, res, &err);
    }
    err_release(&err);
out:
    job_free(j);
}

void jobs_health(struct request *req, struct response *res)
{
    struct job *j = job_from_path(req, res);
    if (!j || known_params(req, res, (const char *const[]){ NULL }) < 0)
        goto out;
    struct rank *ranks = NULL;
    size_t n = 0;
    struct err err;
    err_init(&err);
    if (store_ranks_get(req->api->store, j->pk, &ranks, &n, &err) < 0) {
        problem_respond(req, res, &err);
        err_release(&err);
        goto out;
    }
    json_t *d = store_diag_get(req->api->store, j->pk, -1, NULL);
    json_t *o = healthview_job(req->api->store, j, ranks, n, d, clock_now_ns());
    json_decref(d);
    ranks_free(ranks, n);
    response_json_new(res, 200, o);
out:
    job_free(j);
}
