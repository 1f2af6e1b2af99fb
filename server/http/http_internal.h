/*
 * http_internal: what http.c (the listener: address, MHD daemon, TLS, stop), http_exchange.c
 * (one request: screening on its headers, body, handler call, deferred and streamed responses)
 * and http_deadline.c (the header deadline) say to each other. Each keeps its state to itself:
 * struct http is http.c's, struct http_exchanges (the requests in flight, shared by MHD's
 * handler threads under its lock) is http_exchange.c's, struct http_deadlines (every open
 * connection) http_deadline.c's. Not for use outside these files.
 */
#ifndef TY_HTTP_INTERNAL_H
#define TY_HTTP_INTERNAL_H

#include <microhttpd.h>
#include <pthread.h>

#include "server/http/http.h"

/* The requests in flight, for one listener and whichever MHD daemon serves it (a TLS reload
 * starts a new one). client_certs: a request must bring a certificate the client CA signed
 * (MHD checks the chain; the exchange refuses a request without one). Freed by
 * http_exchanges_free, after the MHD daemon stopped. */
struct http_exchanges;
struct http_deadlines;
struct http_exchanges *http_exchanges_new(struct api *api, size_t max_body_bytes, bool client_certs,
                                          struct http_deadlines *deadlines);
void http_exchanges_free(struct http_exchanges *xs);
/* Resumes every suspended exchange so that MHD can close them (it must not stop with any).
 * Deferred responses are waited for first: their work is committed within milliseconds. From
 * then on streams end; http_exchanges_go_on() undoes that when the listener goes on. */
void http_exchanges_resume_all(struct http_exchanges *xs);
void http_exchanges_go_on(struct http_exchanges *xs);

/* Bodies read before their sender is authenticated (hook deliveries, which sign the body),
 * all requests together, at most: past it such uploads are answered 503 and Retry-After
 * without being read, so that anonymous uploads cannot hold the daemon's memory. */
#define HTTP_ANONYMOUS_BODY_BUDGET (16u << 20)

/* MHD's URI log callback (which creates the exchange, before MHD parses the target), access
 * handler and completion callback; cls is the struct http_exchanges. */
void *http_on_uri(void *cls, const char *uri, struct MHD_Connection *conn);
enum MHD_Result http_on_request(void *cls, struct MHD_Connection *conn, const char *url,
                                const char *method, const char *version, const char *upload_data,
                                size_t *upload_size, void **req_cls);
void http_on_completed(void *cls, struct MHD_Connection *conn, void **req_cls,
                       enum MHD_RequestTerminationCode toe);

/* The header deadline (http_deadline.c): a connection must bring a request's headers within
 * seconds of its start or of its previous response, or it is cut. seconds <= 0: no deadline.
 * Free after the MHD daemon stopped. */
struct http_deadlines *http_deadlines_new(int seconds);
void http_deadlines_free(struct http_deadlines *d);
/* MHD's connection notification (MHD_OPTION_NOTIFY_CONNECTION); cls is the deadlines. */
void http_deadlines_notify(void *cls, struct MHD_Connection *conn, void **socket_context,
                           enum MHD_ConnectionNotificationCode code);
/* The connection's headers arrived (waiting false), or its response went (waiting true: the
 * clock starts again for the next request). From MHD's handler threads. */
void http_deadlines_mark(struct http_deadlines *d, struct MHD_Connection *conn, bool waiting);

#endif
