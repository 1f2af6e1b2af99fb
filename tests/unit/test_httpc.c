/*
 * Tests of the one HTTP client (core/httpc.c, httpc_util.c) against a real HTTP server on
 * loopback (libmicrohttpd in this process): methods, bodies, headers and the bearer token as
 * the server sees them; the base URL; bounded bodies; timeouts and refused connections and the
 * errors they give; retries of 429/5xx and of refused connections with Retry-After and the
 * retry budget; no redirects, only http(s); streams and stopping them; one connection reused.
 * And the pure parts: the backoff schedule, Retry-After, escaping, URL parts.
 */
#include "tests/unit/check.h"

#include <microhttpd.h>
#include <netinet/in.h>
#include <stdatomic.h>

#include "core/clock.h"
#include "core/addrpolicy.h"
#include "core/httpc.h"

struct server {
    struct MHD_Daemon *mhd;
    int port;
    atomic_int connections, flaky_left, requests;
};

struct upload {
    struct buf body;
};

static enum MHD_Result reply(struct MHD_Connection *c, unsigned status, const char *body,
                             const char *name, const char *value)
{
    struct MHD_Response *r =
        MHD_create_response_from_buffer(strlen(body), (void *)body, MHD_RESPMEM_MUST_COPY);
    if (name)
        MHD_add_response_header(r, name, value);
    enum MHD_Result ret = MHD_queue_response(c, status, r);
    MHD_destroy_response(r);
    return ret;
}

static const char *hdr(struct MHD_Connection *c, const char *name)
{
    const char *v = MHD_lookup_connection_value(c, MHD_HEADER_KIND, name);
    return v ? v : "-";
}

/* A stream of "chunk N\n", one every 5 ms; cls is the number of chunks (0: until stopped). */
static ssize_t stream_chunk(void *cls, uint64_t pos, char *out, size_t max)
{
    (void)pos;
    long *left = cls;
    if (*left == 1)
        return MHD_CONTENT_READER_END_OF_STREAM;
    if (*left > 1)
        (*left)--;
    clock_sleep_ms(5);
    static atomic_int n;
    return snprintf(out, max, "chunk %d\n", atomic_fetch_add(&n, 1));
}

static enum MHD_Result stream(struct MHD_Connection *c, long chunks)
{
    long *left = malloc(sizeof(*left));
    *left = chunks ? chunks + 1 : 0;
    struct MHD_Response *r =
        MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 64, stream_chunk, left, free);
    enum MHD_Result ret = MHD_queue_response(c, 200, r);
    MHD_destroy_response(r);
    return ret;
}

static enum MHD_Result route(struct server *s, struct MHD_Connection *c, const char *url,
                             const char *method, struct upload *up)
{
    char text[512];
    atomic_fetch_add(&s->requests, 1);
    if (strcmp(url, "/echo") == 0) {
        snprintf(text, sizeof(text), "%s|%s|%s|%s|%s", method, hdr(c, "Authorization"),
                 hdr(c, "X-Extra"), hdr(c, "Content-Type"), buf_cstr(&up->body));
        return reply(c, 200, text, "Trainyard-Next-After", "42");
    }
    if (strncmp(url, "/status/", 8) == 0) {
        const char *after = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "after");
        return reply(c, (unsigned)strtol(url + 8, NULL, 10), "status", after ? "Retry-After" : NULL,
                     after);
    }
    if (strcmp(url, "/flaky") == 0)
        return atomic_fetch_sub(&s->flaky_left, 1) > 0 ? reply(c, 503, "busy", NULL, NULL)
                                                       : reply(c, 200, "ok", NULL, NULL);
    if (strcmp(url, "/big") == 0) {
        static char big[100000];
        memset(big, 'x', sizeof(big) - 1);
        return reply(c, 200, big, NULL, NULL);
    }
    if (strcmp(url, "/hang") == 0) {
        clock_sleep_ms(1500);
        return reply(c, 200, "late", NULL, NULL);
    }
    if (strcmp(url, "/redirect") == 0)
        return reply(c, 302, "moved", "Location", "/echo");
    if (strcmp(url, "/stream") == 0)
        return stream(c, 0);
    if (strcmp(url, "/stream3") == 0)
        return stream(c, 3);
    return reply(c, 404, "no such path", NULL, NULL);
}

