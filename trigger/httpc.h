/*
 * httpc: a small HTTP client over libcurl for the trigger code: fetching SNS signing
 * certificates, confirming SNS subscriptions (GET SubscribeURL) and posting outbound webhooks.
 * One struct httpc keeps one CURL easy handle, so connections are reused between requests to
 * the same host.
 *
 * Redirects are never followed (a webhook or certificate URL must answer itself), only http and
 * https are allowed (https only when asked), and every request has a connect and a total
 * timeout, so a slow receiver costs at most timeout_ms.
 *
 * Threads: a struct httpc belongs to one thread at a time. main() must call
 * curl_global_init(CURL_GLOBAL_DEFAULT) once before any thread opens one.
 */
#ifndef TY_HTTPC_H
#define TY_HTTPC_H

#include <stdbool.h>
#include <stddef.h>

#include "core/buf.h"
#include "core/err.h"

struct httpc_options {
    long connect_timeout_ms; /* 0: 3000 */
    long timeout_ms;         /* whole request; 0: 10000 */
    size_t max_body;         /* response bytes kept, the rest is read and dropped; 0: 64 KiB */
    bool https_only;         /* refuse http:// URLs */
    const char *ca_file;     /* trust only these CAs (tests); NULL: the system's */
    const char *user_agent;  /* NULL: "trainyard/<version>" */
};

struct httpc_response {
    long status;       /* HTTP status, 0 when no response arrived */
    struct buf body;   /* at most max_body bytes */
    bool truncated;    /* the body was longer than max_body */
    char *retry_after; /* the Retry-After header, or NULL; owned by the response */
    double seconds;    /* time the request took */
};

struct httpc;

/* Returns a client; copies opts (ca_file and user_agent are copied too). Never NULL. */
struct httpc *httpc_new(const struct httpc_options *opts);
void httpc_free(struct httpc *h); /* NULL is a no-op */

void httpc_response_init(struct httpc_response *r);
void httpc_response_release(struct httpc_response *r);

/* POSTs len bytes of body with extra headers ("Name: value", NULL-terminated list, may be NULL).
 * Returns 0 when a response arrived, whatever its status (see resp->status); -1 when none did,
 * with ERR_TIMEOUT or ERR_UPSTREAM and libcurl's error text (DNS, connect, TLS, ...). */
int httpc_post(struct httpc *h, const char *url, const char *const *headers, const void *body,
               size_t len, struct httpc_response *resp, struct err *err);

/* GETs url; same contract as httpc_post. */
int httpc_get(struct httpc *h, const char *url, struct httpc_response *resp, struct err *err);

#endif
