/*
 * httpc: libcurl easy-handle wrapper. It does not retry, sign or log: callers decide what a
 * status means (webhook.h classifies statuses and computes the retry delay). The handle is
 * reset between requests but keeps its connection cache. One thread per struct httpc.
 */
#include "trigger/httpc.h"

#include <curl/curl.h>
#include <strings.h>

#include "core/xalloc.h"

struct httpc {
    CURL *curl;
    struct httpc_options opts;
    char *ca_file;
    char *user_agent;
    char errbuf[CURL_ERROR_SIZE];
};

struct httpc *httpc_new(const struct httpc_options *opts)
{
    struct httpc *h = XNEW(struct httpc);
    if (opts)
        h->opts = *opts;
    if (h->opts.connect_timeout_ms <= 0)
        h->opts.connect_timeout_ms = 3000;
    if (h->opts.timeout_ms <= 0)
        h->opts.timeout_ms = 10000;
    if (h->opts.max_body == 0)
        h->opts.max_body = 64 * 1024;
    h->ca_file = h->opts.ca_file ? xstrdup(h->opts.ca_file) : NULL;
    h->user_agent = xstrdup(h->opts.user_agent ? h->opts.user_agent : "trainyard/" TY_VERSION);
    h->curl = curl_easy_init();
    if (!h->curl)
        abort(); /* only fails on out-of-memory */
    return h;
}

void httpc_free(struct httpc *h)
{
    if (!h)
        return;
    curl_easy_cleanup(h->curl);
    free(h->ca_file);
    free(h->user_agent);
    free(h);
}

void httpc_response_init(struct httpc_response *r)
{
    memset(r, 0, sizeof(*r));
}

void httpc_response_release(struct httpc_response *r)
{
    buf_release(&r->body);
    free(r->retry_after);
    httpc_response_init(r);
}

struct sink {
    struct httpc_response *resp;
    size_t max;
};

static size_t on_body(char *data, size_t size, size_t n, void *ctx)
{
    struct sink *s = ctx;
    size_t len = size * n, room = s->max - s->resp->body.len;
    if (len > room)
        s->resp->truncated = true;
    buf_append(&s->resp->body, data, len < room ? len : room);
    return len;
}

static size_t on_header(char *data, size_t size, size_t n, void *ctx)
{
    struct sink *s = ctx;
    size_t len = size * n;
    if (len > 12 && strncasecmp(data, "Retry-After:", 12) == 0) {
        const char *v = data + 12;
        size_t vlen = len - 12;
        while (vlen && (*v == ' ' || *v == '\t'))
            v++, vlen--;
        while (vlen && (v[vlen - 1] == '\r' || v[vlen - 1] == '\n' || v[vlen - 1] == ' '))
            vlen--;
        free(s->resp->retry_after);
        s->resp->retry_after = xstrndup(v, vlen);
    }
    return len;
}

static void setup(struct httpc *h, const char *url, struct sink *sink)
{
    CURL *c = h->curl;
    curl_easy_reset(c);
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L);
    curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, h->opts.https_only ? "https" : "http,https");
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, h->opts.connect_timeout_ms);
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, h->opts.timeout_ms);
    curl_easy_setopt(c, CURLOPT_USERAGENT, h->user_agent);
    curl_easy_setopt(c, CURLOPT_ERRORBUFFER, h->errbuf);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, sink);
    curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(c, CURLOPT_HEADERDATA, sink);
    if (h->ca_file)
        curl_easy_setopt(c, CURLOPT_CAINFO, h->ca_file);
    h->errbuf[0] = '\0';
}

static int perform(struct httpc *h, const char *url, struct httpc_response *resp, struct err *err)
{
    CURLcode rc = curl_easy_perform(h->curl);
    double secs = 0;
    curl_easy_getinfo(h->curl, CURLINFO_TOTAL_TIME, &secs);
    resp->seconds = secs;
    if (rc != CURLE_OK) {
        resp->status = 0;
        return err_set(err, rc == CURLE_OPERATION_TIMEDOUT ? ERR_TIMEOUT : ERR_UPSTREAM, "%s: %s",
                       url, h->errbuf[0] ? h->errbuf : curl_easy_strerror(rc));
    }
    curl_easy_getinfo(h->curl, CURLINFO_RESPONSE_CODE, &resp->status);
    return 0;
}

int httpc_post(struct httpc *h, const char *url, const char *const *headers, const void *body,
               size_t len, struct httpc_response *resp, struct err *err)
{
    struct sink sink = { resp, h->opts.max_body };
    struct curl_slist *list = NULL;
    /* Without this libcurl sends "Expect: 100-continue" on larger bodies and waits for it. */
    list = curl_slist_append(list, "Expect:");
    for (size_t i = 0; headers && headers[i]; i++)
        list = curl_slist_append(list, headers[i]);
    setup(h, url, &sink);
    curl_easy_setopt(h->curl, CURLOPT_POST, 1L);
    curl_easy_setopt(h->curl, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(h->curl, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
    curl_easy_setopt(h->curl, CURLOPT_HTTPHEADER, list);
    int rc = perform(h, url, resp, err);
    curl_easy_setopt(h->curl, CURLOPT_HTTPHEADER, NULL);
    curl_slist_free_all(list);
    return rc;
}

int httpc_get(struct httpc *h, const char *url, struct httpc_response *resp, struct err *err)
{
    struct sink sink = { resp, h->opts.max_body };
    setup(h, url, &sink);
    curl_easy_setopt(h->curl, CURLOPT_HTTPGET, 1L);
    return perform(h, url, resp, err);
}
