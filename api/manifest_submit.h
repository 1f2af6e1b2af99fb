/*
 * manifest_submit: a PyTorchJob/TrainJob manifest posted to POST /v1/jobs, turned into the job
 * spec that wraps it, once the Kubernetes API server accepted it in a server-side dry run.
 */
#ifndef TY_API_MANIFEST_SUBMIT_H
#define TY_API_MANIFEST_SUBMIT_H

#include <jansson.h>

#include "api/api.h"

/* The job spec wrapping the manifest doc (new reference; doc is borrowed), or NULL once a
 * problem has been answered on res (an invalid manifest, or one the API server refused).
 * Unless the request is a dry run, the API server checks it first (admission webhooks,
 * schemas); an unreachable cluster does not refuse it. A bad ?dry_run is left to
 * jobs_submit_request() to report. */
json_t *manifest_submit_doc(struct request *req, struct response *res, const json_t *doc);

#endif
