/*
 * httpc: the worker's HTTP client to the daemon: one reused libcurl handle (keep-alive), a base
 * URL, a bearer token, JSON bodies. Not thread-safe: one httpc per thread.
 */
#ifndef TY_WORKER_HTTPC_H
#define TY_WORKER_HTTPC_H

#include "core/buf.h"
#include "core/err.h"

struct httpc {
    void *curl;    /* CURL * */
    char *base;    /* without trailing '/' */
    void *headers; /* struct curl_slist * */
};

/* token may be NULL (no Authorization header). */
int httpc_init(struct httpc *h, const char *base_url, const char *token, struct err *err);
void httpc_release(struct httpc *h);

/* Sends METHOD base+path with an optional JSON body and waits at most timeout_ms. Sets *status
 * and fills resp (reset first) when the server answered, whatever the status; returns -1 with
 * ERR_UNAVAILABLE only when no HTTP response came back (refused, timed out, DNS). */
int httpc_do(struct httpc *h, const char *method, const char *path, const char *body,
             long timeout_ms, long *status, struct buf *resp, struct err *err);

/* Appends s percent-encoded for one URL path segment. */
void httpc_escape(struct buf *out, const char *s);

#endif
