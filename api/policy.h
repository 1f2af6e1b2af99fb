/*
 * policy: what a submitter's token may run, checked on every path that creates a job (POST
 * /v1/jobs with a native spec or a manifest, dry runs included, templates, triggers) after the
 * spec itself is valid. A refusal is ERR_FORBIDDEN (403) naming each refused field by JSON
 * pointer into the submitted document.
 *
 * Local executor: where ranks cannot be sandboxed (api->local_sandbox_why), only admin tokens
 * may run local jobs, unless the admin accepted the risk (--local-sandbox=off);
 * checkpoint.path is the job's own directory unless an admin token sets it, or it lies under one
 * of --local-checkpoint-roots, and it is never inside the daemon's data directory.
 *
 * Kubernetes executor: a non-admin token's jobs are held to the cluster policy that governs the
 * token (api/policies.c, store/policies.h: its own, else the one named "default", else the
 * built-in default of policy_grants.h): the namespaces, service accounts, volume claims, image
 * registries and node selectors it grants, never the daemon's own namespace, service accounts
 * or volume claims (api->cluster), and none of what Pod Security's baseline forbids
 * (policy_pod.h): privileged containers, added capabilities beyond IPC_LOCK (EFA pins memory),
 * hostPath volumes, host namespaces and ports. The same rules read a native spec's fields and a
 * manifest's (PyTorchJob, TrainJob: every pod template, container, init container, volume and
 * security context in it), whether posted as the body or as kubernetes.manifest.
 */
#ifndef TY_POLICY_H
#define TY_POLICY_H

#include "api/api.h"
#include "job/spec.h"

/* Who submits, and where a manifest sits in what they sent (for the pointers of a refusal). */
struct policy_request {
    enum scope scope;
    const char *token_id;    /* the token's id; NULL when not a token (triggers run as admin) */
    const char *manifest_at; /* JSON pointer of kubernetes.manifest in the submitted document:
                                "" when the manifest was the body; NULL: "/kubernetes/manifest" */
};

/* 0 when the submitter may run the job v describes; -1 with ERR_FORBIDDEN (every refused field
 * listed), or with the store's error when the token's policy cannot be read (nothing is run on
 * a policy that could not be checked). */
int policy_check(const struct api *api, const struct policy_request *who, const struct spec_view *v,
                 struct err *err);

/* The cluster rules alone (pure): v, a kubernetes job, against the grants g (policy_grants.h);
 * `at` is where its manifest sits in the submitted document. 0, or -1 with ERR_FORBIDDEN. */
struct policy_grants;
int policy_kube_check(const struct policy_grants *g, const struct spec_view *v, const char *at,
                      struct err *err);

/* A 403 naming the field at pointer: the first sets the message, each adds a field. -1. */
int policy_forbid(struct err *err, const char *pointer, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif
