/*
 * cli_http: libcurl for the CLI, with retries. It does not print: retry notices go to the
 * notice callback, answers to the caller, who turns problem+json into messages. The easy
 * handle is reset between requests but keeps its connection cache (keep-alive). One thread.
 */
#include "server/cli/cli_http.h"

#include <curl/curl.h>
#include <strings.h>
#include <time.h>

#include "core/clock.h"
#include "core/crypto.h"
#include "core/parse.h"
#include "core/xalloc.h"

#define MAX_BODY         (64u << 20)
#define STREAM_SILENCE_S 45L

int cli_http_open(struct cli_http *h, const struct cli_http_options *o, struct err *err)
{
    memset(h, 0, sizeof(*h));
    const char *url = o->url && *o->url ? o->url : "http://127.0.0.1:8080";
    if (!strstr(url, "://"))
        h->base = xasprintf("http://%s", url);
    else
        h->base = xstrdup(url);
    size_t n = strlen(h->base);
    while (n > 0 && h->base[n - 1] == '/')
        h->base[--n] = '\0';
    if (strncasecmp(h->base, "http://", 7) != 0 && strncasecmp(h->base, "https://", 8) != 0)
        return err_set(err, ERR_INVALID, "the server URL %s is not http:// or https://", url);
    if (o->token && *o->token)
        h->auth = xasprintf("Authorization: Bearer %s", o->token);
    h->cacert = o->cacert && *o->cacert ? xstrdup(o->cacert) : NULL;
    h->retry_for_ns = o->retry_for_ns > 0 ? o->retry_for_ns : 60 * NS_PER_SEC;
    h->timeout_ms = o->timeout_ms > 0 ? o->timeout_ms : 30000;
    h->notice = o->notice;
    h->notice_ctx = o->notice_ctx;
    h->curl = curl_easy_init();
    if (!h->curl)
        abort(); /* only fails when out of memory */
    return 0;
}

void cli_http_close(struct cli_http *h)
{
    if (h->curl)
        curl_easy_cleanup(h->curl);
    free(h->base);
    free(h->auth);
    free(h->cacert);
    memset(h, 0, sizeof(*h));
}

void cli_response_init(struct cli_response *r)
{
    memset(r, 0, sizeof(*r));
    r->retry_after_ms = -1;
}

void cli_response_release(struct cli_response *r)
{
    buf_release(&r->body);
    cli_response_init(r);
}

static void response_reset(struct cli_response *r)
{
    buf_reset(&r->body);
    r->status = 0;
    r->content_type[0] = '\0';
    r->retry_after_ms = -1;
    r->next_after = 0;
    r->stopped = false;
    r->fatal = false;
}

bool cli_status_retryable(long status)
{
    return status == 429 || (status >= 500 && status <= 599 && status != 501 && status != 505);
}

int64_t cli_backoff_ms(int attempt, uint64_t rnd, int64_t retry_after_ms)
{
    int64_t d = 5000;
    if (attempt < 5)
        d = 200LL << attempt; /* 200, 400, 800, 1600, 3200, then 5000 */
    int64_t delay = d / 2 + (int64_t)(rnd % (uint64_t)(d / 2 + 1));
    return retry_after_ms > delay ? retry_after_ms : delay;
}

int64_t cli_retry_after_ms(const char *value, int64_t now_s)
{
    int64_t secs;
    if (!value || !*value)
        return -1;
    if (parse_int64(value, 0, 86400, &secs) == 0)
        return secs * 1000;
    time_t when = curl_getdate(value, NULL);
    if (when == -1)
        return -1;
    return when > now_s ? ((int64_t)when - now_s) * 1000 : 0;
}

void cli_http_escape(struct buf *out, const char *s)
{
    static const char hex[] = "0123456789ABCDEF";
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
            strchr("-._~", *p))
            buf_putc(out, (char)*p);
        else
            buf_printf(out, "%%%c%c", hex[*p >> 4], hex[*p & 15]);
    }
}

struct transfer {
    struct cli_http *h;
    struct cli_response *resp;
    cli_http_data_fn fn; /* streams: 2xx body chunks go here */
    void *ctx;
};

/* The value of header line data if its name is name, trimmed; NULL otherwise. */
static char *header_value(const char *data, size_t len, const char *name, char *out, size_t cap)
{
    size_t n = strlen(name);
    if (len <= n + 1 || strncasecmp(data, name, n) != 0 || data[n] != ':')
        return NULL;
    const char *v = data + n + 1;
    size_t vlen = len - n - 1;
    while (vlen && (*v == ' ' || *v == '\t'))
        v++, vlen--;
    while (vlen && strchr("\r\n \t", v[vlen - 1]))
        vlen--;
    snprintf(out, cap, "%.*s", (int)vlen, v);
    return out;
}

static size_t on_header(char *data, size_t size, size_t n, void *ctx)
{
    struct transfer *t = ctx;
    size_t len = size * n;
    char v[128];
    if (len > 5 && strncmp(data, "HTTP/", 5) == 0)
        response_reset(t->resp); /* a new response (after 100 Continue) */
    else if (header_value(data, len, "Retry-After", v, sizeof(v)))
        t->resp->retry_after_ms = cli_retry_after_ms(v, (int64_t)time(NULL));
    else if (header_value(data, len, "Trainyard-Next-After", v, sizeof(v)))
        parse_int64(v, 0, INT64_MAX, &t->resp->next_after);
    else if (header_value(data, len, "Content-Type", v, sizeof(v)))
        snprintf(t->resp->content_type, sizeof(t->resp->content_type), "%s", v);
    return len;
}

static size_t on_body(char *data, size_t size, size_t n, void *ctx)
{
    struct transfer *t = ctx;
    size_t len = size * n;
    if (t->fn && !t->resp->status)
        curl_easy_getinfo(t->h->curl, CURLINFO_RESPONSE_CODE, &t->resp->status);
    if (t->fn && t->resp->status >= 200 && t->resp->status < 300) {
        if (t->fn(t->ctx, data, len) != 0) {
            t->resp->stopped = true;
            return 0; /* aborts the transfer */
        }
        return len;
    }
    if (t->resp->body.len + len > MAX_BODY)
        return 0;
    buf_append(&t->resp->body, data, len);
    return len;
}

static struct curl_slist *headers_for(struct cli_http *h, const struct cli_request *rq,
                                      const char *const *extra)
{
    struct curl_slist *l = curl_slist_append(NULL, "Expect:");
    char line[320];
    if (h->auth)
        l = curl_slist_append(l, h->auth);
    snprintf(line, sizeof(line), "Accept: %s",
             rq && rq->accept ? rq->accept : "application/json, application/problem+json");
    l = curl_slist_append(l, line);
    if (rq && rq->body) {
        snprintf(line, sizeof(line), "Content-Type: %s",
                 rq->content_type ? rq->content_type : "application/json");
        l = curl_slist_append(l, line);
    }
    if (rq && rq->idempotency_key) {
        snprintf(line, sizeof(line), "Idempotency-Key: %s", rq->idempotency_key);
        l = curl_slist_append(l, line);
    }
    for (size_t i = 0; extra && extra[i]; i++)
        l = curl_slist_append(l, extra[i]);
    return l;
}

static void setup(struct cli_http *h, const char *path, struct transfer *t,
                  struct curl_slist *headers)
{
    CURL *c = h->curl;
    char *url = xasprintf("%s%s", h->base, path);
    curl_easy_reset(c);
    curl_easy_setopt(c, CURLOPT_URL, url);
    free(url); /* libcurl keeps its own copy */
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L);
    curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(c, CURLOPT_SSL_VERIFYPEER, 1L);
    curl_easy_setopt(c, CURLOPT_SSL_VERIFYHOST, 2L);
    if (h->cacert)
        curl_easy_setopt(c, CURLOPT_CAINFO, h->cacert);
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, 5000L);
    curl_easy_setopt(c, CURLOPT_USERAGENT, "trainyard-cli/" TY_VERSION);
    curl_easy_setopt(c, CURLOPT_ERRORBUFFER, h->errbuf);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, t);
    curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(c, CURLOPT_HEADERDATA, t);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers);
    h->errbuf[0] = '\0';
}

/* One attempt. 0 with resp->status when an answer came; -1 with the reason in why. */
static int perform(struct cli_http *h, struct transfer *t, char *why, size_t cap)
{
    CURLcode rc = curl_easy_perform(h->curl);
    if (rc == CURLE_OK || (rc == CURLE_WRITE_ERROR && t->resp->stopped)) {
        curl_easy_getinfo(h->curl, CURLINFO_RESPONSE_CODE, &t->resp->status);
        return 0;
    }
    snprintf(why, cap, "%s", h->errbuf[0] ? h->errbuf : curl_easy_strerror(rc));
    t->resp->fatal = rc == CURLE_PEER_FAILED_VERIFICATION || rc == CURLE_SSL_CACERT_BADFILE ||
                     rc == CURLE_SSL_CERTPROBLEM || rc == CURLE_URL_MALFORMAT ||
                     rc == CURLE_UNSUPPORTED_PROTOCOL;
    return -1;
}

