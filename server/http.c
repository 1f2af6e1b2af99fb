/*
 * http: libmicrohttpd glue. One struct exchange per request holds the api request and
 * response; it is freed by MHD's completion callback.
 *
 * Two libmicrohttpd rules shape this file (see ../shared/reference/machine-limits.md):
 *  - never queue a response on the first call of the access handler, or MHD drops keep-alive;
 *  - resume only a suspended connection: suspension and wake-ups meet under exchange->lock.
 */
#include "server/http.h"

#include <arpa/inet.h>
#include <errno.h>
#include <gnutls/gnutls.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdarg.h>
#include <sys/socket.h>

#include "api/apimetrics.h"
#include "server/core/buf.h"
#include "server/core/clock.h"
#include "server/core/log.h"
#include "server/core/xalloc.h"

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

struct exchange {
    struct http *http;
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
    struct http *h = x->http;
    pthread_mutex_lock(&h->lock);
    if (!x->linked) {
        x->next = h->exchanges;
        if (h->exchanges)
            h->exchanges->prev = x;
        h->exchanges = x;
        x->linked = true;
    }
    pthread_mutex_unlock(&h->lock);
}

static void unlink_exchange(struct exchange *x)
{
    struct http *h = x->http;
    pthread_mutex_lock(&h->lock);
    if (x->linked) {
        if (x->prev)
            x->prev->next = x->next;
        else
            h->exchanges = x->next;
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
    pthread_mutex_lock(&x->http->lock);
    x->http->deferred--;
    pthread_mutex_unlock(&x->http->lock);
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
    if (n == STREAM_ERROR || x->http->stopping || peer_closed(x))
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
    req->api = x->http->api;
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
    if (!x->http->tls_ca)
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
                x->http->opts.max_body_bytes);
    } else {
        api_handle(&x->req, &x->res);
    }
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
                                  const char *method, const char *version, const char *upload_data,
                                  size_t *upload_size, void **req_cls)
{
    (void)version;
    struct http *h = cls;
    struct exchange *x = *req_cls;
    if (!x) {
        /* First call: headers only. Queueing now would cost keep-alive (see the top). */
        x = XNEW(struct exchange);
        x->http = h;
        x->conn = conn;
        x->started = clock_mono_ns();
        pthread_mutex_init(&x->lock, NULL);
        const union MHD_ConnectionInfo *ci =
            MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
        static __thread char addr[64];
        addr[0] = '\0';
        if (ci && ci->client_addr->sa_family == AF_INET)
            inet_ntop(AF_INET, &((struct sockaddr_in *)ci->client_addr)->sin_addr, addr,
                      sizeof(addr));
        else if (ci && ci->client_addr->sa_family == AF_INET6)
            inet_ntop(AF_INET6, &((struct sockaddr_in6 *)ci->client_addr)->sin6_addr, addr,
                      sizeof(addr));
        x->req.client_addr = xstrdup(addr);
        *req_cls = x;
        return MHD_YES;
    }
    if (*upload_size > 0) {
        if (x->body.len + *upload_size > h->opts.max_body_bytes)
            x->too_large = true;
        else
            buf_append(&x->body, upload_data, *upload_size);
        *upload_size = 0;
        return MHD_YES;
    }
    if (!x->handled) {
        handle(x, method, url);
        if (x->res.deferred) {
            pthread_mutex_lock(&h->lock);
            h->deferred++;
            pthread_mutex_unlock(&h->lock);
            link_exchange(x);
            suspend(x);
            x->res.deferred(&x->req, &x->res);
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

static void on_completed(void *cls, struct MHD_Connection *conn, void **req_cls,
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

static void mhd_log(void *cls, const char *fmt, va_list ap)
{
    (void)cls;
    char msg[512];
    vsnprintf(msg, sizeof(msg), fmt, ap);
    size_t n = strlen(msg);
    while (n && (msg[n - 1] == '\n' || msg[n - 1] == '\r'))
        msg[--n] = '\0';
    log_warn("http: %s", msg);
}

bool http_is_loopback(const char *listen)
{
    return strncmp(listen, "127.", 4) == 0 || strncmp(listen, "[::1]", 5) == 0 ||
           strncmp(listen, "localhost:", 10) == 0;
}

/* Parses "host:port" / "[v6]:port" into a socket address. */
static int parse_listen(const char *text, struct sockaddr_storage *ss, socklen_t *len,
                        struct err *err)
{
    char host[80];
    const char *colon = strrchr(text, ':');
    if (!colon || colon == text || (size_t)(colon - text) >= sizeof(host))
        return err_set(err, ERR_INVALID, "listen address '%s' must be HOST:PORT", text);
    memcpy(host, text, (size_t)(colon - text));
    host[colon - text] = '\0';
    char *end;
    long port = strtol(colon + 1, &end, 10);
    if (*end || port < 0 || port > 65535 || colon[1] == '\0')
        return err_set(err, ERR_INVALID, "listen address '%s' has a bad port", text);
    memset(ss, 0, sizeof(*ss));
    if (host[0] == '[') {
        size_t n = strlen(host);
        if (n < 3 || host[n - 1] != ']')
            return err_set(err, ERR_INVALID, "listen address '%s' is not valid", text);
        host[n - 1] = '\0';
        struct sockaddr_in6 *a = (struct sockaddr_in6 *)ss;
        a->sin6_family = AF_INET6;
        a->sin6_port = htons((uint16_t)port);
        if (inet_pton(AF_INET6, host + 1, &a->sin6_addr) != 1)
            return err_set(err, ERR_INVALID, "listen address '%s' is not valid", text);
        *len = sizeof(*a);
        return 0;
    }
    struct sockaddr_in *a = (struct sockaddr_in *)ss;
    a->sin_family = AF_INET;
    a->sin_port = htons((uint16_t)port);
    if (strcmp(host, "localhost") == 0)
        snprintf(host, sizeof(host), "127.0.0.1");
    if (inet_pton(AF_INET, host, &a->sin_addr) != 1)
        return err_set(err, ERR_INVALID, "listen address '%s' is not an IP address", text);
    *len = sizeof(*a);
    return 0;
}

int http_listen_check(const char *listen, struct err *err)
{
    struct sockaddr_storage ss;
    socklen_t len;
    return parse_listen(listen, &ss, &len, err);
}

static char *read_pem(const char *path, struct err *err)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        err_set(err, ERR_IO, "cannot read %s: %s", path, strerror(errno));
        return NULL;
    }
    struct buf b = BUF_INIT;
    char chunk[4096];
    size_t n;
    while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0 && b.len < (1 << 20))
        buf_append(&b, chunk, n);
    fclose(f);
    return buf_detach(&b, NULL);
}

static int load_tls(struct http *h, struct err *err)
{
    if (!h->opts.tls_cert_file)
        return 0;
    h->tls_cert = read_pem(h->opts.tls_cert_file, err);
    h->tls_key = h->tls_cert ? read_pem(h->opts.tls_key_file, err) : NULL;
    if (h->tls_key && h->opts.tls_client_ca_file)
        h->tls_ca = read_pem(h->opts.tls_client_ca_file, err);
    return err_is_set(err) ? -1 : 0;
}

static struct MHD_Daemon *start_daemon(struct http *h, const struct sockaddr_storage *ss,
                                       int listen_fd)
{
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_ALLOW_SUSPEND_RESUME |
                     MHD_USE_ERROR_LOG | MHD_USE_ITC;
    if (((const struct sockaddr *)ss)->sa_family == AF_INET6)
        flags |= MHD_USE_IPv6;
    if (h->tls_cert)
        flags |= MHD_USE_TLS;
    struct MHD_OptionItem opts[16];
    int n = 0;
    opts[n++] = (struct MHD_OptionItem){ MHD_OPTION_EXTERNAL_LOGGER, (intptr_t)mhd_log, NULL };
    opts[n++] =
        (struct MHD_OptionItem){ MHD_OPTION_NOTIFY_COMPLETED, (intptr_t)on_completed, NULL };
    opts[n++] = (struct MHD_OptionItem){ MHD_OPTION_THREAD_POOL_SIZE,
                                         h->opts.threads > 0 ? h->opts.threads : 2, NULL };
    opts[n++] =
        (struct MHD_OptionItem){ MHD_OPTION_CONNECTION_LIMIT, h->opts.connection_limit, NULL };
    opts[n++] =
        (struct MHD_OptionItem){ MHD_OPTION_PER_IP_CONNECTION_LIMIT, h->opts.per_ip_limit, NULL };
    opts[n++] =
        (struct MHD_OptionItem){ MHD_OPTION_CONNECTION_TIMEOUT, h->opts.timeout_seconds, NULL };
    opts[n++] = (struct MHD_OptionItem){ MHD_OPTION_LISTEN_BACKLOG_SIZE, 1024, NULL };
    if (listen_fd >= 0)
        opts[n++] = (struct MHD_OptionItem){ MHD_OPTION_LISTEN_SOCKET, listen_fd, NULL };
    else
        opts[n++] = (struct MHD_OptionItem){ MHD_OPTION_SOCK_ADDR, 0, (void *)ss };
    opts[n++] = (struct MHD_OptionItem){ MHD_OPTION_LISTENING_ADDRESS_REUSE, 1, NULL };
    if (h->tls_cert) {
        opts[n++] = (struct MHD_OptionItem){ MHD_OPTION_HTTPS_MEM_CERT, 0, h->tls_cert };
        opts[n++] = (struct MHD_OptionItem){ MHD_OPTION_HTTPS_MEM_KEY, 0, h->tls_key };
        if (h->tls_ca)
            opts[n++] = (struct MHD_OptionItem){ MHD_OPTION_HTTPS_MEM_TRUST, 0, h->tls_ca };
    }
    opts[n++] = (struct MHD_OptionItem){ MHD_OPTION_END, 0, NULL };
    return MHD_start_daemon(flags, 0, NULL, NULL, on_request, h, MHD_OPTION_ARRAY, opts,
                            MHD_OPTION_END);
}

static void describe_address(struct http *h, const struct sockaddr_storage *ss)
{
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(h->mhd, MHD_DAEMON_INFO_BIND_PORT);
    unsigned port = info ? info->port : 0;
    char host[64];
    if (((const struct sockaddr *)ss)->sa_family == AF_INET6) {
        inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)ss)->sin6_addr, host, sizeof(host));
        snprintf(h->address, sizeof(h->address), "[%s]:%u", host, port);
    } else {
        inet_ntop(AF_INET, &((const struct sockaddr_in *)ss)->sin_addr, host, sizeof(host));
        snprintf(h->address, sizeof(h->address), "%s:%u", host, port);
    }
}

