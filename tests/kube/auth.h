/*
 * auth: bearer tokens and the kubeconfig. Tokens are self-contained and signed like EKS's
 * presigned STS URLs: "testserver-v1.<issued>.<expires>.<hex HMAC-SHA256(secret,
 * "<issued>.<expires>")>" (expires 0 = never), so the exec credential plugin
 * (testserver-token, a shell script) mints tokens the server accepts without talking to it.
 * A token is refused (401 Unauthorized) when its signature is wrong, it has expired, or it was
 * issued before the last /_test/tokens/revoke.
 */
#ifndef KS_AUTH_H
#define KS_AUTH_H

#include <stdbool.h>
#include <stdint.h>

#include "core/err.h"

struct world;
struct auth;

/* ttl_seconds: lifetime of minted tokens, 0 = no expiry. Caller frees with auth_free(). */
struct auth *auth_new(int64_t ttl_seconds);
void auth_free(struct auth *a);
/* A fresh token (out >= 160 bytes), valid for ttl_seconds (< 0: the server's ttl). */
char *auth_mint(struct auth *a, int64_t ttl_seconds, char *out);
/* Refuses every token issued up to now. */
void auth_revoke(struct auth *a);
/* 0 when the Authorization header carries a valid token; takes the world lock. */
int auth_check(struct world *w, const char *authorization);

struct kubeconfig_options {
    const char *path;
    const char *server;      /* "https://127.0.0.1:PORT" */
    const char *ca_pem;      /* NULL without TLS */
    const char *exec_plugin; /* absolute path of the plugin, NULL for a static token */
};

/* Writes the kubeconfig (mode 0600). ERR_IO when the file cannot be written. */
int auth_write_kubeconfig(struct auth *a, const struct kubeconfig_options *o, struct err *err);

#endif
