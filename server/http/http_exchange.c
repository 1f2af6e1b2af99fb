/*
 * http_exchange: one request's way through libmicrohttpd (see http_internal.h). One struct
 * exchange per request holds the api request and response; MHD's URI callback creates it and
 * its completion callback frees it. On the request's headers alone it screens the request: its
 * target (parsed here, http_target.h), its framing (one Content-Length, not over --max-body),
 * then api_admit() (route, token, scope, rate). Only an admitted request has its body read,
 * then api_run(), and the response goes out: buffered, static, deferred (the connection
 * suspended until the work is committed) or streamed (suspended while nothing is ready). It
 * does not listen, load certificates or stop the daemon (http.c).
 *
 * Threads: MHD's handler threads run the callbacks; deferred completions and stream wake-ups
 * come from any thread. Three libmicrohttpd rules shape this file:
 *  - never queue a response on the first call of the access handler: libmicrohttpd 0.9.75
 *    (Debian 12's) then marks it early, answers `Connection: close` and drops keep-alive. A
 *    refusal on the headers waits for the second call, unless a body is coming: then it goes at
 *    once, MHD reads no body after it and closes the connection, which is what a refused upload
 *    should get;
 *  - resume only a suspended connection: suspension and wake-ups meet under exchange->lock;
 *  - MHD parses the query into its per-connection pool and decodes the path in place (see
 *    http_target.h): the URI callback copies the target and ends MHD's copy of the query.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <gnutls/gnutls.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <stdatomic.h>
#include <strings.h>

#include "api/apimetrics.h"
#include "core/buf.h"
#include "core/clock.h"
#include "core/parse.h"
#include "core/xalloc.h"
#include "server/http/http_internal.h"
#include "server/http/http_target.h"

/* The requests MHD must be told about before it stops (http_internal.h). */
struct http_exchanges {
    struct api *api;
    size_t max_body_bytes;
    bool client_certs; /* a request must bring a certificate the client CA signed */
    struct http_deadlines *deadlines;
    atomic_size_t anonymous_bytes; /* bodies buffered before their sender is known */
    pthread_mutex_t lock;          /* guards the rest: MHD's threads and the main thread */
    struct exchange *list;         /* suspended or streaming */
    int deferred;                  /* deferred responses not yet complete */
    bool stopping;
};

/* Where a request is: its headers not yet seen, its body being read (admitted), or answered
 * (res holds a refusal or the handler's response). */
enum phase { PHASE_HEADERS, PHASE_BODY, PHASE_ANSWERED };

struct exchange {
    struct http_exchanges *xs;
    struct MHD_Connection *conn;
    struct request req;
    struct response res;
    struct buf body;
    char *target;      /* as sent, from MHD's URI callback */
    size_t target_len; /* its whole length (target holds at most the limit and one byte) */
    struct http_target parsed;
    enum phase phase;
    size_t anonymous_bytes; /* what it holds of the budget for anonymous uploads */
    bool handled;           /* answered: its status is observed in the metrics */
    int64_t started;        /* monotonic, when the request's headers arrived */
    bool ready;             /* a deferred response is complete */
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
    return http_target_query(&x->parsed, name);
}

