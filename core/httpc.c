/*
 * httpc: the libcurl easy handle behind every synchronous request (see httpc.h). It does not
 * log, sign or decide what a status means: retry notices go to the caller's callback, answers
 * to the caller. The handle is reset between requests but keeps its connection cache
 * (keep-alive). One thread per struct httpc. The pure helpers (backoff, Retry-After, escaping,
 * URL parts) are in httpc_util.c.
 */
#include "core/httpc.h"

#include <arpa/inet.h>
#include <curl/curl.h>
#include <pthread.h>
#include <strings.h>
#include <time.h>

#include "core/addrpolicy.h"
#include "core/clock.h"
#include "core/crypto.h"
#include "core/xalloc.h"

#define HEADERS_MAX (16u << 10)

struct httpc {
    CURL *curl;
    struct httpc_options o; /* defaults filled in; strings below are the copies */
    char *base;             /* without a trailing '/', or NULL */
    char *auth;             /* "Authorization: Bearer ..." or NULL */
    char *ca_file;
    char *user_agent;
    char errbuf[CURL_ERROR_SIZE];
    char refused[160]; /* public_only: the address the last attempt was refused, and why */
};

static pthread_once_t global_once = PTHREAD_ONCE_INIT;

static void global_init(void)
{
    curl_global_init(CURL_GLOBAL_DEFAULT);
}

static bool http_url(const char *url, bool https_only)
{
    return strncasecmp(url, "https://", 8) == 0 ||
           (!https_only && strncasecmp(url, "http://", 7) == 0);
}

struct httpc *httpc_new(const struct httpc_options *opts, struct err *err)
{
    const struct httpc_options none = { 0 };
    const struct httpc_options *o = opts ? opts : &none;
    if (o->base_url && !http_url(o->base_url, o->https_only)) {
        err_set(err, ERR_INVALID, "the URL %s is not %s", o->base_url,
                o->https_only ? "https://" : "http:// or https://");
        return NULL;
    }
    pthread_once(&global_once, global_init);
    struct httpc *h = XNEW(struct httpc);
    h->o = *o;
    if (h->o.connect_timeout_ms <= 0)
        h->o.connect_timeout_ms = 3000;
    if (h->o.timeout_ms <= 0)
        h->o.timeout_ms = 10000;
    if (h->o.max_body == 0)
        h->o.max_body = 64 * 1024;
    if (h->o.retry_for_ns <= 0)
        h->o.retry_for_ns = 60 * NS_PER_SEC;
    if (o->base_url) {
        size_t n = strlen(o->base_url);
        while (n > 0 && o->base_url[n - 1] == '/')
            n--;
        h->base = xstrndup(o->base_url, n);
    }
    if (o->bearer && *o->bearer)
        h->auth = xasprintf("Authorization: Bearer %s", o->bearer);
    h->ca_file = o->ca_file && *o->ca_file ? xstrdup(o->ca_file) : NULL;
    h->user_agent = xstrdup(o->user_agent ? o->user_agent : "trainyard/" TY_VERSION);
    h->o.base_url = h->o.bearer = h->o.ca_file = h->o.user_agent = NULL; /* not kept: copied */
    h->curl = curl_easy_init();
    if (!h->curl)
        abort(); /* only fails when out of memory */
    return h;
}

void httpc_free(struct httpc *h)
{
    if (!h)
        return;
    curl_easy_cleanup(h->curl);
    free(h->base);
    free(h->auth);
    free(h->ca_file);
    free(h->user_agent);
    free(h);
}

void httpc_response_init(struct httpc_response *r)
{
    memset(r, 0, sizeof(*r));
    r->retry_after_ms = -1;
}

void httpc_response_release(struct httpc_response *r)
{
    buf_release(&r->body);
    buf_release(&r->headers);
    httpc_response_init(r);
}

/* Forgets what an earlier answer (a retried attempt, a 100 Continue) left. */
static void response_reset(struct httpc_response *r)
{
    buf_reset(&r->body);
    buf_reset(&r->headers);
    r->status = 0;
    r->truncated = false;
    r->retry_after_ms = -1;
    r->stopped = false;
    r->fatal = false;
}

struct transfer {
    struct httpc *h;
    const struct httpc_request *rq;
    struct httpc_response *resp;
};

static size_t on_header(char *data, size_t size, size_t n, void *ctx)
{
    struct transfer *t = ctx;
    size_t len = size * n;
    if (len > 5 && strncmp(data, "HTTP/", 5) == 0)
        response_reset(t->resp); /* a new answer: after 100 Continue, only the last counts */
    else if (t->resp->headers.len + len <= HEADERS_MAX)
        buf_append(&t->resp->headers, data, len);
    return len;
}

