/*
 * policy_grants: one cluster policy's grants and the question every Kubernetes job of a
 * non-admin token asks of them: may it use this namespace, service account, volume claim, image,
 * node label? The grants are a JSON object (what PUT /v1/policies/{name} stores):
 *
 *   {"namespaces": ["team-a", "team-a-*"], "service_accounts": ["trainer"],
 *    "volume_claims": ["team-a-*"], "image_registries": ["nvcr.io/nvidia", "docker.io"],
 *    "node_selectors": {"node.kubernetes.io/instance-type": ["p5.48xlarge", "p4d.*"]}}
 *
 * A name pattern is a name, a prefix ending in '*', or "*". A registry is a host ("nvcr.io",
 * "host:5000") or a repository prefix under it ("nvcr.io/nvidia"); an image is matched by its
 * normalised repository ("pytorch/pytorch:2.4" is docker.io/pytorch/pytorch), "*" is any. A
 * node selector grant maps a label key (or "*") to the values that may be selected. What a
 * policy leaves out it does not grant. The daemon's own namespace, service accounts and volume
 * claims (api->cluster) are refused whatever a policy grants.
 *
 * The built-in default, for tokens no stored policy governs: the daemon's jobs namespace, no
 * service account but the namespace's default, no volume claim, any registry, any node label.
 * Pure; thread-safe.
 */
#ifndef TY_POLICY_GRANTS_H
#define TY_POLICY_GRANTS_H

#include <jansson.h>
#include <stddef.h>

#include "api/api.h"

struct policy_grants {
    const char *name;                  /* the policy's, for messages */
    const json_t *doc;                 /* the grants (borrowed) */
    const struct api_cluster *cluster; /* the daemon's own, always refused (borrowed) */
};

enum policy_kind { POLICY_NAMESPACE, POLICY_SERVICE_ACCOUNT, POLICY_VOLUME_CLAIM, POLICY_IMAGE };

/* NULL when the grants allow value (a name of that kind, or an image reference); otherwise why
 * not, a sentence written into why (size bytes) and returned. */
const char *policy_grants_refuse(const struct policy_grants *g, enum policy_kind kind,
                                 const char *value, char *why, size_t size);
/* The same for selecting nodes by label key=value; value NULL: any value (Exists, Gt, Lt). */
const char *policy_grants_refuse_node(const struct policy_grants *g, const char *key,
                                      const char *value, char *why, size_t size);

/* Checks a grants document (a PUT body without "tokens"): 0, or -1 with ERR_VALIDATION naming
 * every bad field by JSON pointer. */
int policy_grants_validate(const json_t *doc, struct err *err);
/* The built-in default's grants (new reference). */
json_t *policy_grants_default(const struct api_cluster *cluster);

/* The repository an image reference names, lowercase, without tag or digest, its registry
 * spelled out: "ubuntu:22.04" -> "docker.io/library/ubuntu". */
void policy_grants_repository(const char *image, char *out, size_t size);

#endif
