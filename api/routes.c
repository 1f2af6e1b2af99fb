/*
 * routes: the whole API in one table, and path matching. Keep this table, the handlers'
 * names and openapi/openapi.yaml equal: tests/unit/test_routes.c fails when they differ.
 */
#include "api/routes.h"

#include "api/handlers.h"

const struct route routes[] = {
    /* system */
    { HTTP_GET, "/healthz", SCOPE_PUBLIC, "system_healthz", system_healthz },
    { HTTP_GET, "/readyz", SCOPE_PUBLIC, "system_readyz", system_readyz },
    { HTTP_GET, "/version", SCOPE_PUBLIC, "system_version", system_version },
    { HTTP_GET, "/openapi.yaml", SCOPE_PUBLIC, "system_openapi", system_openapi },
    { HTTP_GET, "/metrics", SCOPE_READ, "system_metrics", system_metrics },
    { HTTP_GET, "/", SCOPE_PUBLIC, "web_index", web_index },
    { HTTP_GET, "/ui/{file}", SCOPE_PUBLIC, "web_asset", web_asset },
    /* jobs */
    { HTTP_POST, "/v1/jobs", SCOPE_SUBMIT, "jobs_create", jobs_create },
    { HTTP_GET, "/v1/jobs", SCOPE_READ, "jobs_list", jobs_list },
    { HTTP_GET, "/v1/jobs/{id}", SCOPE_READ, "jobs_get", jobs_get },
    { HTTP_DELETE, "/v1/jobs/{id}", SCOPE_SUBMIT, "jobs_delete", jobs_delete },
    { HTTP_POST, "/v1/jobs/{id}/cancel", SCOPE_SUBMIT, "jobs_cancel", jobs_cancel },
    { HTTP_POST, "/v1/jobs/{id}/resume", SCOPE_SUBMIT, "jobs_resume", jobs_resume },
    { HTTP_POST, "/v1/jobs/{id}/suspend", SCOPE_SUBMIT, "jobs_suspend", jobs_suspend },
    { HTTP_GET, "/v1/jobs/{id}/events", SCOPE_READ, "jobs_events", jobs_events },
    { HTTP_GET, "/v1/jobs/{id}/logs", SCOPE_READ, "jobs_logs", jobs_logs },
    { HTTP_GET, "/v1/jobs/{id}/logs/search", SCOPE_READ, "jobs_logs_search", jobs_logs_search },
    { HTTP_GET, "/v1/jobs/{id}/logs/download", SCOPE_READ, "jobs_logs_download",
      jobs_logs_download },
    /* rendezvous: the ranks of a job find each other */
    { HTTP_PUT, "/v1/jobs/{id}/rendezvous/{key}", SCOPE_WORKER, "rendezvous_set", rendezvous_set },
    { HTTP_GET, "/v1/jobs/{id}/rendezvous/{key}", SCOPE_WORKER, "rendezvous_get", rendezvous_get },
    { HTTP_POST, "/v1/jobs/{id}/rendezvous/barriers/{name}", SCOPE_WORKER, "rendezvous_barrier",
      rendezvous_barrier },
    /* health */
    { HTTP_GET, "/v1/jobs/{id}/diagnosis", SCOPE_READ, "jobs_diagnosis", jobs_diagnosis },
    { HTTP_GET, "/v1/jobs/{id}/metrics", SCOPE_READ, "jobs_metrics", jobs_metrics },
    { HTTP_GET, "/v1/jobs/{id}/health", SCOPE_READ, "jobs_health", jobs_health },
    /* workers */
    { HTTP_POST, "/v1/jobs/{id}/ranks/{rank}/heartbeat", SCOPE_WORKER, "ranks_heartbeat",
      ranks_heartbeat },
    { HTTP_POST, "/v1/jobs/{id}/ranks/{rank}/preflight", SCOPE_WORKER, "ranks_preflight",
      ranks_preflight },
    /* nodes */
    { HTTP_GET, "/v1/nodes", SCOPE_READ, "nodes_list", nodes_list },
    { HTTP_GET, "/v1/nodes/{name}/mark", SCOPE_READ, "nodes_get_mark", nodes_get_mark },
    { HTTP_POST, "/v1/nodes/{name}/mark", SCOPE_ADMIN, "nodes_mark", nodes_mark },
    { HTTP_DELETE, "/v1/nodes/{name}/mark", SCOPE_ADMIN, "nodes_unmark", nodes_unmark },
    /* access */
    /* queues */
    { HTTP_GET, "/v1/queues", SCOPE_READ, "queues_list", queues_list },
    { HTTP_PUT, "/v1/queues/{name}", SCOPE_ADMIN, "queues_put", queues_put },
    { HTTP_DELETE, "/v1/queues/{name}", SCOPE_ADMIN, "queues_delete", queues_delete },
    { HTTP_POST, "/v1/tokens", SCOPE_ADMIN, "tokens_create", tokens_create },
    { HTTP_GET, "/v1/tokens", SCOPE_ADMIN, "tokens_list", tokens_list },
    { HTTP_DELETE, "/v1/tokens/{id}", SCOPE_ADMIN, "tokens_revoke", tokens_revoke },
    { HTTP_GET, "/v1/audit", SCOPE_ADMIN, "audit_list", audit_list },
    /* policies: what non-admin tokens' Kubernetes jobs may use */
    { HTTP_GET, "/v1/policies", SCOPE_ADMIN, "policies_list", policies_list },
    { HTTP_GET, "/v1/policies/{name}", SCOPE_ADMIN, "policies_get", policies_get },
    { HTTP_PUT, "/v1/policies/{name}", SCOPE_ADMIN, "policies_put", policies_put },
    { HTTP_DELETE, "/v1/policies/{name}", SCOPE_ADMIN, "policies_delete", policies_delete },
    /* templates */
    { HTTP_POST, "/v1/templates", SCOPE_ADMIN, "templates_create", templates_create },
    { HTTP_GET, "/v1/templates", SCOPE_READ, "templates_list", templates_list },
    { HTTP_GET, "/v1/templates/{name}", SCOPE_READ, "templates_get", templates_get },
    { HTTP_PUT, "/v1/templates/{name}", SCOPE_ADMIN, "templates_update", templates_update },
    { HTTP_DELETE, "/v1/templates/{name}", SCOPE_ADMIN, "templates_delete", templates_delete },
    { HTTP_POST, "/v1/templates/{name}/jobs", SCOPE_SUBMIT, "templates_jobs_create",
      templates_jobs_create },
    /* triggers */
    { HTTP_POST, "/v1/triggers", SCOPE_ADMIN, "triggers_create", triggers_create },
    { HTTP_GET, "/v1/triggers", SCOPE_ADMIN, "triggers_list", triggers_list },
    { HTTP_GET, "/v1/triggers/{id}", SCOPE_ADMIN, "triggers_get", triggers_get },
    { HTTP_PUT, "/v1/triggers/{id}", SCOPE_ADMIN, "triggers_update", triggers_update },
    { HTTP_DELETE, "/v1/triggers/{id}", SCOPE_ADMIN, "triggers_delete", triggers_delete },
    { HTTP_GET, "/v1/triggers/{id}/deliveries", SCOPE_ADMIN, "triggers_deliveries",
      triggers_deliveries },
    { HTTP_POST, "/v1/hooks/s3/{trigger}", SCOPE_HOOK, "hooks_s3", hooks_s3 },
    /* webhooks */
    { HTTP_POST, "/v1/webhooks", SCOPE_ADMIN, "webhooks_create", webhooks_create },
    { HTTP_GET, "/v1/webhooks", SCOPE_ADMIN, "webhooks_list", webhooks_list },
    { HTTP_GET, "/v1/webhooks/{id}", SCOPE_ADMIN, "webhooks_get", webhooks_get },
    { HTTP_PUT, "/v1/webhooks/{id}", SCOPE_ADMIN, "webhooks_update", webhooks_update },
    { HTTP_DELETE, "/v1/webhooks/{id}", SCOPE_ADMIN, "webhooks_delete", webhooks_delete },
    { HTTP_POST, "/v1/webhooks/{id}/test", SCOPE_ADMIN, "webhooks_test", webhooks_test },
    { HTTP_GET, "/v1/webhooks/{id}/deliveries", SCOPE_ADMIN, "webhooks_deliveries",
      webhooks_deliveries },
    /* usage */
    { HTTP_GET, "/v1/usage", SCOPE_READ, "usage_get", usage_get },
    { HTTP_GET, "/v1/usage/jobs/{id}", SCOPE_READ, "usage_jobs_get", usage_jobs_get },
    { HTTP_GET, "/v1/usage/prices", SCOPE_READ, "usage_prices_get", usage_prices_get },
    { HTTP_PUT, "/v1/usage/prices", SCOPE_ADMIN, "usage_prices_update", usage_prices_update },
};

