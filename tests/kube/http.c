/*
 * http: libmicrohttpd glue. Each connection has its own thread (MHD_USE_THREAD_PER_CONNECTION),
 * so a watch or log-follow stream may block in its callback waiting for the world to change.
 * Authentication happens here, before routing: every path except /_test/ (the control API) and
 * the health checks needs a valid bearer token, as on a cluster without anonymous access. Over
 * plain HTTP (no --tls) client-go never sends credentials, so there a request without an
 * Authorization header is served like on the API server's old insecure port; a token that is
 * sent is still checked, so expiry can be tested over HTTP with curl or trainyard.
 * Ownership: a request's body buffer and reply live in a per-connection context freed by MHD's
 * completion callback.
 */
#include "tests/kube/http.h"

#include <arpa/inet.h>
#include <microhttpd.h>
#include <netinet/in.h>

#include "core/jsonx.h"
#include "core/xalloc.h"
#include "tests/kube/auth.h"
#include "tests/kube/status.h"
#include "tests/kube/world.h"

#define MAX_BODY (3 * 1024 * 1024) /* kube-apiserver's limit for a request body */

struct http {
    struct MHD_Daemon *daemon;
    struct world *w;
    int port;
    bool tls; /* over plain HTTP a request without credentials is let in (see below) */
    bool open;
    void (*route)(struct request *req, struct reply *rep);
};

struct conn_ctx {
    struct buf body;
    bool too_large;
};

void reply_init(struct reply *rep)
{
    memset(rep, 0, sizeof(*rep));
    buf_init(&rep->body);
    rep->code = 200;
    rep->content_type = "application/json";
}

void reply_json(struct reply *rep, int code, json_t *v)
{
    buf_reset(&rep->body);
    jsonx_dump(&rep->body, v);
    buf_putc(&rep->body, '\n');
    json_decref(v);
    rep->code = code;
    rep->content_type = "application/json";
}

void reply_text(struct reply *rep, int code, const char *text, size_t len)
{
    buf_reset(&rep->body);
    buf_append(&rep->body, text, len);
    rep->code = code;
    rep->content_type = "text/plain";
}

const char *request_query(const struct request *req, const char *key)
{
    return MHD_lookup_connection_value(req->conn, MHD_GET_ARGUMENT_KIND, key);
}

const char *request_header(const struct request *req, const char *key)
{
    return MHD_lookup_connection_value(req->conn, MHD_HEADER_KIND, key);
}

struct stream_box {
    reply_stream_fn fn;
    void (*free_fn)(void *ctx);
    void *ctx;
};

static ssize_t stream_cb(void *cls, uint64_t pos, char *out, size_t max)
{
    (void)pos;
    struct stream_box *box = cls;
    ssize_t n = box->fn(box->ctx, out, max);
    return n < 0 ? MHD_CONTENT_READER_END_OF_STREAM : n;
}

static void stream_free(void *cls)
{
    struct stream_box *box = cls;
    if (box->free_fn)
        box->free_fn(box->ctx);
    free(box);
}

static enum MHD_Result send_reply(struct MHD_Connection *conn, struct reply *rep)
{
    struct MHD_Response *resp;
    if (rep->stream) {
        struct stream_box *box = XNEW(struct stream_box);
        box->fn = rep->stream;
        box->free_fn = rep->stream_free;
        box->ctx = rep->stream_ctx;
        resp =
            MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 4096, stream_cb, box, stream_free);
    } else {
        size_t len;
        char *data = buf_detach(&rep->body, &len);
        resp = MHD_create_response_from_buffer(len, data, MHD_RESPMEM_MUST_FREE);
    }
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, rep->content_type);
    MHD_add_response_header(resp, "Cache-Control", "no-cache, private");
    if (rep->retry_after > 0) {
        char secs[16];
        snprintf(secs, sizeof(secs), "%d", rep->retry_after);
        MHD_add_response_header(resp, MHD_HTTP_HEADER_RETRY_AFTER, secs);
    }
    enum MHD_Result rc = MHD_queue_response(conn, (unsigned)rep->code, resp);
    MHD_destroy_response(resp);
    return rc;
}

