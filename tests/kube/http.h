/*
 * http: the HTTP front of the test API server (the only file that includes <microhttpd.h>).
 * It reads a request, authenticates it, applies injected faults, and hands a struct request to
 * the router; handlers answer with a struct reply, either a whole body or a stream (watch,
 * log follow) that the front pulls from a callback on the connection's own thread.
 */
#ifndef KS_HTTP_H
#define KS_HTTP_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include <jansson.h>

#include "core/buf.h"
#include "core/err.h"

struct world;

struct request {
    struct world *w;
    void *conn; /* the MHD connection, for request_query()/request_header() */
    const char *method;
    const char *path;
    const char *body;
    size_t body_len;
};

/* Borrowed for the request's lifetime; NULL when absent. Query values are percent-decoded. */
const char *request_query(const struct request *req, const char *key);
const char *request_header(const struct request *req, const char *key);

/* A stream pulls up to max bytes into out; returns the count (> 0), or -1 at the end. It may
 * block (each connection has its own thread). */
typedef ssize_t (*reply_stream_fn)(void *ctx, char *out, size_t max);

struct reply {
    int code;
    const char *content_type; /* static string */
    struct buf body;
    int retry_after;        /* seconds, 0 = no Retry-After header */
    reply_stream_fn stream; /* when set, body is ignored */
    void (*stream_free)(void *ctx);
    void *stream_ctx;
};

void reply_init(struct reply *rep);
/* Sets a JSON body (steals v). */
void reply_json(struct reply *rep, int code, json_t *v);
/* Sets a plain-text body. */
void reply_text(struct reply *rep, int code, const char *text, size_t len);

/* Routes one request; implemented by the router (route.c). */
void route_request(struct request *req, struct reply *rep);

struct http;

struct http_options {
    const char *host;                       /* "127.0.0.1" */
    int port;                               /* 0 picks a free port */
    const char *tls_cert_pem, *tls_key_pem; /* both NULL for plain HTTP */
    /* NULL: route_request(). The simulator (tests/kube/sim) serves other routes. */
    void (*route)(struct request *req, struct reply *rep);
    bool open; /* no bearer tokens checked (the simulator's kubelet and webhook endpoints) */
};

/* Starts serving on a thread per connection. Caller frees with http_close(). */
struct http *http_open(struct world *w, const struct http_options *opt, struct err *err);
/* The bound port. */
int http_port(const struct http *h);
void http_close(struct http *h);

#endif