const size_t routes_count = sizeof(routes) / sizeof(routes[0]);

const char *http_method_name(enum http_method m)
{
    static const char *const names[] = {
        "GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"
    };
    return (unsigned)m < HTTP_METHOD_COUNT ? names[m] : "?";
}

/* Matches path against pattern; on success copies the {param} segments into buf and params. */
static bool match(const char *pattern, const char *path, const char **params, size_t *nparams,
                  char *buf, size_t bufsize)
{
    size_t used = 0, n = 0;
    const char *p = pattern, *s = path;
    while (*p && *s) {
        if (*p == '{') {
            const char *close = strchr(p, '}');
            size_t len = strcspn(s, "/");
            if (!close || len == 0 || n >= 4 || used + len + 1 > bufsize)
                return false;
            memcpy(buf + used, s, len);
            buf[used + len] = '\0';
            params[n++] = buf + used;
            used += len + 1;
            p = close + 1;
            s += len;
        } else if (*p++ != *s++) {
            return false;
        }
    }
    if (*p || *s)
        return false;
    *nparams = n;
    return true;
}

const struct route *routes_match(enum http_method method, const char *path, const char **params,
                                 size_t *nparams, char param_buf[512], unsigned *allowed)
{
    *allowed = 0;
    enum http_method want = method == HTTP_HEAD ? HTTP_GET : method;
    for (size_t i = 0; i < routes_count; i++) {
        const char *ps[4];
        size_t np = 0;
        char scratch[512];
        if (!match(routes[i].pattern, path, ps, &np, scratch, sizeof(scratch)))
            continue;
        if (routes[i].method == want) { /* the first match wins; allowed is for a 405 only */
            *allowed = 0;
            memcpy(param_buf, scratch, sizeof(scratch));
            for (size_t k = 0; k < np; k++)
                params[k] = param_buf + (ps[k] - scratch);
            *nparams = np;
            return &routes[i];
        }
        *allowed |= 1u << routes[i].method;
        if (routes[i].method == HTTP_GET)
            *allowed |= 1u << HTTP_HEAD;
    }
    return NULL;
}