static size_t on_body(char *data, size_t size, size_t n, void *ctx)
{
    struct transfer *t = ctx;
    struct httpc_response *r = t->resp;
    size_t len = size * n;
    if (t->rq->stream && !r->status)
        curl_easy_getinfo(t->h->curl, CURLINFO_RESPONSE_CODE, &r->status);
    if (t->rq->stream && r->status >= 200 && r->status < 300) {
        if (t->rq->stream(t->rq->stream_ctx, data, len) != 0) {
            r->stopped = true;
            return 0; /* aborts the transfer */
        }
        return len;
    }
    size_t room = t->h->o.max_body - r->body.len;
    if (len > room)
        r->truncated = true;
    buf_append(&r->body, data, len < room ? len : room);
    return len;
}

/* The request's headers: the client's, then the caller's. */
static struct curl_slist *header_list(const struct httpc *h, const struct httpc_request *rq)
{
    /* Without "Expect:" libcurl sends "Expect: 100-continue" on larger bodies and waits. */
    struct curl_slist *l = curl_slist_append(NULL, "Expect:");
    if (h->auth)
        l = curl_slist_append(l, h->auth);
    for (size_t i = 0; rq->headers && rq->headers[i]; i++)
        l = curl_slist_append(l, rq->headers[i]);
    return l;
}

static void set_method(CURL *c, const struct httpc_request *rq)
{
    const char *m = rq->method ? rq->method : rq->body ? "POST" : "GET";
    if (strcmp(m, "GET") == 0) {
        curl_easy_setopt(c, CURLOPT_HTTPGET, 1L);
        return;
    }
    if (strcmp(m, "POST") != 0)
        curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, m);
    if (rq->body || strcmp(m, "POST") == 0 || strcmp(m, "PUT") == 0 || strcmp(m, "PATCH") == 0) {
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, rq->body ? (const char *)rq->body : "");
        curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)(rq->body ? rq->body_len : 0));
    }
}

/* public_only: every socket libcurl opens for a connection is checked on its address first. */
static curl_socket_t open_socket(void *ctx, curlsocktype purpose, struct curl_sockaddr *a)
{
    struct httpc *h = ctx;
    const char *why = addrpolicy_refuses(&a->addr);
    if (purpose == CURLSOCKTYPE_IPCXN && why) {
        char text[INET6_ADDRSTRLEN] = "?";
        const void *bytes = a->family == AF_INET
                                ? (const void *)&((struct sockaddr_in *)&a->addr)->sin_addr
                                : (const void *)&((struct sockaddr_in6 *)&a->addr)->sin6_addr;
        inet_ntop(a->family, bytes, text, sizeof(text));
        snprintf(h->refused, sizeof(h->refused), "refused to connect to %s: a %s address", text,
                 why);
        return CURL_SOCKET_BAD;
    }
    return socket(a->family, a->socktype, a->protocol);
}

static void setup(struct httpc *h, const char *url, struct transfer *t, struct curl_slist *list)
{
    CURL *c = h->curl;
    long total = t->rq->timeout_ms > 0 ? t->rq->timeout_ms : h->o.timeout_ms;
    curl_easy_reset(c);
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L);
    curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, h->o.https_only ? "https" : "http,https");
    curl_easy_setopt(c, CURLOPT_SSL_VERIFYPEER, 1L);
    curl_easy_setopt(c, CURLOPT_SSL_VERIFYHOST, 2L);
    if (h->ca_file)
        curl_easy_setopt(c, CURLOPT_CAINFO, h->ca_file);
    /* A stream has no total timeout to bound its connect timeout. */
    long connect = h->o.connect_timeout_ms;
    if (!t->rq->stream && total < connect)
        connect = total;
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, connect);
    if (t->rq->stream) {
        curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, 1L);
        curl_easy_setopt(c, CURLOPT_LOW_SPEED_TIME, (long)HTTPC_STREAM_SILENCE_S);
    } else {
        curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, total);
    }
    curl_easy_setopt(c, CURLOPT_USERAGENT, h->user_agent);
    curl_easy_setopt(c, CURLOPT_ERRORBUFFER, h->errbuf);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, t);
    curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(c, CURLOPT_HEADERDATA, t);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, list);
    set_method(c, t->rq);
    if (h->o.public_only) {
        curl_easy_setopt(c, CURLOPT_OPENSOCKETFUNCTION, open_socket);
        curl_easy_setopt(c, CURLOPT_OPENSOCKETDATA, h);
        curl_easy_setopt(c, CURLOPT_PROXY, "");
    }
    h->errbuf[0] = '\0';
    h->refused[0] = '\0';
}

/* One attempt. 0 with resp->status when an answer came; -1 with libcurl's reason in why and
 * *timed_out set when the time ran out. */
