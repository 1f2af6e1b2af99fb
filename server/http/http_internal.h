/*
 * http_internal: the listener's state, shared by http.c (address, MHD daemon, TLS, stop) and
 * http_exchange.c (one request: handler call, deferred and streamed responses). Not for use
 * outside these two files. exchanges, deferred and stopping are shared by MHD's handler threads
 * and the main thread under `lock`; the other fields are written by the main thread only
 * (http_start, http_reload_tls).
 */
#ifndef TY_HTTP_INTERNAL_H
#define TY_HTTP_INTERNAL_H

#include <microhttpd.h>
#include <pthread.h>

#include "server/http/http.h"

struct http {
    struct api *api;
    struct MHD_Daemon *mhd;
    struct http_options opts;
    char address[96];
    char *tls_cert, *tls_key, *tls_ca; /* PEM text kept alive for MHD */
    pthread_mutex_t lock;              /* guards exchanges and stopping */
    struct exchange *exchanges;        /* suspended or streaming, for shutdown */
    int deferred;                      /* deferred responses not yet complete */
    bool stopping;
};

/* http_exchange.c: MHD's access handler and completion callback (cls is the struct http). */
enum MHD_Result http_on_request(void *cls, struct MHD_Connection *conn, const char *url,
                                const char *method, const char *version, const char *upload_data,
                                size_t *upload_size, void **req_cls);
void http_on_completed(void *cls, struct MHD_Connection *conn, void **req_cls,
                       enum MHD_RequestTerminationCode toe);
/* Resumes every suspended exchange so that MHD can close them (it must not stop with any).
 * Deferred responses are waited for first: their work is committed within milliseconds. Sets
 * h->stopping; the caller clears it if the daemon goes on. */
void http_resume_all(struct http *h);

#endif