static int attempt(struct cli_http *h, const struct cli_request *rq, struct cli_response *resp,
                   char *why, size_t cap)
{
    struct transfer t = { h, resp, NULL, NULL };
    struct curl_slist *headers = headers_for(h, rq, NULL);
    response_reset(resp);
    setup(h, rq->path, &t, headers);
    curl_easy_setopt(h->curl, CURLOPT_TIMEOUT_MS, h->timeout_ms);
    if (strcmp(rq->method, "GET") != 0)
        curl_easy_setopt(h->curl, CURLOPT_CUSTOMREQUEST, rq->method);
    if (rq->body) {
        curl_easy_setopt(h->curl, CURLOPT_POSTFIELDS, rq->body);
        curl_easy_setopt(h->curl, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)rq->body_len);
    } else if (strcmp(rq->method, "POST") == 0) {
        curl_easy_setopt(h->curl, CURLOPT_POSTFIELDS, "");
    }
    int rc = perform(h, &t, why, cap);
    curl_easy_setopt(h->curl, CURLOPT_HTTPHEADER, NULL);
    curl_slist_free_all(headers);
    return rc;
}

static void tell(struct cli_http *h, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void tell(struct cli_http *h, const char *fmt, ...)
{
    if (!h->notice)
        return;
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    h->notice(h->notice_ctx, msg);
}

int cli_http_do(struct cli_http *h, const struct cli_request *rq, struct cli_response *resp,
                struct err *err)
{
    int64_t start = clock_mono_ns();
    char why[300];
    for (int n = 0;; n++) {
        int rc = attempt(h, rq, resp, why, sizeof(why));
        resp->attempts = n + 1;
        if (rc == 0 && !(rq->retry && cli_status_retryable(resp->status)))
            return 0;
        if (!rq->retry || (rc < 0 && resp->fatal))
            return err_set(err, ERR_UNAVAILABLE, "no answer from %s: %s", h->base, why);
        if (rc == 0)
            snprintf(why, sizeof(why), "the daemon answered HTTP %ld", resp->status);
        uint64_t rnd;
        crypto_random(&rnd, sizeof(rnd));
        int64_t delay = cli_backoff_ms(n, rnd, resp->retry_after_ms);
        int64_t waited = clock_mono_ns() - start, left_ms = (h->retry_for_ns - waited) / NS_PER_MS;
        /* The last attempt is made when the budget runs out, not a backoff step before it;
         * a Retry-After beyond the budget ends the retries at once. */
        if (delay > left_ms && resp->retry_after_ms < delay)
            delay = left_ms;
        if (left_ms <= 0 || delay > left_ms) {
            if (rc == 0)
                return 0; /* the caller shows the last answer */
            return err_set(err, ERR_UNAVAILABLE,
                           "lost connection to %s: %s (gave up after %lld s and %d attempts)",
                           h->base, why, (long long)(waited / NS_PER_SEC), n + 1);
        }
        tell(h, "%s; retrying in %.1fs", why, (double)delay / 1000.0);
        clock_sleep_ms(delay);
    }
}

int cli_http_stream(struct cli_http *h, const char *path, const char *const *headers,
                    cli_http_data_fn fn, void *ctx, struct cli_response *resp, struct err *err)
{
    struct transfer t = { h, resp, fn, ctx };
    struct cli_request rq = { .method = "GET", .path = path, .accept = "text/event-stream" };
    struct curl_slist *list = headers_for(h, &rq, headers);
    response_reset(resp);
    setup(h, path, &t, list);
    curl_easy_setopt(h->curl, CURLOPT_LOW_SPEED_LIMIT, 1L);
    curl_easy_setopt(h->curl, CURLOPT_LOW_SPEED_TIME, STREAM_SILENCE_S);
    char why[300];
    int rc = perform(h, &t, why, sizeof(why));
    resp->attempts = 1;
    curl_easy_setopt(h->curl, CURLOPT_HTTPHEADER, NULL);
    curl_slist_free_all(list);
    if (rc < 0)
        return err_set(err, ERR_UNAVAILABLE, "%s: %s", h->base, why);
    return 0;
}