static enum MHD_Result handler(void *cls, struct MHD_Connection *c, const char *url,
                               const char *method, const char *version, const char *data,
                               size_t *size, void **state)
{
    (void)version;
    struct upload *up = *state;
    if (!up) {
        *state = up = calloc(1, sizeof(*up));
        return MHD_YES;
    }
    if (*size) {
        buf_append(&up->body, data, *size);
        *size = 0;
        return MHD_YES;
    }
    return route(cls, c, url, method, up);
}

static void done(void *cls, struct MHD_Connection *c, void **state,
                 enum MHD_RequestTerminationCode why)
{
    (void)cls, (void)c, (void)why;
    struct upload *up = *state;
    if (up)
        buf_release(&up->body);
    free(up);
    *state = NULL;
}

static void connected(void *cls, struct MHD_Connection *c, void **socket_context,
                      enum MHD_ConnectionNotificationCode code)
{
    (void)c, (void)socket_context;
    struct server *s = cls;
    if (code == MHD_CONNECTION_NOTIFY_STARTED)
        atomic_fetch_add(&s->connections, 1);
}

static int server_start(struct server *s)
{
    memset(s, 0, sizeof(*s));
    struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    s->mhd = MHD_start_daemon(MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD, 0,
                              NULL, NULL, handler, s, MHD_OPTION_NOTIFY_COMPLETED, done, s,
                              MHD_OPTION_NOTIFY_CONNECTION, connected, s, MHD_OPTION_SOCK_ADDR, &sa,
                              MHD_OPTION_END);
    if (!s->mhd)
        return -1;
    s->port = MHD_get_daemon_info(s->mhd, MHD_DAEMON_INFO_BIND_PORT)->port;
    return 0;
}

/* A port nothing listens on: a server's, once stopped. */
static int dead_port(void)
{
    struct server s;
    if (server_start(&s) < 0)
        return 1;
    int port = s.port;
    MHD_stop_daemon(s.mhd);
    return port;
}

struct notices {
    int n;
    char last[512];
};

static void on_notice(void *ctx, const char *msg)
{
    struct notices *n = ctx;
    n->n++;
    snprintf(n->last, sizeof(n->last), "%s", msg);
}

static void requests(struct server *s)
{
    char base[64];
    snprintf(base, sizeof(base), "http://127.0.0.1:%d///", s->port);
    struct httpc_options o = { .base_url = base, .bearer = "tok", .timeout_ms = 300 };
    struct httpc *h = httpc_new(&o, NULL);
    struct httpc_response r;
    httpc_response_init(&r);
    struct err err;
    err_init(&err);
    int before = atomic_load(&s->connections);

    /* GET by default; the token, the extra header; the base URL joined without a "//". */
    const char *const extra[] = { "X-Extra: yes", NULL };
    struct httpc_request get = { .url = "/echo", .headers = extra };
    CHECK_INT(httpc_do(h, &get, &r, &err), 0);
    CHECK_INT(r.status, 200);
    CHECK_STR(buf_cstr(&r.body), "GET|Bearer tok|yes|-|");
    char v[32];
    CHECK_STR(httpc_header(&r, "trainyard-next-after", v, sizeof(v)), "42");
    CHECK(httpc_header(&r, "Retry-After", v, sizeof(v)) == NULL);
    CHECK_INT(r.attempts, 1);

    /* POST when there is a body; other methods as asked, with or without one. */
    const char *const json[] = { "Content-Type: application/json", NULL };
    struct httpc_request post = {
        .url = "/echo", .headers = json, .body = "{\"a\":1}xx", .body_len = 7
    };
    CHECK_INT(httpc_do(h, &post, &r, &err), 0);
    CHECK_STR(buf_cstr(&r.body), "POST|Bearer tok|-|application/json|{\"a\":1}");
    struct httpc_request put = { .method = "PUT", .url = "/echo", .body = "v", .body_len = 1 };
    CHECK_INT(httpc_do(h, &put, &r, &err), 0);
    CHECK_STR(buf_cstr(&r.body), "PUT|Bearer tok|-|application/x-www-form-urlencoded|v");
    struct httpc_request del = { .method = "DELETE", .url = "/echo" };
    CHECK_INT(httpc_do(h, &del, &r, &err), 0);
    CHECK_STR(buf_cstr(&r.body), "DELETE|Bearer tok|-|-|");

    /* An absolute URL ignores the base. Any status is an answer; a redirect is not followed. */
    char abs[96];
    snprintf(abs, sizeof(abs), "http://127.0.0.1:%d/status/404", s->port);
    struct httpc_request rq = { .url = abs };
    CHECK_INT(httpc_do(h, &rq, &r, &err), 0);
    CHECK_INT(r.status, 404);
    rq.url = "/redirect";
    CHECK_INT(httpc_do(h, &rq, &r, &err), 0);
    CHECK_INT(r.status, 302);
    CHECK_STR(buf_cstr(&r.body), "moved");
    CHECK(!err_is_set(&err));
    /* Seven requests, one connection. */
    CHECK_INT(atomic_load(&s->connections) - before, 1);
    httpc_response_release(&r);
    httpc_free(h);
}

