/*
 * http_exchange: one request's way through libmicrohttpd (see http_internal.h). One struct
 * exchange per request holds the api request and response; it is freed by MHD's completion
 * callback. It reads the headers, query and body, runs api_handle(), and sends the response:
 * buffered, static, deferred (the connection suspended until the work is committed) or
 * streamed (suspended while nothing is ready). It does not listen, load certificates or stop
 * the daemon (http.c).
 *
 * Threads: MHD's handler threads run the callbacks; deferred completions and stream wake-ups
 * come from any thread. Two libmicrohttpd rules shape this file:
 *  - never queue a response on the first call of the access handler: libmicrohttpd 0.9.75
 *    (Debian 12's) then marks it early, answers `Connection: close` and drops keep-alive;
 *  - resume only a suspended connection: suspension and wake-ups meet under exchange->lock.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <gnutls/gnutls.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include "api/apimetrics.h"
#include "core/buf.h"
#include "core/clock.h"
#include "core/xalloc.h"
#include "server/http/http_internal.h"

/* The requests MHD must be told about before it stops (http_internal.h). */
struct http_exchanges {
    struct api *api;
    size_t max_body_bytes;
    bool client_certs;     /* a request must bring a certificate the client CA signed */
    pthread_mutex_t lock;  /* guards the rest: MHD's threads and the main thread */
    struct exchange *list; /* suspended or streaming */
    int deferred;          /* deferred responses not yet complete */
    bool stopping;
};

struct exchange {
    struct http_exchanges *xs;
    struct MHD_Connection *conn;
    struct request req;
    struct response res;
    struct buf body;
    char path[1024];
    bool too_large;
    bool handled;    /* api_handle ran */
    int64_t started; /* monotonic, when the request's headers arrived */
    bool ready;      /* a deferred response is complete */
    pthread_mutex_t lock;
    bool suspended;
    bool wake_pending;
    struct exchange *next, *prev; /* in http->exchanges while suspendable */
    bool linked;
};

static const char *lookup_header(struct request *req, const char *name)
{
    struct exchange *x = req->http_ctx;
    return MHD_lookup_connection_value(x->conn, MHD_HEADER_KIND, name);
}

static const char *lookup_query(struct request *req, const char *name)
{
    struct exchange *x = req->http_ctx;
    return MHD_lookup_connection_value(x->conn, MHD_GET_ARGUMENT_KIND, name);
}

struct query_iter {
    void (*fn)(void *ctx, const char *k, const char *v);
    void *ctx;
};

static enum MHD_Result each_query(void *cls, enum MHD_ValueKind kind, const char *key,
                                  const char *value)
{
    (void)kind;
    struct query_iter *it = cls;
    it->fn(it->ctx, key, value ? value : "");
    return MHD_YES;
}

static void query_each(struct request *req, void (*fn)(void *, const char *, const char *),
                       void *ctx)
{
    struct exchange *x = req->http_ctx;
    struct query_iter it = { fn, ctx };
    MHD_get_connection_values(x->conn, MHD_GET_ARGUMENT_KIND, each_query, &it);
}

static void link_exchange(struct exchange *x)
{
    struct http_exchanges *h = x->xs;
    pthread_mutex_lock(&h->lock);
    if (!x->linked) {
        x->next = h->list;
        if (h->list)
            h->list->prev = x;
        h->list = x;
        x->linked = true;
    }
    pthread_mutex_unlock(&h->lock);
}

static void unlink_exchange(struct exchange *x)
{
    struct http_exchanges *h = x->xs;
    pthread_mutex_lock(&h->lock);
    if (x->linked) {
        if (x->prev)
            x->prev->next = x->next;
        else
            h->list = x->next;
        if (x->next)
            x->next->prev = x->prev;
        x->linked = false;
    }
    pthread_mutex_unlock(&h->lock);
}

/* Suspends unless a wake-up already arrived; call with nothing locked. */
static void suspend(struct exchange *x)
{
    pthread_mutex_lock(&x->lock);
    if (!x->wake_pending && !x->suspended) {
        x->suspended = true;
        MHD_suspend_connection(x->conn);
    }
    x->wake_pending = false;
    pthread_mutex_unlock(&x->lock);
}

/* Wakes a suspended exchange, or leaves a note for the next suspend(). Any thread. */
static void wake(void *ctx)
{
    struct exchange *x = ctx;
    pthread_mutex_lock(&x->lock);
    if (x->suspended) {
        x->suspended = false;
        MHD_resume_connection(x->conn);
    } else {
        x->wake_pending = true;
    }
    pthread_mutex_unlock(&x->lock);
}

