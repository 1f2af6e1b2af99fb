/*
 * manifest_submit: POST /v1/jobs with a user's own PyTorchJob or TrainJob (api/manifest.h)
 * as its body, before it takes the one submission path (jobs_submit_request()). Runs on the
 * HTTP thread of the request; a dry run through the API server is its only outside call.
 */
#include "api/manifest_submit.h"

#include "api/manifest.h"
#include "api/policy.h"
#include "job/spec.h"
#include "core/parse.h"

/* A user's manifest goes past the API server's own checks (webhooks, schemas) before it is
 * recorded, so that a refused one is refused here, with the Kubernetes Status. An unreachable
 * cluster does not refuse it: the job then fails later with the reason, like any other. */
static bool manifest_accepted(struct request *req, struct response *res, const json_t *doc)
{
    struct api *api = req->api;
    struct spec_options opts = { .limits = &api->limits.spec,
                                 .default_executor = api->default_executor,
                                 .local_enabled = api->local_enabled,
                                 .kubernetes_enabled = api->kubernetes_enabled,
                                 .local_slots = api->local_slots,
                                 .local_gpus = api->local_gpus };
    json_t *spec = req->api->daemon.dry_run ? spec_validate(doc, &opts, NULL) : NULL;
    if (!spec)
        return true; /* no hook, or the submission reports the spec's problems */
    struct err err;
    err_init(&err);
    /* Nothing the token may not run goes to the API server, not even as a dry run. */
    struct spec_view v;
    spec_view(spec, &v);
    struct policy_request who = { .scope = req->who.scope,
                                  .token_id = req->who.token_id,
                                  .manifest_at = "" };
    bool allowed = policy_check(api, &who, &v, &err) == 0;
    json_t *obj =
        allowed ? req->api->daemon.dry_run(req->api->daemon.ctx, spec, "dry-run", &err) : NULL;
    bool ok = obj || (allowed && (err.code == ERR_UPSTREAM || err.code == ERR_TIMEOUT ||
                                  err.code == ERR_UNAVAILABLE));
    if (!ok)
        problem_respond(req, res, &err);
    json_decref(obj);
    json_decref(spec);
    err_release(&err);
    return ok;
}

json_t *manifest_submit_doc(struct request *req, struct response *res, const json_t *doc)
{
    struct err err;
    err_init(&err);
    json_t *wrapped = manifest_to_spec(doc, &err);
    if (!wrapped)
        problem_respond(req, res, &err);
    err_release(&err);
    const char *dry = request_query(req, "dry_run");
    bool is_dry = false;
    bool dry_ok = !dry || parse_bool(dry, &is_dry) == 0;
    if (wrapped && dry_ok && !is_dry && !manifest_accepted(req, res, wrapped)) {
        json_decref(wrapped);
        return NULL;
    }
    return wrapped;
}