static void bounds(struct server *s)
{
    char base[64];
    snprintf(base, sizeof(base), "http://127.0.0.1:%d", s->port);
    struct httpc_options o = { .base_url = base, .timeout_ms = 300, .max_body = 1000 };
    struct httpc *h = httpc_new(&o, NULL);
    struct httpc_response r;
    httpc_response_init(&r);
    struct err err;
    err_init(&err);

    /* A body over max_body: the first bytes, and a flag; the request still succeeds. */
    struct httpc_request big = { .url = "/big" };
    CHECK_INT(httpc_do(h, &big, &r, &err), 0);
    CHECK_INT(r.status, 200);
    CHECK_INT(r.body.len, 1000);
    CHECK(r.truncated);

    /* A server that hangs costs the timeout, then ERR_TIMEOUT naming the URL. */
    int64_t t0 = clock_mono_ns();
    struct httpc_request hang = { .url = "/hang" };
    CHECK_INT(httpc_do(h, &hang, &r, &err), -1);
    CHECK_INT(err.code, ERR_TIMEOUT);
    CHECK((clock_mono_ns() - t0) / NS_PER_MS < 1000);
    CHECK(strstr(err.msg, "/hang") != NULL);
    CHECK_INT(r.status, 0);
    CHECK(!r.truncated);
    err_release(&err);
    /* A request's own timeout overrides the client's. */
    hang.timeout_ms = 3000;
    CHECK_INT(httpc_do(h, &hang, &r, &err), 0);
    CHECK_STR(buf_cstr(&r.body), "late");

    /* Nobody listening: ERR_UNAVAILABLE at once, not retried. */
    char url[64];
    snprintf(url, sizeof(url), "http://127.0.0.1:%d/x", dead_port());
    struct httpc_request refused = { .url = url };
    CHECK_INT(httpc_do(h, &refused, &r, &err), -1);
    CHECK_INT(err.code, ERR_UNAVAILABLE);
    CHECK(strstr(err.msg, "no answer from http://127.0.0.1:") != NULL);
    CHECK_INT(r.attempts, 1);
    CHECK(!r.fatal);
    err_release(&err);

    /* Only http and https, and only https when asked: refused before any connection. */
    struct httpc_request file = { .url = "file:///etc/passwd" };
    CHECK_INT(httpc_do(h, &file, &r, &err), -1);
    CHECK(r.fatal);
    CHECK_INT(r.body.len, 0);
    err_release(&err);
    struct httpc_options tls = { .https_only = true };
    struct httpc *hs = httpc_new(&tls, NULL);
    snprintf(url, sizeof(url), "http://127.0.0.1:%d/echo", s->port);
    struct httpc_request plain = { .url = url };
    CHECK_INT(httpc_do(hs, &plain, &r, &err), -1);
    CHECK(r.fatal);
    err_release(&err);
    httpc_free(hs);
    /* A base URL that is not http(s) is refused when the client is made. */
    struct httpc_options bad = { .base_url = "ftp://127.0.0.1" };
    CHECK(httpc_new(&bad, &err) == NULL);
    CHECK_INT(err.code, ERR_INVALID);
    err_release(&err);
    struct httpc_options bad_tls = { .base_url = base, .https_only = true };
    CHECK(httpc_new(&bad_tls, NULL) == NULL);
    httpc_response_release(&r);
    httpc_free(h);
}

