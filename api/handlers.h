/*
 * handlers: every route handler, named after its OpenAPI operationId, grouped by the file that
 * implements it (one file per OpenAPI tag).
 */
#ifndef TY_HANDLERS_H
#define TY_HANDLERS_H

#include "api/api.h"

/* api/system.c */
void system_healthz(struct request *req, struct response *res);
void system_readyz(struct request *req, struct response *res);
void system_version(struct request *req, struct response *res);
void system_openapi(struct request *req, struct response *res);
void system_metrics(struct request *req, struct response *res);
void web_index(struct request *req, struct response *res);
void web_asset(struct request *req, struct response *res);

/* api/jobs.c */
void jobs_create(struct request *req, struct response *res);
void jobs_list(struct request *req, struct response *res);
void jobs_get(struct request *req, struct response *res);
void jobs_delete(struct request *req, struct response *res);
void jobs_cancel(struct request *req, struct response *res);
void jobs_resume(struct request *req, struct response *res);
void jobs_suspend(struct request *req, struct response *res);
void jobs_events(struct request *req, struct response *res);

/* api/logs.c, api/logsearch.c */
void jobs_logs(struct request *req, struct response *res);
void jobs_logs_search(struct request *req, struct response *res);
void jobs_logs_download(struct request *req, struct response *res);

/* api/rendezvous.c */
void rendezvous_set(struct request *req, struct response *res);
void rendezvous_get(struct request *req, struct response *res);
void rendezvous_barrier(struct request *req, struct response *res);

/* api/health.c */
void jobs_diagnosis(struct request *req, struct response *res);
void jobs_metrics(struct request *req, struct response *res);
void jobs_health(struct request *req, struct response *res);

/* api/workers.c */
void ranks_heartbeat(struct request *req, struct response *res);
void ranks_preflight(struct request *req, struct response *res);

/* api/nodes.c */
void nodes_list(struct request *req, struct response *res);
void nodes_get_mark(struct request *req, struct response *res);
void nodes_mark(struct request *req, struct response *res);
void nodes_unmark(struct request *req, struct response *res);

/* api/queues.c */
void queues_list(struct request *req, struct response *res);
void queues_put(struct request *req, struct response *res);
void queues_delete(struct request *req, struct response *res);

/* api/tokens.c */
void tokens_create(struct request *req, struct response *res);
void tokens_list(struct request *req, struct response *res);
void tokens_revoke(struct request *req, struct response *res);
void audit_list(struct request *req, struct response *res);

/* api/policies.c */
void policies_list(struct request *req, struct response *res);
void policies_get(struct request *req, struct response *res);
void policies_put(struct request *req, struct response *res);
void policies_delete(struct request *req, struct response *res);

/* api/templates.c */
void templates_create(struct request *req, struct response *res);
void templates_list(struct request *req, struct response *res);
void templates_get(struct request *req, struct response *res);
void templates_update(struct request *req, struct response *res);
void templates_delete(struct request *req, struct response *res);
void templates_jobs_create(struct request *req, struct response *res);

/* api/triggers.c */
void triggers_create(struct request *req, struct response *res);
void triggers_list(struct request *req, struct response *res);
void triggers_get(struct request *req, struct response *res);
void triggers_update(struct request *req, struct response *res);
void triggers_delete(struct request *req, struct response *res);
void triggers_deliveries(struct request *req, struct response *res);

/* api/hooks.c */
void hooks_s3(struct request *req, struct response *res);

/* api/webhooks.c */
void webhooks_create(struct request *req, struct response *res);
void webhooks_list(struct request *req, struct response *res);
void webhooks_get(struct request *req, struct response *res);
void webhooks_update(struct request *req, struct response *res);
void webhooks_delete(struct request *req, struct response *res);
void webhooks_test(struct request *req, struct response *res);
void webhooks_deliveries(struct request *req, struct response *res);

/* api/usage.c */
void usage_get(struct request *req, struct response *res);
void usage_jobs_get(struct request *req, struct response *res);
void usage_prices_get(struct request *req, struct response *res);
void usage_prices_update(struct request *req, struct response *res);

#endif
