/*
 * httpc: the one synchronous HTTP client (libcurl), for the CLI, the worker, the webhook
 * senders, SNS (certificates and SubscribeURL) and the DCGM poller. The Kubernetes client is the
 * only other libcurl user: it needs many transfers on one thread (a multi handle).
 *
 * One set of rules for every caller:
 *   - only http and https (https only when asked); redirects are never followed;
 *   - TLS is verified, against ca_file when given, else the system's CAs;
 *   - every request has a connect timeout (at most its total timeout) and a total timeout; a
 *     stream has no total timeout, but a stream silent for HTTPC_STREAM_SILENCE_S is dropped;
 *   - a response body is bounded: max_body bytes are kept, the rest is read and dropped, and
 *     the response says it was truncated;
 *   - a request marked `retry` (the caller knows repeating it is harmless) is repeated after
 *     connection errors and after 429 and 5xx answers (not 501, 505), with exponential backoff
 *     and jitter, honouring Retry-After, until retry_for has passed. Other requests are one
 *     attempt; callers with their own schedule (the webhook outbox, the worker's rendezvous)
 *     retry on their own.
 * One struct httpc keeps one easy handle, so connections are reused between its requests.
 *
 * Threads: a struct httpc belongs to one thread at a time. libcurl's global state is set up on
 * the first httpc_new(); callers need not call curl_global_init().
 */
#ifndef TY_HTTPC_H
#define TY_HTTPC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/buf.h"
#include "core/err.h"

#define HTTPC_STREAM_SILENCE_S 45

struct httpc_options {
    /* A request URL that starts with '/' is appended to this (trailing '/' trimmed); must be
     * http:// or https://. NULL: requests carry absolute URLs. */
    const char *base_url;
    const char *bearer;      /* sent as "Authorization: Bearer ..."; NULL or "": none */
    const char *ca_file;     /* PEM bundle to trust instead of the system's; NULL: system's */
    bool https_only;         /* refuse http:// */
    long connect_timeout_ms; /* 0: 3000 (never more than a request's total timeout) */
    long timeout_ms;         /* a whole request; 0: 10000 */
    size_t max_body;         /* response bytes kept; 0: 64 KiB */
    const char *user_agent;  /* NULL: "trainyard/<version>" */
    int64_t retry_for_ns;    /* how long a `retry` request keeps trying; 0: 60 s */
    /* Connect only to addresses core/addrpolicy.h allows, judged on the address each connection
     * goes to (so a name that resolves elsewhere the second time, DNS rebinding, is caught),
     * and ignore proxy settings (a proxy would connect for us). A refused address fails the
     * request (fatal) saying which address and why. */
    bool public_only;
    /* Told about each retry ("Connection refused; retrying in 0.4s"); NULL: silent. */
    void (*notice)(void *ctx, const char *msg);
    void *notice_ctx;
};

/* Chunks of a 2xx body as they arrive; return non-zero to stop reading. */
typedef int (*httpc_data_fn)(void *ctx, const char *data, size_t len);

struct httpc_request {
    const char *method;         /* NULL: POST when there is a body, else GET */
    const char *url;            /* absolute, or "/path?query" (already escaped) after base_url */
    const char *const *headers; /* extra "Name: value" lines, NULL-terminated; may be NULL */
    const void *body;           /* NULL: none (a POST without one sends an empty body) */
    size_t body_len;
    long timeout_ms; /* 0: the client's */
    bool retry;      /* repeating it is harmless: retry as described above */
    /* A stream: a 2xx body goes to stream() instead of resp->body. One attempt. */
    httpc_data_fn stream;
    void *stream_ctx;
};

struct httpc_response {
    long status;            /* HTTP status; 0 when no answer came */
    struct buf body;        /* at most max_body bytes; a stream's only when not 2xx */
    bool truncated;         /* the body was longer than max_body */
    struct buf headers;     /* the answer's header lines, as received (at most 16 KiB) */
    int64_t retry_after_ms; /* Retry-After (seconds or an HTTP date), or -1 */
    int attempts;
    bool stopped; /* a stream's callback stopped it */
    bool fatal;   /* no answer, and retrying will not help (TLS verification, bad URL) */
};

/* A client. NULL with ERR_INVALID when base_url is not http(s) (or https_only and http). Copies
 * opts and its strings. Caller frees with httpc_free() (NULL is a no-op). */
struct httpc *httpc_new(const struct httpc_options *opts, struct err *err);
void httpc_free(struct httpc *h);

void httpc_response_init(struct httpc_response *r);
void httpc_response_release(struct httpc_response *r);

/* Sends rq (retrying when rq->retry). Returns 0 when an answer arrived, whatever its status
 * (resp->status, resp->body; a stream: its body was read or the callback stopped it); -1 when
 * none did or a stream broke: ERR_TIMEOUT when the time ran out, else ERR_UNAVAILABLE, with
 * libcurl's reason and the URL. resp is reset first. */
int httpc_do(struct httpc *h, const struct httpc_request *rq, struct httpc_response *resp,
             struct err *err);

/* The value of response header name (the last one, trimmed) into out; NULL when absent. */
const char *httpc_header(const struct httpc_response *r, const char *name, char *out, size_t cap);

/* The delay before retry number attempt (0-based): exponential from 200 ms to at most 5 s,
 * "equal jitter" (half fixed, half from rnd), or retry_after_ms when that is longer. Pure. */
int64_t httpc_backoff_ms(int attempt, uint64_t rnd, int64_t retry_after_ms);
/* A Retry-After value (delay-seconds up to a year, or an HTTP date, relative to now_ns) in ms;
 * -1 when absent or invalid. */
int64_t httpc_retry_after_ms(const char *value, int64_t now_ns);
/* 429 and 5xx other than 501 and 505: the answers worth asking again. */
bool httpc_status_retryable(long status);

/* Appends s percent-encoded (all but A-Z a-z 0-9 - . _ ~): a path segment or a query value. */
void httpc_escape(struct buf *out, const char *s);

/* A URL split by libcurl's parser (the one that fetches it, so a check on the host is a check
 * on where the request goes). Parts absent or empty are NULL; path is at least "/". */
struct httpc_url {
    char *scheme, *user, *password, *host, *port, *path, *query, *fragment;
};
/* ERR_INVALID when url is not a URL. Release with httpc_url_release() either way. */
int httpc_url_parse(const char *url, struct httpc_url *u, struct err *err);
void httpc_url_release(struct httpc_url *u);

#endif