static void retries(struct server *s)
{
    char base[64];
    snprintf(base, sizeof(base), "http://127.0.0.1:%d", s->port);
    struct notices told = { 0 };
    struct httpc_options o = { .base_url = base,
                               .timeout_ms = 1000,
                               .retry_for_ns = 5 * NS_PER_SEC,
                               .notice = on_notice,
                               .notice_ctx = &told };
    struct httpc *h = httpc_new(&o, NULL);
    struct httpc_response r;
    httpc_response_init(&r);
    struct err err;
    err_init(&err);

    /* 503 twice, then 200: a `retry` request gets there, each retry told. */
    atomic_store(&s->flaky_left, 2);
    struct httpc_request rq = { .url = "/flaky", .retry = true };
    CHECK_INT(httpc_do(h, &rq, &r, &err), 0);
    CHECK_INT(r.status, 200);
    CHECK_INT(r.attempts, 3);
    CHECK_INT(told.n, 2);
    CHECK(strstr(told.last, "answered HTTP 503; retrying in ") != NULL);
    /* Without `retry`, the 503 is the answer. */
    atomic_store(&s->flaky_left, 1);
    rq.retry = false;
    CHECK_INT(httpc_do(h, &rq, &r, &err), 0);
    CHECK_INT(r.status, 503);
    CHECK_INT(r.attempts, 1);
    /* A 4xx (and 501) is not retried. */
    rq = (struct httpc_request){ .url = "/status/409", .retry = true };
    CHECK_INT(httpc_do(h, &rq, &r, &err), 0);
    CHECK_INT(r.attempts, 1);
    rq.url = "/status/501";
    CHECK_INT(httpc_do(h, &rq, &r, &err), 0);
    CHECK_INT(r.attempts, 1);

    /* Retry-After is honoured: 429 "after 1 s", then the budget (5 s) is not yet spent. */
    told.n = 0;
    int64_t t0 = clock_mono_ns();
    rq.url = "/status/429?after=1";
    o.retry_for_ns = 1500 * NS_PER_MS;
    struct httpc *quick = httpc_new(&o, NULL);
    CHECK_INT(httpc_do(quick, &rq, &r, &err), 0);
    int64_t ms = (clock_mono_ns() - t0) / NS_PER_MS;
    CHECK_INT(r.status, 429); /* still 429 when the budget ran out: the last answer */
    CHECK_INT(r.retry_after_ms, 1000);
    CHECK_INT(r.attempts, 2);
    CHECK(ms >= 1000 && ms < 3000);
    /* A Retry-After beyond the budget ends the retries at once. */
    rq.url = "/status/503?after=60";
    t0 = clock_mono_ns();
    CHECK_INT(httpc_do(quick, &rq, &r, &err), 0);
    CHECK_INT(r.attempts, 1);
    CHECK((clock_mono_ns() - t0) / NS_PER_MS < 500);

    /* Nobody listening: retried with backoff until the budget is spent, then "lost". */
    char url[64];
    snprintf(url, sizeof(url), "http://127.0.0.1:%d/x", dead_port());
    rq = (struct httpc_request){ .url = url, .retry = true };
    t0 = clock_mono_ns();
    CHECK_INT(httpc_do(quick, &rq, &r, &err), -1);
    ms = (clock_mono_ns() - t0) / NS_PER_MS;
    CHECK_INT(err.code, ERR_UNAVAILABLE);
    CHECK(strstr(err.msg, "lost connection to ") != NULL && strstr(err.msg, "gave up after"));
    CHECK(r.attempts >= 3);
    CHECK(ms >= 1400 && ms < 3000);
    CHECK(strstr(told.last, "retrying in") != NULL);
    err_release(&err);
    httpc_response_release(&r);
    httpc_free(quick);
    httpc_free(h);
}

struct sink {
    struct buf got;
    int stop_after; /* chunks; 0: never */
    int chunks;
};

static int on_data(void *ctx, const char *data, size_t len)
{
    struct sink *k = ctx;
    buf_append(&k->got, data, len);
    return ++k->chunks == k->stop_after;
}

