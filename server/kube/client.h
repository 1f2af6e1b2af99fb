/*
 * client: the REST client for one Kubernetes API server, over libcurl.
 *
 *  - Calls from the Kubernetes loop thread are asynchronous: one multi handle drives every
 *    request, watch and log stream, so they share its connection cache (one TLS handshake per
 *    connection, HTTP/2 multiplexing where the server offers it).
 *  - Calls from other threads (dry runs) are blocking and serialised on one long-lived easy
 *    handle of their own: libcurl does not support sharing connections between threads.
 *
 * Every response that is not 2xx becomes an err from the Kubernetes Status in its body:
 * err->code from the HTTP status (403 -> ERR_FORBIDDEN, 422 -> ERR_VALIDATION, 409 ->
 * ERR_CONFLICT, 5xx -> ERR_UPSTREAM, ...), err->reason the Status reason (Forbidden, Invalid,
 * AlreadyExists...), err->msg its message (with the causes of an Invalid), and err->retry_after
 * from retryAfterSeconds. A 401 drops the token and the request is sent once more with a fresh
 * one (an exec plugin is run again).
 *
 * Threads: kube_call_start/cancel/kube_client_run only on the loop thread; kube_client_do and
 * kube_client_wakeup from any thread.
 */
#ifndef TY_KUBE_CLIENT_H
#define TY_KUBE_CLIENT_H

#include <stdbool.h>
#include <stdint.h>

#include "core/buf.h"
#include "core/err.h"
#include "server/kube/kubeconfig.h"

struct kube_client;
struct kube_call;

struct kube_request {
    const char *method;       /* GET, POST, PUT, PATCH, DELETE */
    const char *path;         /* with its query, e.g. /api/v1/namespaces/ns/pods?watch=true */
    const char *body;         /* NULL: none */
    const char *content_type; /* NULL: application/json */
    long timeout_ms;          /* 0: 30 s; -1: none (watches and log streams) */
};

/* Streams: bytes of a 2xx body as they arrive. */
typedef void (*kube_data_fn)(void *ctx, const char *data, size_t len);
/* The end of a call: status 0 when no response came; err is set unless the status was 2xx.
 * body holds the whole body of a call without a data callback (and of any error). */
typedef void (*kube_done_fn)(void *ctx, long status, const struct buf *body, struct err *err);

/* cfg is borrowed and must outlive the client. */
struct kube_client *kube_client_new(const struct kube_config *cfg, struct err *err);
void kube_client_free(struct kube_client *c);

/* Starts an asynchronous call (loop thread). data may be NULL. The request's strings are
 * copied. done is called exactly once unless the call is cancelled first. */
struct kube_call *kube_call_start(struct kube_client *c, const struct kube_request *r,
                                  kube_data_fn data, kube_done_fn done, void *ctx);
/* Ends a call without calling done (loop thread). NULL is a no-op. */
void kube_call_cancel(struct kube_client *c, struct kube_call *call);
/* Waits up to timeout_ms for network activity or a wakeup, then runs callbacks. */
void kube_client_run(struct kube_client *c, int timeout_ms);
/* Makes a waiting kube_client_run return (any thread). */
void kube_client_wakeup(struct kube_client *c);

/* A blocking call from any thread other than the loop's. Returns 0 on 2xx (body in out),
 * else -1 with err as above (out still holds the body). out may be NULL. */
int kube_client_do(struct kube_client *c, const struct kube_request *r, struct buf *out,
                   struct err *err);

/* Fills err from a non-2xx response (Status body or plain text); returns -1. */
int kube_status_err(long status, const char *body, size_t len, struct err *err);
/* The verb and resource of a request, as kube-apiserver's metrics name them ("list",
 * "pods/log"); exposed for tests. */
void kube_classify(const char *method, const char *path, char *verb, size_t vsize, char *res,
                   size_t rsize);
/* Appends Prometheus text: requests and errors by verb and resource. */
void kube_client_metrics(struct kube_client *c, struct buf *out);
/* Time the loop thread spent on responses and callbacks (not waiting), in ns. */
uint64_t kube_client_busy_ns(struct kube_client *c);

#endif