struct http *http_start(struct api *api, const struct http_options *opts, struct err *err)
{
    struct sockaddr_storage ss;
    socklen_t len;
    if (parse_listen(opts->listen, &ss, &len, err) < 0)
        return NULL;
    struct http *h = XNEW(struct http);
    h->api = api;
    h->opts = *opts;
    pthread_mutex_init(&h->lock, NULL);
    if (load_tls(h, err) < 0)
        goto fail;
    h->mhd = start_daemon(h, &ss, -1);
    if (!h->mhd) {
        err_set(err, ERR_UNAVAILABLE, "cannot listen on %s (address in use, or not local?)",
                opts->listen);
        goto fail;
    }
    describe_address(h, &ss);
    return h;
fail:
    free(h->tls_cert);
    free(h->tls_key);
    free(h->tls_ca);
    pthread_mutex_destroy(&h->lock);
    free(h);
    return NULL;
}

const char *http_address(const struct http *h)
{
    return h->address;
}

/* Resumes every suspended exchange so that MHD can close them (it must not stop with any).
 * Deferred responses are waited for first: their work is committed within milliseconds. */
static void resume_all(struct http *h)
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
    for (struct exchange *x = h->exchanges; x; x = x->next)
        wake(x);
    pthread_mutex_unlock(&h->lock);
}

