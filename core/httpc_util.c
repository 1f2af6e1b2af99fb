/*
 * httpc_util: the pure parts of the HTTP client (see httpc.h): the retry schedule, Retry-After,
 * percent-encoding, and URL parts from libcurl's own parser. No handles, no I/O; any thread.
 */
#include <curl/curl.h>

#include "core/clock.h"
#include "core/httpc.h"
#include "core/parse.h"
#include "core/xalloc.h"

bool httpc_status_retryable(long status)
{
    return status == 429 || (status >= 500 && status <= 599 && status != 501 && status != 505);
}

int64_t httpc_backoff_ms(int attempt, uint64_t rnd, int64_t retry_after_ms)
{
    int64_t d = 5000;
    if (attempt < 5)
        d = 200LL << attempt; /* 200, 400, 800, 1600, 3200, then 5000 */
    int64_t delay = d / 2 + (int64_t)(rnd % (uint64_t)(d / 2 + 1));
    return retry_after_ms > delay ? retry_after_ms : delay;
}

int64_t httpc_retry_after_ms(const char *value, int64_t now_ns)
{
    int64_t secs;
    if (!value || !*value)
        return -1;
    if (parse_int64(value, 0, 365LL * 24 * 3600, &secs) == 0)
        return secs * 1000;
    /* An HTTP date; libcurl's parser takes the three formats RFC 9110 allows. */
    time_t when = curl_getdate(value, NULL);
    if (when == -1)
        return -1;
    int64_t ms = ((int64_t)when * NS_PER_SEC - now_ns) / NS_PER_MS;
    return ms > 0 ? ms : 0;
}

void httpc_escape(struct buf *out, const char *s)
{
    static const char hex[] = "0123456789ABCDEF";
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
            *p == '-' || *p == '.' || *p == '_' || *p == '~') {
            buf_putc(out, (char)*p);
        } else {
            buf_putc(out, '%');
            buf_putc(out, hex[*p >> 4]);
            buf_putc(out, hex[*p & 15]);
        }
    }
}

/* A part as a malloc'd string (NULL when absent or empty). */
static char *part(CURLU *u, CURLUPart which)
{
    char *v = NULL, *copy = NULL;
    if (curl_url_get(u, which, &v, 0) == CURLUE_OK && v && *v)
        copy = xstrdup(v);
    curl_free(v);
    return copy;
}

int httpc_url_parse(const char *url, struct httpc_url *out, struct err *err)
{
    memset(out, 0, sizeof(*out));
    CURLU *u = curl_url();
    if (!u)
        abort(); /* only fails when out of memory */
    int rc = 0;
    if (!url || curl_url_set(u, CURLUPART_URL, url, 0) != CURLUE_OK) {
        rc = err_set(err, ERR_INVALID, "not a URL");
        goto out;
    }
    out->scheme = part(u, CURLUPART_SCHEME);
    out->user = part(u, CURLUPART_USER);
    out->password = part(u, CURLUPART_PASSWORD);
    out->host = part(u, CURLUPART_HOST);
    out->port = part(u, CURLUPART_PORT); /* only when the URL names one */
    out->path = part(u, CURLUPART_PATH);
    out->query = part(u, CURLUPART_QUERY);
    out->fragment = part(u, CURLUPART_FRAGMENT);
    if (!out->path)
        out->path = xstrdup("/");
out:
    curl_url_cleanup(u);
    return rc;
}

void httpc_url_release(struct httpc_url *u)
{
    free(u->scheme);
    free(u->user);
    free(u->password);
    free(u->host);
    free(u->port);
    free(u->path);
    free(u->query);
    free(u->fragment);
    memset(u, 0, sizeof(*u));
}
