/*
 * system: health, readiness, version, the OpenAPI document, Prometheus metrics, and the
 * embedded web page. Everything here answers without touching jobs.
 */
#include "api/apimetrics.h"
#include "api/assets.h"
#include "api/handlers.h"
#include "api/usage.h"
#include "core/clock.h"
#include "core/wakeups.h"
#include "core/prom.h"
#include "store/jobs.h"
#include "store/metrics.h"
#include "store/store.h"

#ifdef TY_MIMALLOC
#include <mimalloc.h>
#endif

void system_healthz(struct request *req, struct response *res)
{
    (void)req;
    response_json_new(res, 200, json_pack("{s:s}", "status", "ok"));
}

void system_readyz(struct request *req, struct response *res)
{
    struct err err;
    err_init(&err);
    int rc = store_check(req->api->store, &err);
    json_t *checks = json_pack("{s:s}", "database", rc == 0 ? "ok" : err.msg);
    json_t *out = json_pack("{s:s,s:o,s:s}", "status", rc == 0 ? "ready" : "not ready", "checks",
                            checks, "auth",
                            req->api->auth_enabled ? "on"
                                                   : "off (loopback only; anyone on "
                                                     "this machine is admin)");
    const struct api *a = req->api;
    char sandbox[600];
    if (a->local_sandbox_why)
        snprintf(sandbox, sizeof(sandbox), "off: %s%s", a->local_sandbox_why,
                 a->local_unsandboxed_refused ? "; only admin tokens may run local jobs" : "");
    json_object_set_new(out, "local_sandbox", json_string(a->local_sandbox_why ? sandbox : "on"));
    response_json_new(res, rc == 0 ? 200 : 503, out);
    err_release(&err);
}

/* "mimalloc" when malloc is mimalloc's (release builds), else "system": checked on a block malloc
 * returns, so that a build or a link that lost mimalloc says so. */
static const char *allocator(void)
{
    bool mimalloc = false;
#ifdef TY_MIMALLOC
    void *p = calloc(1, 64);
    mimalloc = p && mi_is_in_heap_region(p);
    free(p);
#endif
    return mimalloc ? "mimalloc" : "system";
}

void system_version(struct request *req, struct response *res)
{
    char ts[CLOCK_RFC3339_MAX];
    response_json_new(res, 200,
                      json_pack("{s:s,s:s,s:i,s:s}", "version", TY_VERSION, "started_at",
                                clock_format(req->api->started_at, ts), "schema",
                                store_schema_version(req->api->store), "allocator", allocator()));
}

static void serve_asset(struct response *res, const struct asset *a)
{
    res->status = 200;
    res->content_type = a->content_type;
    res->static_body = a->data;
    res->static_len = a->size;
    response_header(res, "Cache-Control", "no-cache");
    response_header(res, "X-Content-Type-Options", "nosniff");
}

void system_openapi(struct request *req, struct response *res)
{
    const struct asset *a = assets_find("/openapi.yaml");
    if (!a) {
        problem(req, res, ERR_NOT_FOUND, "this build has no OpenAPI document");
        return;
    }
    serve_asset(res, a);
}

void web_index(struct request *req, struct response *res)
{
    const struct asset *a = assets_find("/index.html");
    if (!a) {
        problem(req, res, ERR_NOT_FOUND, "this build has no web page");
        return;
    }
    serve_asset(res, a);
    response_header(res, "Content-Security-Policy",
                    "default-src 'self'; img-src 'self' data:; style-src 'self'; "
                    "script-src 'self'; connect-src 'self'; frame-ancestors 'none'");
}

void web_asset(struct request *req, struct response *res)
{
    char path[256];
    snprintf(path, sizeof(path), "/%s", req->params[0]);
    const struct asset *a = strcmp(path, "/openapi.yaml") ? assets_find(path) : NULL;
    if (!a) {
        problem(req, res, ERR_NOT_FOUND, "no such file: /ui/%s", req->params[0]);
        return;
    }
    serve_asset(res, a);
}

void system_metrics(struct request *req, struct response *res)
{
    struct api *api = req->api;
    res->status = 200;
    res->content_type = "text/plain; version=0.0.4; charset=utf-8";
    response_header(res, "X-Content-Type-Options", "nosniff");
    struct prom p;
    prom_init(&p, &res->body);
    int64_t counts[JOB_STATE_COUNT];
    struct err err;
    err_init(&err);
    if (store_jobs_count_by_state(api->store, counts, &err) == 0) {
        prom_family(&p, "trainyard_jobs", PROM_GAUGE, "Jobs stored, by state.");
        for (int s = 0; s < JOB_STATE_COUNT; s++)
            prom_sample(&p, NULL, (double)counts[s], "state", jobstate_name((enum job_state)s),
                        NULL);
    }
    err_release(&err);
    struct store_stats st;
    store_stats(api->store, &st);
    prom_scalar(&p, "trainyard_store_commits_total", PROM_COUNTER,
                "Database transactions committed.", (double)st.commits);
    prom_scalar(&p, "trainyard_store_writes_total", PROM_COUNTER, "Writes group-committed.",
                (double)st.writes);
    prom_scalar(&p, "trainyard_store_failed_commits_total", PROM_COUNTER,
                "Transactions that failed.", (double)st.failed_commits);
    prom_scalar(&p, "trainyard_store_rerun_batches_total", PROM_COUNTER,
                "Batches run again with a savepoint per write because one write failed "
                "half-way.",
                (double)st.rerun_batches);
    prom_scalar(&p, "trainyard_sqlite_memory_bytes", PROM_GAUGE,
                "SQLite's heap, mostly page caches (bounded).", (double)st.sqlite_memory_bytes);
    prom_scalar(&p, "trainyard_log_cache_bytes", PROM_GAUGE,
                "Newest log lines kept in memory (bounded).", (double)st.log_cache_bytes);
    if (api->wakeups)
        prom_scalar(&p, "trainyard_log_followers", PROM_GAUGE, "Clients following logs now.",
                    wakeups_count(api->wakeups));
    int64_t lines, dropped;
    if (store_log_totals(api->store, &lines, &dropped, NULL) == 0) {
        prom_scalar(&p, "trainyard_log_lines_stored", PROM_GAUGE, "Log lines kept in the database.",
                    (double)lines);
        prom_scalar(&p, "trainyard_log_lines_dropped", PROM_GAUGE,
                    "Log lines retention dropped, over the jobs still stored.", (double)dropped);
    }
    apimetrics_write(&res->body);
    usage_metrics(api, &res->body);
    if (api->daemon.metrics)
        api->daemon.metrics(api->daemon.ctx, &res->body);
}
