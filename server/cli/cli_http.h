/*
 * cli_http: the CLI's HTTP client. One libcurl easy handle per process (connections are kept
 * alive between calls), a base URL, a bearer token, TLS verified (a --cacert bundle or the
 * system's), no redirects, CURLOPT_NOSIGNAL.
 *
 * Retries: a request marked `retry` (GETs, cancel, a submission carrying an Idempotency-Key) is
 * repeated after connection errors and after 429 and 5xx answers, with exponential backoff and
 * jitter, honouring Retry-After, until retry_for has passed; then the last answer is returned
 * or, when none came, ERR_UNAVAILABLE (the CLI's "lost connection"). Streams are one attempt:
 * their callers resume from where the stream stopped.
 *
 * Not thread-safe: one struct cli_http per thread (the CLI has one). main() or cli_main() calls
 * curl_global_init() first.
 */
#ifndef TY_CLI_HTTP_H
#define TY_CLI_HTTP_H

#include <stdbool.h>
#include <stdint.h>

#include "core/buf.h"
#include "core/err.h"

struct cli_http_options {
    const char *url;      /* base: http[s]://host[:port][/prefix]; "host:port" means http */
    const char *token;    /* bearer token, or NULL */
    const char *cacert;   /* PEM bundle to trust instead of the system's, or NULL */
    int64_t retry_for_ns; /* stop retrying after this long without an answer; 0: 60 s */
    long timeout_ms;      /* one plain request; 0: 30 s */
    /* Told about each retry ("connection refused; retrying in 1.2s"); NULL: silent. */
    void (*notice)(void *ctx, const char *msg);
    void *notice_ctx;
};

struct cli_http {
    void *curl; /* CURL * */
    char *base; /* without a trailing '/' */
    char *auth; /* "Authorization: Bearer ..." or NULL */
    char *cacert;
    int64_t retry_for_ns;
    long timeout_ms;
    void (*notice)(void *ctx, const char *msg);
    void *notice_ctx;
    char errbuf[256]; /* CURL_ERROR_SIZE */
};

struct cli_request {
    const char *method; /* "GET", "POST", "DELETE" */
    const char *path;   /* "/v1/jobs?state=running", already escaped */
    const char *body;   /* or NULL */
    size_t body_len;
    const char *content_type; /* of the body */
    const char *accept;       /* NULL: application/json */
    const char *idempotency_key;
    bool retry; /* repeating it is harmless */
};

struct cli_response {
    long status;     /* 0 when no answer came */
    struct buf body; /* the whole body (for streams: only a non-2xx body) */
    char content_type[96];
    int64_t retry_after_ms; /* Retry-After, or -1 */
    int64_t next_after;     /* Trainyard-Next-After (logs paging), or 0 */
    int attempts;
    bool stopped; /* a stream's callback asked to stop */
    bool fatal;   /* no answer, and retrying will not help (TLS verification, bad URL) */
};

/* Chunks of a 2xx stream body as they arrive; return non-zero to stop reading. */
typedef int (*cli_http_data_fn)(void *ctx, const char *data, size_t len);

/* ERR_INVALID when the URL is not http(s). Release with cli_http_close() either way. */
int cli_http_open(struct cli_http *h, const struct cli_http_options *o, struct err *err);
void cli_http_close(struct cli_http *h);

void cli_response_init(struct cli_response *r);
void cli_response_release(struct cli_response *r);

/* Sends rq, retrying as described above. Returns 0 when an answer arrived, whatever its status
 * (resp->status, resp->body); -1 with ERR_UNAVAILABLE when none did. */
int cli_http_do(struct cli_http *h, const struct cli_request *rq, struct cli_response *resp,
                struct err *err);

/* GETs path and hands a 2xx body to fn as it arrives (no total timeout; a connection silent for
 * 45 s counts as dropped). Returns 0 when the body ended or fn stopped it (resp->stopped), or
 * when a non-2xx answer arrived (resp->status, resp->body); -1 with ERR_UNAVAILABLE when the
 * connection failed or dropped (resp->status is set if headers had arrived). One attempt. */
int cli_http_stream(struct cli_http *h, const char *path, const char *const *headers,
                    cli_http_data_fn fn, void *ctx, struct cli_response *resp, struct err *err);

/* The delay before retry number attempt (0-based): exponential from 200 ms to at most 5 s,
 * "equal jitter" (half fixed, half from rnd), or retry_after_ms when that is longer. Pure. */
int64_t cli_backoff_ms(int attempt, uint64_t rnd, int64_t retry_after_ms);
/* A Retry-After value (seconds, or an HTTP date relative to now_s) in ms; -1 when invalid. */
int64_t cli_retry_after_ms(const char *value, int64_t now_s);
/* 429 and 5xx other than 501 and 505. */
bool cli_status_retryable(long status);

/* Appends s percent-encoded for a path segment or a query value. */
void cli_http_escape(struct buf *out, const char *s);

#endif
