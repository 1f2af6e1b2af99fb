/*
 * http: the daemon's HTTP(S) listener on libmicrohttpd; its files (http.c, http_exchange.c) are
 * the only ones that include <microhttpd.h>. It turns each request into an api/api.h request,
 * calls api_handle(), and sends the response: buffered, static, deferred (connection suspended
 * until the work is committed) or streamed (log follow; suspended while nothing is ready).
 *
 * Threads: libmicrohttpd's internal epoll thread pool runs handlers; deferred completions and
 * stream wake-ups may come from any thread.
 */
#ifndef TY_HTTP_H
#define TY_HTTP_H

#include <stdbool.h>
#include <stddef.h>

#include "api/api.h"

struct http_options {
    const char *listen;         /* "127.0.0.1:8080", "[::1]:0", "0.0.0.0:8443" */
    int threads;                /* handler threads */
    int connection_limit;       /* open connections at most */
    int per_ip_limit;           /* open connections per client address at most */
    int timeout_seconds;        /* idle connections are closed after this */
    int header_timeout_seconds; /* a request's headers must arrive within this (0: none) */
    size_t max_body_bytes;
    const char *tls_cert_file; /* PEM; with tls_key_file turns on HTTPS */
    const char *tls_key_file;
    const char *tls_client_ca_file; /* PEM; when set, clients must present a certificate */
};

struct http;

/* Starts listening. NULL with err (e.g. address in use). */
struct http *http_start(struct api *api, const struct http_options *opts, struct err *err);
/* The address actually bound, e.g. "127.0.0.1:41234" (port 0 resolved). */
const char *http_address(const struct http *h);
/* Re-reads the TLS certificate and key (SIGHUP); the listener keeps its socket. */
int http_reload_tls(struct http *h, struct err *err);
/* Stops: no new connections, open streams ended, then the listener is closed. */
void http_stop(struct http *h);

/* Checks the syntax of a listen address ("HOST:PORT", "[V6]:PORT"); ERR_INVALID when bad. */
int http_listen_check(const char *listen, struct err *err);
/* True when the address text names a loopback interface (127.0.0.0/8, ::1, localhost). */
bool http_is_loopback(const char *listen);

#endif