static void query_each(struct request *req, void (*fn)(void *, const char *, const char *),
                       void *ctx)
{
    struct exchange *x = req->http_ctx;
    for (size_t i = 0; i < x->parsed.nparams; i++)
        fn(ctx, x->parsed.keys[i], x->parsed.values[i] ? x->parsed.values[i] : "");
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

static void prepare_request(struct exchange *x, const char *method)
{
    struct request *req = &x->req;
    req->api = x->xs->api;
    req->method = method_of(method);
    req->path = "";
    api_request_begin(req);
    req->body = "";
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

/* The target as parsed; false with the refusal in res. The limits are the API's settings. */
static bool target_ok(struct exchange *x)
{
    const struct api_limits *l = &x->xs->api->limits;
    struct http_target_limits lim = { .max_bytes = l->max_url_bytes,
                                      .max_params = (size_t)l->max_query_params };
    struct err err;
    err_init(&err);
    bool ok = http_target_parse(&x->parsed, x->target, x->target_len, &lim, &err) == 0;
    if (ok)
        x->req.path = x->parsed.path;
    if (!ok && strcmp(err.reason, "max_bytes") == 0)
        problem_respond_limit(&x->req, &x->res, &err, "max-url", (long long)lim.max_bytes);
    else if (!ok && strcmp(err.reason, "max_params") == 0)
        problem_respond_limit(&x->req, &x->res, &err, "max-query-params",
                              (long long)lim.max_params);
    else if (!ok) {
        err.reason[0] = '\0'; /* the detail says it all */
        problem_respond(&x->req, &x->res, &err);
    }
    err_release(&err);
    return ok;
}

/* Content-Length headers, for framing checks: how many, and whether they disagree. */
struct lengths {
    int n;
    bool differ;
    const char *first;
};

static enum MHD_Result each_header(void *cls, enum MHD_ValueKind kind, const char *key,
                                   const char *value)
{
    (void)kind;
    struct lengths *l = cls;
    if (strcasecmp(key, MHD_HTTP_HEADER_CONTENT_LENGTH) != 0)
        return MHD_YES;
    if (l->n++ && strcmp(l->first, value ? value : "") != 0)
        l->differ = true;
    else if (l->n == 1)
        l->first = value ? value : "";
    return MHD_YES;
}

/* The body's framing: one length (two that differ are how requests are smuggled past a proxy
 * that reads the other one), not with chunking. *body: the bytes coming (--max-body when
 * chunked: the length is not known), 0 for none. */
static bool framing_ok(struct exchange *x, size_t *body)
{
    struct request *req = &x->req;
    struct lengths l = { 0 };
    MHD_get_connection_values(x->conn, MHD_HEADER_KIND, each_header, &l);
    const char *te = request_header(req, MHD_HTTP_HEADER_TRANSFER_ENCODING);
    int64_t length = 0;
    *body = te ? x->xs->max_body_bytes : 0;
    if (l.differ) {
        problem(req, &x->res, ERR_INVALID, "the request has Content-Length headers that differ");
        return false;
    }
    if (l.n && te) {
        problem(req, &x->res, ERR_INVALID,
                "the request has both Content-Length and Transfer-Encoding");
        return false;
    }
    if (l.n && parse_int64(l.first, 0, INT64_MAX, &length) < 0) {
        problem(req, &x->res, ERR_INVALID, "Content-Length is not a number");
        return false;
    }
    if (!te)
        *body = (uint64_t)length > SIZE_MAX ? SIZE_MAX : (size_t)length;
    return true;
}

/* Reserves what an anonymous upload may hold of the budget, before it is read. */
static bool reserve_anonymous(struct exchange *x, size_t bytes)
{
    struct http_exchanges *h = x->xs;
    size_t was = atomic_fetch_add(&h->anonymous_bytes, bytes);
    x->anonymous_bytes = bytes;
    if (was + bytes <= HTTP_ANONYMOUS_BODY_BUDGET)
        return true;
    struct err err;
    err_init(&err);
    err_set(&err, ERR_UNAVAILABLE, "too many unauthenticated uploads at once; send it again");
    err.retry_after = 1;
    problem_respond(&x->req, &x->res, &err);
    err_release(&err);
    return false;
}

/* Everything the headers can tell, before a body byte is read: false with res holding the
 * refusal. *body: the most bytes coming (0: none). */
static bool screen(struct exchange *x, const char *method, size_t *body)
{
    struct request *req = &x->req;
    if (!framing_ok(x, body)) /* first: what is coming decides when a refusal goes out */
        return false;
    if (!target_ok(x))
        return false;
    if (!client_cert_ok(x)) {
        problem(req, &x->res, ERR_UNAUTHORIZED,
                "this server requires a client certificate signed by its client CA");
        return false;
    }
    if (req->method == HTTP_METHOD_COUNT) {
        problem(req, &x->res, ERR_METHOD, "method %s is not supported", method);
        return false;
    }
    if (!api_admit(req, &x->res)) /* before a limit is told: a stranger learns nothing */
        return false;
    if (*body > x->xs->max_body_bytes) {
        problem_limit(req, &x->res, ERR_TOO_LARGE, "max-body", (long long)x->xs->max_body_bytes,
                      "the request body is larger than %zu bytes", x->xs->max_body_bytes);
        return false;
    }
    return !*body || !api_anonymous_body(req) || reserve_anonymous(x, *body);
}

void *http_on_uri(void *cls, const char *uri, struct MHD_Connection *conn)
{
    struct http_exchanges *h = cls;
    struct exchange *x = XNEW(struct exchange);
    x->xs = h;
    x->conn = conn;
    x->started = clock_mono_ns();
    pthread_mutex_init(&x->lock, NULL);
    x->target_len = strlen(uri);
    size_t keep = h->api->limits.max_url_bytes + 1; /* enough to tell it is too long */
    x->target = xstrndup(uri, x->target_len < keep ? x->target_len : keep);
    /* MHD parses the query after this call, into its pool, from this very buffer: end it at the
     * '?' so that it parses nothing (http_target.h says why; the query is parsed from the copy).
     * The buffer is MHD's read buffer, writable; only the query is touched. */
    char *q = strchr(uri, '?');
    if (q)
        q[1] = '\0';
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    char addr[64] = "";
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

/* The first call: the headers are in. */
static enum MHD_Result on_headers(struct exchange *x, const char *method)
{
    http_deadlines_mark(x->xs->deadlines, x->conn, false);
    prepare_request(x, method);
    size_t body;
    if (screen(x, method, &body)) {
        x->phase = PHASE_BODY;
        return MHD_YES;
    }
    x->phase = PHASE_ANSWERED;
    x->handled = true;
    /* Refused: with a body coming, answer now so that MHD reads none of it (see the top). */
    return body ? send_response(x) : MHD_YES;
}

/* The body is complete: the handler runs. */
static enum MHD_Result on_body_done(struct exchange *x)
{
    x->req.body = x->body.data ? x->body.data : "";
    x->req.body_len = x->body.len;
    x->phase = PHASE_ANSWERED;
    x->handled = true;
    api_run(&x->req, &x->res);
    if (x->res.deferred) {
        defer(x);
        return MHD_YES;
    }
    return send_response(x);
}

enum MHD_Result http_on_request(void *cls, struct MHD_Connection *conn, const char *url,
                                const char *method, const char *version, const char *upload_data,
                                size_t *upload_size, void **req_cls)
{
    (void)url; /* MHD's decoding of it; the exchange parsed its own (http_target.h) */
    (void)version;
    struct exchange *x = *req_cls;
    if (!x) /* no URI callback ran: cannot happen with MHD as configured (http.c) */
        x = *req_cls = http_on_uri(cls, "", conn);
    if (x->phase == PHASE_HEADERS)
        return on_headers(x, method);
    if (*upload_size > 0) {
        size_t n = *upload_size;
        *upload_size = 0;
        if (x->phase != PHASE_BODY)
            return MHD_YES; /* answered already; the rest is not kept */
        /* Only a chunked body can pass --max-body here (a length over it was refused on the
         * headers), and MHD cannot answer in the middle of an upload: the connection ends. */
        if (x->body.len + n > x->xs->max_body_bytes)
            return MHD_NO;
        buf_append(&x->body, upload_data, n);
        return MHD_YES;
    }
    if (x->phase == PHASE_BODY)
        return on_body_done(x);
    if (x->res.deferred) {
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
    struct http_exchanges *h = cls;
    (void)toe;
    struct exchange *x = *req_cls;
    http_deadlines_mark(h->deadlines, conn, true);
    if (!x)
        return;
    unlink_exchange(x);
    if (x->handled && !x->res.stream)
        apimetrics_observe(x->req.route, x->res.status, clock_mono_ns() - x->started);
    atomic_fetch_sub(&h->anonymous_bytes, x->anonymous_bytes);
    response_release(&x->res);
    buf_release(&x->body);
    http_target_release(&x->parsed);
    free(x->target);
    free((char *)x->req.client_addr);
    pthread_mutex_destroy(&x->lock);
    free(x);
    *req_cls = NULL;
}

struct http_exchanges *http_exchanges_new(struct api *api, size_t max_body_bytes, bool client_certs,
                                          struct http_deadlines *deadlines)
{
    struct http_exchanges *h = XNEW(struct http_exchanges);
    h->api = api;
    h->max_body_bytes = max_body_bytes;
    h->client_certs = client_certs;
    h->deadlines = deadlines;
    atomic_init(&h->anonymous_bytes, 0);
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
