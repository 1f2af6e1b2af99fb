/*
 * http_internal: what http.c (the listener: address, MHD daemon, TLS, stop) and
 * http_exchange.c (one request: handler call, deferred and streamed responses) say to each
 * other. Each keeps its state to itself: struct http is http.c's, struct http_exchanges (the
 * requests in flight, shared by MHD's handler threads under its lock) is http_exchange.c's.
 * Not for use outside these two files.
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
struct http_exchanges *http_exchanges_new(struct api *api, size_t max_body_bytes,
                                          bool client_certs);
void http_exchanges_free(struct http_exchanges *xs);
/* Resumes every suspended exchange so that MHD can close them (it must not stop with any).
 * Deferred responses are waited for first: their work is committed within milliseconds. From
 * then on streams end; http_exchanges_go_on() undoes that when the listener goes on. */
void http_exchanges_resume_all(struct http_exchanges *xs);
void http_exchanges_go_on(struct http_exchanges *xs);

/* MHD's access handler and completion callback; cls is the struct http_exchanges. */
enum MHD_Result http_on_request(void *cls, struct MHD_Connection *conn, const char *url,
                                const char *method, const char *version, const char *upload_data,
                                size_t *upload_size, void **req_cls);
void http_on_completed(void *cls, struct MHD_Connection *conn, void **req_cls,
                       enum MHD_RequestTerminationCode toe);

#endif