static void streams(struct server *s)
{
    char base[64];
    snprintf(base, sizeof(base), "http://127.0.0.1:%d", s->port);
    /* The client's total timeout does not cut a stream. */
    struct httpc_options o = { .base_url = base, .timeout_ms = 10, .max_body = 64 };
    struct httpc *h = httpc_new(&o, NULL);
    struct httpc_response r;
    httpc_response_init(&r);
    struct err err;
    err_init(&err);

    struct sink k = { BUF_INIT, 0, 0 };
    struct httpc_request rq = { .url = "/stream3", .stream = on_data, .stream_ctx = &k };
    CHECK_INT(httpc_do(h, &rq, &r, &err), 0);
    CHECK_INT(r.status, 200);
    CHECK_INT(r.body.len, 0); /* a 2xx stream goes to the callback only */
    CHECK(strstr(buf_cstr(&k.got), "chunk") != NULL);
    CHECK_INT(strchr(buf_cstr(&k.got), '\n') != NULL, 1);
    CHECK(!r.stopped);
    /* An endless stream, stopped by its reader after 4 chunks: an answer, not an error. */
    buf_reset(&k.got);
    k.chunks = 0;
    k.stop_after = 4;
    rq.url = "/stream";
    CHECK_INT(httpc_do(h, &rq, &r, &err), 0);
    CHECK(r.stopped);
    CHECK_INT(k.chunks, 4);
    /* A non-2xx answer to a stream is kept as a body, for the caller to show. */
    rq.url = "/status/404";
    k.chunks = 0;
    CHECK_INT(httpc_do(h, &rq, &r, &err), 0);
    CHECK_INT(r.status, 404);
    CHECK_STR(buf_cstr(&r.body), "status");
    CHECK_INT(k.chunks, 0);
    CHECK(!err_is_set(&err));
    buf_release(&k.got);
    httpc_response_release(&r);
    httpc_free(h);
}

static void pure(void)
{
    /* Exponential with equal jitter: within [d/2, d] for d = 200ms * 2^n, capped at 5 s. */
    CHECK_INT(httpc_backoff_ms(0, 0, -1), 100);
    CHECK_INT(httpc_backoff_ms(0, 100, -1), 200);
    CHECK_INT(httpc_backoff_ms(3, 0, -1), 800);
    CHECK_INT(httpc_backoff_ms(3, 800, -1), 1600);
    CHECK_INT(httpc_backoff_ms(30, 0, -1), 2500);
    CHECK_INT(httpc_backoff_ms(30, 2500, -1), 5000);
    for (uint64_t rnd = 0; rnd < 10000; rnd += 37) {
        int64_t d = httpc_backoff_ms(2, rnd, -1);
        CHECK(d >= 400 && d <= 800);
    }
    /* Retry-After wins when longer, not when shorter. */
    CHECK_INT(httpc_backoff_ms(0, 0, 3000), 3000);
    CHECK_INT(httpc_backoff_ms(5, 0, 10), 2500);
    /* Seconds, or an HTTP date relative to now (in the past: now). */
    CHECK_INT(httpc_retry_after_ms("7", 0), 7000);
    CHECK_INT(httpc_retry_after_ms("120", 0), 120000);
    CHECK_INT(httpc_retry_after_ms("Wed, 21 Oct 2015 07:28:10 GMT", 1445412480LL * NS_PER_SEC),
              10000);
    CHECK_INT(httpc_retry_after_ms("Wed, 21 Oct 2015 07:28:00 GMT", 1445412490LL * NS_PER_SEC), 0);
    CHECK_INT(httpc_retry_after_ms("soon", 0), -1);
    CHECK_INT(httpc_retry_after_ms("-5", 0), -1);
    CHECK_INT(httpc_retry_after_ms("", 0), -1);
    CHECK_INT(httpc_retry_after_ms(NULL, 0), -1);
    CHECK(httpc_status_retryable(429) && httpc_status_retryable(500) &&
          httpc_status_retryable(503));
    CHECK(!httpc_status_retryable(501) && !httpc_status_retryable(505) &&
          !httpc_status_retryable(404) && !httpc_status_retryable(409) &&
          !httpc_status_retryable(200));
    struct buf b = BUF_INIT;
    httpc_escape(&b, "a b/c?d=é~");
    CHECK_STR(buf_cstr(&b), "a%20b%2Fc%3Fd%3D%C3%A9~");
    buf_release(&b);

    struct httpc_url u;
    CHECK_INT(
        httpc_url_parse("https://user:pw@sns.eu-west-1.amazonaws.com:8443/a.pem?x=1#f", &u, NULL),
        0);
    CHECK_STR(u.scheme, "https");
    CHECK_STR(u.user, "user");
    CHECK_STR(u.password, "pw");
    CHECK_STR(u.host, "sns.eu-west-1.amazonaws.com");
    CHECK_STR(u.port, "8443");
    CHECK_STR(u.path, "/a.pem");
    CHECK_STR(u.query, "x=1");
    CHECK_STR(u.fragment, "f");
    httpc_url_release(&u);
    /* Absent parts are NULL (the default port is not "given"); the path is at least "/". */
    CHECK_INT(httpc_url_parse("https://example.com", &u, NULL), 0);
    CHECK(!u.user && !u.password && !u.port && !u.query && !u.fragment);
    CHECK_STR(u.path, "/");
    httpc_url_release(&u);
    struct err err;
    err_init(&err);
    CHECK_INT(httpc_url_parse("http://exa mple.com/", &u, &err), -1);
    CHECK_INT(err.code, ERR_INVALID);
    httpc_url_release(&u);
    err_release(&err);
}