static bool needs_auth(const char *path)
{
    return strncmp(path, "/_test/", 7) && strcmp(path, "/healthz") && strcmp(path, "/livez") &&
           strcmp(path, "/readyz");
}

static enum MHD_Result handle(void *cls, struct MHD_Connection *conn, const char *url,
                              const char *method, const char *version, const char *upload,
                              size_t *upload_size, void **con_cls)
{
    (void)version;
    struct http *h = cls;
    struct conn_ctx *cc = *con_cls;
    if (!cc) {
        *con_cls = XNEW(struct conn_ctx);
        return MHD_YES;
    }
    if (*upload_size) {
        if (cc->body.len + *upload_size > MAX_BODY)
            cc->too_large = true;
        else
            buf_append(&cc->body, upload, *upload_size);
        *upload_size = 0;
        return MHD_YES;
    }
    struct reply rep;
    reply_init(&rep);
    struct request req = { .w = h->w,
                           .conn = conn,
                           .method = method,
                           .path = url,
                           .body = buf_cstr(&cc->body),
                           .body_len = cc->body.len };
    const char *authz = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Authorization");
    if (cc->too_large) {
        reply_json(&rep, 413,
                   status_new(413, "RequestEntityTooLarge",
                              "the request body is larger than 3145728 bytes"));
    } else if (!h->open && needs_auth(url) && (authz || h->tls) && auth_check(h->w, authz) < 0) {
        reply_json(&rep, 401, status_new(401, "Unauthorized", "Unauthorized"));
    } else {
        (h->route ? h->route : route_request)(&req, &rep);
    }
    enum MHD_Result rc = send_reply(conn, &rep);
    buf_release(&rep.body);
    return rc;
}

static void completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                      enum MHD_RequestTerminationCode toe)
{
    (void)cls, (void)conn, (void)toe;
    struct conn_ctx *cc = *con_cls;
    if (cc) {
        buf_release(&cc->body);
        free(cc);
        *con_cls = NULL;
    }
}

struct http *http_open(struct world *w, const struct http_options *opt, struct err *err)
{
    struct http *h = XNEW(struct http);
    h->w = w;
    h->tls = opt->tls_cert_pem != NULL;
    h->route = opt->route;
    h->open = opt->open;
    struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)opt->port) };
    if (inet_pton(AF_INET, opt->host, &sa.sin_addr) != 1) {
        free(h);
        err_set(err, ERR_INVALID, "bad listen address %s", opt->host);
        return NULL;
    }
    /* poll(), not select(): a daemon following thousands of pods opens more connections than
     * FD_SETSIZE (a real API server multiplexes them over HTTP/2). */
    unsigned flags = MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD |
                     MHD_USE_POLL | MHD_USE_ERROR_LOG;
    if (opt->tls_cert_pem)
        flags |= MHD_USE_TLS;
    struct MHD_OptionItem tls[] = {
        { MHD_OPTION_HTTPS_MEM_KEY, 0, (void *)opt->tls_key_pem },
        { MHD_OPTION_HTTPS_MEM_CERT, 0, (void *)opt->tls_cert_pem },
        { MHD_OPTION_END, 0, NULL },
    };
    struct MHD_OptionItem none[] = { { MHD_OPTION_END, 0, NULL } };
    h->daemon = MHD_start_daemon(
        flags, 0, NULL, NULL, handle, h, MHD_OPTION_SOCK_ADDR, &sa, MHD_OPTION_NOTIFY_COMPLETED,
        completed, h, MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)120, MHD_OPTION_CONNECTION_LIMIT,
        (unsigned)16384, MHD_OPTION_ARRAY, opt->tls_cert_pem ? tls : none, MHD_OPTION_END);
    if (!h->daemon) {
        free(h);
        err_set(err, ERR_IO, "cannot listen on %s:%d", opt->host, opt->port);
        return NULL;
    }
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(h->daemon, MHD_DAEMON_INFO_BIND_PORT);
    h->port = info ? info->port : opt->port;
    return h;
}

int http_port(const struct http *h)
{
    return h->port;
}

void http_close(struct http *h)
{
    if (!h)
        return;
    MHD_stop_daemon(h->daemon);
    free(h);
}