static void complete(struct request *req)
{
    struct exchange *x = req->http_ctx;
    pthread_mutex_lock(&x->lock);
    x->ready = true;
    pthread_mutex_unlock(&x->lock);
    pthread_mutex_lock(&x->xs->lock);
    x->xs->deferred--;
    pthread_mutex_unlock(&x->xs->lock);
    wake(x);
}

static enum http_method method_of(const char *m)
{
    static const char *const names[] = {
        "GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"
    };
    for (int i = 0; i < HTTP_METHOD_COUNT; i++)
        if (strcmp(m, names[i]) == 0)
            return (enum http_method)i;
    return HTTP_METHOD_COUNT;
}

static void free_body(void *cls)
{
    free(cls);
}

/* True when the client closed its side (checked while a stream waits). */
static bool peer_closed(struct exchange *x)
{
    const union MHD_ConnectionInfo *info =
        MHD_get_connection_info(x->conn, MHD_CONNECTION_INFO_CONNECTION_FD);
    if (!info)
        return false;
    char b;
    ssize_t n = recv(info->connect_fd, &b, 1, MSG_PEEK | MSG_DONTWAIT);
    return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR);
}

static ssize_t read_stream(void *cls, uint64_t pos, char *buf, size_t max)
{
    (void)pos;
    struct exchange *x = cls;
    ssize_t n = x->res.stream->read(x->res.stream, buf, max);
    if (n > 0)
        return n;
    if (n == STREAM_END)
        return MHD_CONTENT_READER_END_OF_STREAM;
    if (n == STREAM_ERROR || x->xs->stopping || peer_closed(x))
        return MHD_CONTENT_READER_END_WITH_ERROR;
    suspend(x);
    return 0;
}

static struct MHD_Response *make_response(struct exchange *x)
{
    struct response *res = &x->res;
    if (res->stream) {
        res->stream->wake = wake;
        res->stream->http_ctx = x;
        link_exchange(x);
        return MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 64 * 1024, read_stream, x, NULL);
    }
    if (res->static_body)
        return MHD_create_response_from_buffer(res->static_len, (void *)res->static_body,
                                               MHD_RESPMEM_PERSISTENT);
    size_t len;
    char *data = buf_detach(&res->body, &len);
    return MHD_create_response_from_buffer_with_free_callback(len, data, free_body);
}

static enum MHD_Result send_response(struct exchange *x)
{
    struct response *res = &x->res;
    struct MHD_Response *r = make_response(x);
    if (!r)
        return MHD_NO;
    if (res->content_type)
        MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, res->content_type);
    MHD_add_response_header(r, "X-Request-Id", x->req.request_id);
    for (size_t i = 0; i < res->nheaders; i++)
        MHD_add_response_header(r, res->headers[i].name, res->headers[i].value);
    enum MHD_Result rc = MHD_queue_response(x->conn, (unsigned)res->status, r);
    MHD_destroy_response(r);
    return rc;
}

static void prepare_request(struct exchange *x, const char *method, const char *url)
{
    struct request *req = &x->req;
    req->api = x->xs->api;
    req->method = method_of(method);
    snprintf(x->path, sizeof(x->path), "%s", url);
    req->path = x->path;
    req->body = x->body.data ? x->body.data : "";
    req->body_len = x->body.len;
    req->header = lookup_header;
    req->query = lookup_query;
    req->query_each = query_each;
    req->complete = complete;
    req->http_ctx = x;
}

/* With --tls-client-ca, the client must have presented a certificate that CA signed. */
static bool client_cert_ok(struct exchange *x)
{
    if (!x->xs->client_certs)
        return true;
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(x->conn, MHD_CONNECTION_INFO_GNUTLS_SESSION);
    unsigned status = 0;
    return ci && ci->tls_session &&
           gnutls_certificate_verify_peers2(ci->tls_session, &status) == GNUTLS_E_SUCCESS &&
           status == 0;
}

static void handle(struct exchange *x, const char *method, const char *url)
{
    prepare_request(x, method, url);
    x->handled = true;
    if (!client_cert_ok(x)) {
        problem(&x->req, &x->res, ERR_UNAUTHORIZED,
                "this server requires a client certificate signed by its client CA");
    } else if (x->req.method == HTTP_METHOD_COUNT) {
        problem(&x->req, &x->res, ERR_METHOD, "method %s is not supported", method);
    } else if (x->too_large) {
        problem(&x->req, &x->res, ERR_TOO_LARGE, "the request body is larger than %zu bytes",
                x->xs->max_body_bytes);
    } else {
        api_handle(&x->req, &x->res);
    }
}