static int attempt(struct httpc *h, const char *url, const struct httpc_request *rq,
                   struct httpc_response *resp, char *why, size_t cap, bool *timed_out)
{
    struct transfer t = { h, rq, resp };
    struct curl_slist *list = header_list(h, rq);
    response_reset(resp);
    setup(h, url, &t, list);
    CURLcode rc = curl_easy_perform(h->curl);
    curl_easy_setopt(h->curl, CURLOPT_HTTPHEADER, NULL);
    curl_slist_free_all(list);
    if (rc == CURLE_OK || (rc == CURLE_WRITE_ERROR && resp->stopped)) {
        char v[128];
        curl_easy_getinfo(h->curl, CURLINFO_RESPONSE_CODE, &resp->status);
        resp->retry_after_ms =
            httpc_retry_after_ms(httpc_header(resp, "Retry-After", v, sizeof(v)), clock_now_ns());
        return 0;
    }
    snprintf(why, cap, "%s",
             h->refused[0]  ? h->refused
             : h->errbuf[0] ? h->errbuf
                            : curl_easy_strerror(rc));
    *timed_out = rc == CURLE_OPERATION_TIMEDOUT;
    resp->fatal = rc == CURLE_PEER_FAILED_VERIFICATION || rc == CURLE_SSL_CACERT_BADFILE ||
                  rc == CURLE_SSL_CERTPROBLEM || rc == CURLE_URL_MALFORMAT ||
                  rc == CURLE_UNSUPPORTED_PROTOCOL || h->refused[0];
    return -1;
}

static void tell(struct httpc *h, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void tell(struct httpc *h, const char *fmt, ...)
{
    if (!h->o.notice)
        return;
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    h->o.notice(h->o.notice_ctx, msg);
}

/* How long to wait before the next attempt of a `retry` request; -1: stop now. */
static int64_t next_delay(struct httpc *h, int n, int64_t start, const struct httpc_response *r)
{
    uint64_t rnd;
    crypto_random(&rnd, sizeof(rnd));
    int64_t delay = httpc_backoff_ms(n, rnd, r->retry_after_ms);
    int64_t left_ms = (h->o.retry_for_ns - (clock_mono_ns() - start)) / NS_PER_MS;
    /* The last attempt is made when the budget runs out, not a backoff step before it; a
     * Retry-After beyond the budget ends the retries at once. */
    if (delay > left_ms && r->retry_after_ms < delay)
        delay = left_ms;
    return left_ms <= 0 || delay > left_ms ? -1 : delay;
}

int httpc_do(struct httpc *h, const struct httpc_request *rq, struct httpc_response *resp,
             struct err *err)
{
    char *url =
        rq->url[0] == '/' && h->base ? xasprintf("%s%s", h->base, rq->url) : xstrdup(rq->url);
    const char *target = h->base ? h->base : url; /* what messages name */
    bool retry = rq->retry && !rq->stream;
    int64_t start = clock_mono_ns();
    char why[CURL_ERROR_SIZE + 64];
    int ret = 0;
    for (int n = 0;; n++) {
        bool timed_out = false;
        int rc = attempt(h, url, rq, resp, why, sizeof(why), &timed_out);
        resp->attempts = n + 1;
        if (rc == 0 && !(retry && httpc_status_retryable(resp->status)))
            goto out;
        if (!retry || (rc < 0 && resp->fatal)) {
            ret = err_set(err, timed_out ? ERR_TIMEOUT : ERR_UNAVAILABLE, "%s %s: %s",
                          resp->status ? "lost connection to" : "no answer from", url, why);
            goto out;
        }
        if (rc == 0)
            snprintf(why, sizeof(why), "%s answered HTTP %ld", target, resp->status);
        int64_t delay = next_delay(h, n, start, resp);
        if (delay < 0) {
            if (rc < 0)
                ret = err_set(err, timed_out ? ERR_TIMEOUT : ERR_UNAVAILABLE,
                              "lost connection to %s: %s (gave up after %lld s and %d attempts)",
                              target, why, (long long)((clock_mono_ns() - start) / NS_PER_SEC),
                              n + 1);
            goto out; /* an answer: the caller judges the last one */
        }
        tell(h, "%s; retrying in %.1fs", why, (double)delay / 1000.0);
        clock_sleep_ms(delay);
    }
out:
    free(url);
    return ret;
}

const char *httpc_header(const struct httpc_response *r, const char *name, char *out, size_t cap)
{
    size_t n = strlen(name);
    const char *p = buf_cstr(&r->headers), *end = p + r->headers.len, *found = NULL;
    size_t flen = 0;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *eol = nl ? nl : end;
        if ((size_t)(eol - p) > n && strncasecmp(p, name, n) == 0 && p[n] == ':') {
            found = p + n + 1;
            flen = (size_t)(eol - found);
        }
        p = eol + 1;
    }
    if (!found)
        return NULL;
    while (flen && (*found == ' ' || *found == '\t'))
        found++, flen--;
    while (flen && strchr("\r\n \t", found[flen - 1]))
        flen--;
    snprintf(out, cap, "%.*s", (int)flen, found);
    return out;
}
