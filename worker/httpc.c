/*
 * httpc: a thin libcurl wrapper. The handle is reused between requests so the connection to
 * the daemon stays open; options that differ per request are reset each time. No retries here:
 * callers (rendezvous, reporter) decide how long to keep trying.
 */
#include "worker/httpc.h"

#include <curl/curl.h>
#include <pthread.h>

#include "core/xalloc.h"

static pthread_once_t global_once = PTHREAD_ONCE_INIT;

static void global_init(void)
{
    curl_global_init(CURL_GLOBAL_DEFAULT);
}

int httpc_init(struct httpc *h, const char *base_url, const char *token, struct err *err)
{
    memset(h, 0, sizeof(*h));
    if (!base_url || (strncmp(base_url, "http://", 7) != 0 && strncmp(base_url, "https://", 8)))
        return err_set(err, ERR_INVALID, "daemon URL '%s' is not http:// or https://",
                       base_url ? base_url : "");
    pthread_once(&global_once, global_init);
    h->curl = curl_easy_init();
    if (!h->curl)
        return err_set(err, ERR_INTERNAL, "curl_easy_init failed");
    size_t n = strlen(base_url);
    while (n > 0 && base_url[n - 1] == '/')
        n--;
    h->base = xstrndup(base_url, n);
    struct curl_slist *hd = curl_slist_append(NULL, "Content-Type: application/json");
    hd = curl_slist_append(hd, "Accept: application/json");
    if (token) {
        char *auth = xasprintf("Authorization: Bearer %s", token);
        hd = curl_slist_append(hd, auth);
        free(auth);
    }
    h->headers = hd;
    return 0;
}

void httpc_release(struct httpc *h)
{
    if (h->curl)
        curl_easy_cleanup(h->curl);
    curl_slist_free_all(h->headers);
    free(h->base);
    memset(h, 0, sizeof(*h));
}

static size_t on_body(char *data, size_t size, size_t nmemb, void *ctx)
{
    buf_append(ctx, data, size * nmemb);
    return size * nmemb;
}

int httpc_do(struct httpc *h, const char *method, const char *path, const char *body,
             long timeout_ms, long *status, struct buf *resp, struct err *err)
{
    CURL *c = h->curl;
    char *url = xasprintf("%s%s", h->base, path);
    buf_reset(resp);
    *status = 0;
    curl_easy_reset(c);
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, (struct curl_slist *)h->headers);
    curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, timeout_ms);
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, timeout_ms < 3000 ? timeout_ms : 3000L);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, resp);
    if (body) {
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
        curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, (long)strlen(body));
    }
    CURLcode rc = curl_easy_perform(c);
    int ret = 0;
    if (rc != CURLE_OK) {
        ret = err_set(err, ERR_UNAVAILABLE, "%s %s: %s", method, url, curl_easy_strerror(rc));
        goto out;
    }
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, status);
out:
    free(url);
    return ret;
}

void httpc_escape(struct buf *out, const char *s)
{
    static const char hex[] = "0123456789ABCDEF";
    for (; *s; s++) {
        unsigned char ch = (unsigned char)*s;
        if ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
            ch == '-' || ch == '.' || ch == '_' || ch == '~') {
            buf_putc(out, (char)ch);
        } else {
            buf_putc(out, '%');
            buf_putc(out, hex[ch >> 4]);
            buf_putc(out, hex[ch & 15]);
        }
    }
}