/* The exchange of a request whose headers just arrived (freed by http_on_completed). */
static struct exchange *exchange_new(struct http_exchanges *h, struct MHD_Connection *conn)
{
    struct exchange *x = XNEW(struct exchange);
    x->xs = h;
    x->conn = conn;
    x->started = clock_mono_ns();
    pthread_mutex_init(&x->lock, NULL);
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    static __thread char addr[64];
    addr[0] = '\0';
    if (ci && ci->client_addr->sa_family == AF_INET)
        inet_ntop(AF_INET, &((struct sockaddr_in *)ci->client_addr)->sin_addr, addr, sizeof(addr));
    else if (ci && ci->client_addr->sa_family == AF_INET6)
        inet_ntop(AF_INET6, &((struct sockaddr_in6 *)ci->client_addr)->sin6_addr, addr,
                  sizeof(addr));
    x->req.client_addr = xstrdup(addr);
    return x;
}

/* Suspends the connection and starts the handler's deferred work, which calls complete(). */
static void defer(struct exchange *x)
{
    struct http_exchanges *h = x->xs;
    pthread_mutex_lock(&h->lock);
    h->deferred++;
    pthread_mutex_unlock(&h->lock);
    link_exchange(x);
    suspend(x);
    x->res.deferred(&x->req, &x->res);
}

enum MHD_Result http_on_request(void *cls, struct MHD_Connection *conn, const char *url,
                                const char *method, const char *version, const char *upload_data,
                                size_t *upload_size, void **req_cls)
{
    (void)version;
    struct http_exchanges *h = cls;
    struct exchange *x = *req_cls;
    if (!x) {
        /* First call: headers only. Queueing now would cost keep-alive (see the top). */
        *req_cls = exchange_new(h, conn);
        return MHD_YES;
    }
    if (*upload_size > 0) {
        if (x->body.len + *upload_size > h->max_body_bytes)
            x->too_large = true;
        else
            buf_append(&x->body, upload_data, *upload_size);
        *upload_size = 0;
        return MHD_YES;
    }
    if (!x->handled) {
        handle(x, method, url);
        if (x->res.deferred) {
            defer(x);
            return MHD_YES;
        }
    } else {
        pthread_mutex_lock(&x->lock);
        bool ready = x->ready;
        pthread_mutex_unlock(&x->lock);
        if (!ready) {
            suspend(x);
            return MHD_YES;
        }
        unlink_exchange(x);
        if (x->res.finish)
            x->res.finish(&x->req, &x->res);
    }
    return send_response(x);
}

void http_on_completed(void *cls, struct MHD_Connection *conn, void **req_cls,
                       enum MHD_RequestTerminationCode toe)
{
    (void)cls;
    (void)conn;
    (void)toe;
    struct exchange *x = *req_cls;
    if (!x)
        return;
    unlink_exchange(x);
    if (x->handled && !x->res.stream)
        apimetrics_observe(x->req.route, x->res.status, clock_mono_ns() - x->started);
    response_release(&x->res);
    buf_release(&x->body);
    free((char *)x->req.client_addr);
    pthread_mutex_destroy(&x->lock);
    free(x);
    *req_cls = NULL;
}

struct http_exchanges *http_exchanges_new(struct api *api, size_t max_body_bytes, bool client_certs)
{
    struct http_exchanges *h = XNEW(struct http_exchanges);
    h->api = api;
    h->max_body_bytes = max_body_bytes;
    h->client_certs = client_certs;
    pthread_mutex_init(&h->lock, NULL);
    return h;
}

void http_exchanges_free(struct http_exchanges *h)
{
    if (!h)
        return;
    pthread_mutex_destroy(&h->lock);
    free(h);
}

void http_exchanges_go_on(struct http_exchanges *h)
{
    pthread_mutex_lock(&h->lock);
    h->stopping = false;
    pthread_mutex_unlock(&h->lock);
}

void http_exchanges_resume_all(struct http_exchanges *h)
{
    for (int i = 0; i < 10000; i++) {
        pthread_mutex_lock(&h->lock);
        int pending = h->deferred;
        pthread_mutex_unlock(&h->lock);
        if (!pending)
            break;
        clock_sleep_ms(1);
    }
    pthread_mutex_lock(&h->lock);
    h->stopping = true;
    for (struct exchange *x = h->list; x; x = x->next)
        wake(x);
    pthread_mutex_unlock(&h->lock);
}
