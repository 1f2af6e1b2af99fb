/*
 * policy: what a submitter's token may run, checked on every path that creates a job (POST
 * /v1/jobs with a native spec or a manifest, templates, triggers) after the spec itself is
 * valid. A refusal is ERR_FORBIDDEN (403) naming the field, by JSON pointer.
 *
 * Local executor: where ranks cannot be sandboxed (api->local_sandbox_why), only admin tokens
 * may run local jobs, unless the admin accepted the risk (--local-sandbox=off);
 * checkpoint.path is the job's own directory unless an admin token sets it, or it lies under one
 * of --local-checkpoint-roots, and it is never inside the daemon's data directory.
 */
#ifndef TY_POLICY_H
#define TY_POLICY_H

#include "api/api.h"
#include "job/spec.h"

/* 0 when the principal may run the job v describes; -1 with ERR_FORBIDDEN otherwise. */
int policy_check(const struct api *api, enum scope scope, const struct spec_view *v,
                 struct err *err);

#endif
