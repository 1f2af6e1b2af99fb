/*
 * manifest: a user's own PyTorchJob or TrainJob, submitted to POST /v1/jobs as JSON or YAML,
 * recognised by its apiVersion and kind and wrapped into a job spec (executor kubernetes,
 * kubernetes.manifest = the object) so that it is recorded, run and watched like any job.
 * Validated enough to fail early: kind and apiVersion, metadata.name (a DNS-1035 label) and
 * namespace, the replica types and container a PyTorchJob needs, a TrainJob's runtimeRef.
 * Pure; thread-safe.
 */
#ifndef TY_MANIFEST_H
#define TY_MANIFEST_H

#include <jansson.h>
#include <stdbool.h>

#include "core/err.h"

/* True when doc names a Kubernetes kind (apiVersion and kind at the top). */
bool manifest_detect(const json_t *doc);
/* The job spec for the manifest (new reference), or NULL with ERR_VALIDATION listing the
 * problems by JSON pointer into the manifest. Server-set fields (status, uid,
 * resourceVersion...) are dropped. */
json_t *manifest_to_spec(const json_t *doc, struct err *err);

#endif