/* Issue 17: webhook URLs reached link-local and metadata addresses. public_only refuses them on
 * the address each connection goes to; the policy itself on address bytes. */
static void destinations(struct server *s)
{
    static const char *const refused[] = { "127.0.0.1",
                                           "127.9.9.9",
                                           "0.0.0.0",
                                           "169.254.169.254",
                                           "169.254.10.1",
                                           "100.100.100.200",
                                           "::1",
                                           "::",
                                           "fe80::1",
                                           "fd00:ec2::254",
                                           "::ffff:127.0.0.1",
                                           "64:ff9b::a9fe:a9fe",
                                           "::169.254.169.254",
                                           "224.0.0.1" };
    static const char *const allowed[] = { "10.0.0.5", "192.168.1.1", "172.16.0.1",
                                           "8.8.8.8",  "fd12::1",     "2001:db8::1" };
    struct err err;
    err_init(&err);
    for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
        if (addrpolicy_check_host(refused[i], &err) == 0)
            fprintf(stderr, "allowed: %s\n", refused[i]);
        CHECK_INT(err.code, ERR_INVALID);
        err_release(&err);
        err_init(&err);
    }
    for (size_t i = 0; i < sizeof(allowed) / sizeof(allowed[0]); i++)
        CHECK_INT(addrpolicy_check_host(allowed[i], NULL), 0);
    CHECK_INT(addrpolicy_check_host("[::1]", NULL), -1);
    CHECK_INT(addrpolicy_check_host("localhost", NULL), -1);

    char url[64];
    snprintf(url, sizeof(url), "http://127.0.0.1:%d/echo", s->port);
    struct httpc_options o = { .timeout_ms = 1000, .public_only = true };
    struct httpc *h = httpc_new(&o, NULL);
    struct httpc_response r;
    httpc_response_init(&r);
    struct httpc_request get = { .url = url };
    CHECK_INT(httpc_do(h, &get, &r, &err), -1);
    CHECK(strstr(err.msg, "127.0.0.1: a loopback address") != NULL);
    CHECK(r.fatal);
    err_release(&err);
    err_init(&err);
    httpc_free(h);
    o.public_only = false;
    h = httpc_new(&o, NULL);
    CHECK_INT(httpc_do(h, &get, &r, &err), 0);
    CHECK_INT(r.status, 200);
    httpc_response_release(&r);
    httpc_free(h);
    err_release(&err);
}

int main(void)
{
    pure();
    struct server s;
    if (server_start(&s) < 0) {
        CHECK(!"the test server did not start");
        return check_done();
    }
    requests(&s);
    bounds(&s);
    retries(&s);
    streams(&s);
    destinations(&s);
    MHD_stop_daemon(s.mhd);
    return check_done();
}