int http_reload_tls(struct http *h, struct err *err)
{
    if (!h->opts.tls_cert_file)
        return 0;
    char *cert = read_pem(h->opts.tls_cert_file, err);
    char *key = cert ? read_pem(h->opts.tls_key_file, err) : NULL;
    if (!key) {
        free(cert);
        return -1;
    }
    /* Hand the listening socket to a new daemon with the new certificate, then close the old
     * one; clients that were streaming reconnect (and resume by sequence number). */
    MHD_socket fd = MHD_quiesce_daemon(h->mhd);
    if (fd == MHD_INVALID_SOCKET) {
        free(cert);
        free(key);
        return err_set(err, ERR_INTERNAL, "cannot hand over the listening socket");
    }
    char *old_cert = h->tls_cert, *old_key = h->tls_key;
    struct MHD_Daemon *old = h->mhd;
    h->tls_cert = cert;
    h->tls_key = key;
    struct sockaddr_storage ss;
    socklen_t len;
    parse_listen(h->opts.listen, &ss, &len, NULL);
    h->mhd = start_daemon(h, &ss, fd);
    if (!h->mhd) {
        h->mhd = old;
        h->tls_cert = old_cert;
        h->tls_key = old_key;
        free(cert);
        free(key);
        return err_set(err, ERR_INTERNAL, "cannot restart the listener with the new certificate");
    }
    resume_all(h);
    MHD_stop_daemon(old);
    pthread_mutex_lock(&h->lock);
    h->stopping = false;
    pthread_mutex_unlock(&h->lock);
    free(old_cert);
    free(old_key);
    return 0;
}

void http_stop(struct http *h)
{
    if (!h)
        return;
    resume_all(h);
    MHD_stop_daemon(h->mhd);
    free(h->tls_cert);
    free(h->tls_key);
    free(h->tls_ca);
    pthread_mutex_destroy(&h->lock);
    free(h);
}
