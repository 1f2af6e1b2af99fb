/*
 * auth: the bearer token (or client certificate) for each request to the API server, from the
 * kubeconfig's static token, a token file that rotates (the in-cluster service account, re-read
 * every minute like client-go), or an exec credential plugin (ExecCredential v1beta1, v1 or
 * v1alpha1, as `aws eks get-token` prints). A plugin's token is cached until shortly before its
 * expirationTimestamp; a 401 drops the token so that the next request refreshes it (the client
 * retries the refused request once).
 *
 * Threads: every function may be called from any thread (one mutex). A plugin run blocks the
 * caller for as long as the plugin takes (at most 60 s).
 */
#ifndef TY_KUBE_AUTH_H
#define TY_KUBE_AUTH_H

#include <stddef.h>
#include <stdint.h>

#include "core/buf.h"
#include "core/err.h"
#include "server/kube/kubeconfig.h"

struct kube_auth;

/* cfg is borrowed and must outlive the auth. */
struct kube_auth *kube_auth_new(const struct kube_config *cfg);
void kube_auth_free(struct kube_auth *a);

/* The token to send now (caller frees), refreshed when due. NULL without an error when the
 * configuration uses no token (client certificates only); NULL with err when it cannot be had. */
char *kube_auth_token(struct kube_auth *a, struct err *err);
/* A request sent with token got 401: forget it (unless it was already replaced). */
void kube_auth_expired(struct kube_auth *a, const char *token);
/* A client certificate and key (PEM) an exec plugin returned, copied into cert and key; 0 when
 * there is one, -1 when none. */
int kube_auth_client_cert(struct kube_auth *a, struct buf *cert, struct buf *key);
/* Times the exec plugin ran (for metrics and tests). */
uint64_t kube_auth_plugin_runs(struct kube_auth *a);

/* Parses a plugin's stdout; exposed for tests. Sets *token (caller frees) or the cert pair,
 * and *expires (ns, 0 when none). */
int kube_auth_parse_credential(const char *out, size_t len, const char *api_version, char **token,
                               char **cert, char **key, int64_t *expires, struct err *err);

#endif
