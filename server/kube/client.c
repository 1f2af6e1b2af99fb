/*
 * client: libcurl under the Kubernetes REST calls (see client.h). Async calls keep a private
 * copy of their request so that a 401 can be answered with one retry on a fresh token, and
 * reuse easy handles from a free list (curl_easy_reset keeps nothing but the handle). The
 * counters for /metrics sit in a small table under `mlock`, written by both the loop thread and
 * blocking callers.
 */
#include "server/kube/client.h"

#include <curl/curl.h>
#include <pthread.h>
#include <stdatomic.h>

#include "core/clock.h"
#include "core/jsonx.h"
#include "core/prom.h"
#include "core/xalloc.h"
#include "server/kube/auth.h"

#define DEFAULT_TIMEOUT_MS 30000
#define MAX_BODY           (256u << 20)
#define MAX_STATS          96
#define MAX_FREE_HANDLES   64

struct stat_row {
    char verb[20];
    char res[48];
    long code; /* 0: the request counter; else an error counter for this status (-1: no reply) */
    uint64_t n;
};

struct kube_call {
    struct kube_client *c;
    CURL *easy;
    struct curl_slist *headers;
    char *method, *path, *body, *ctype, *token;
    long timeout_ms;
    bool retried;
    bool early; /* could not be started: reported by the next kube_client_run */
    struct err early_err;
    kube_data_fn data;
    kube_done_fn done;
    void *ctx;
    struct buf resp;
    char errbuf[CURL_ERROR_SIZE];
    struct kube_call *prev, *next;
};

struct kube_client {
    const struct kube_config *cfg;
    struct kube_auth *auth;
    CURLM *multi;
    struct kube_call *calls;
    size_t ncalls;
    struct kube_call **early; /* calls that failed before reaching the network */
    size_t nearly, capearly;
    CURL *free_handles[MAX_FREE_HANDLES];
    size_t nfree;
    pthread_mutex_t sync_lock; /* the blocking handle */
    CURL *sync;
    pthread_mutex_t mlock;
    struct stat_row stats[MAX_STATS];
    size_t nstats;
    atomic_ullong requests;
    atomic_ullong busy_ns;       /* time in kube_client_run not waiting for the network */
    atomic_ullong by_version[2]; /* answers over HTTP/1.x, over HTTP/2 */
    atomic_ullong connects;      /* connections opened */
};

static void count(struct kube_client *c, const char *method, const char *path, long code)
{
    char verb[20], res[48];
    kube_classify(method, path, verb, sizeof(verb), res, sizeof(res));
    pthread_mutex_lock(&c->mlock);
    size_t i = 0;
    while (i < c->nstats && !(c->stats[i].code == code && !strcmp(c->stats[i].verb, verb) &&
                              !strcmp(c->stats[i].res, res)))
        i++;
    if (i == c->nstats && c->nstats < MAX_STATS) {
        struct stat_row *r = &c->stats[c->nstats++];
        snprintf(r->verb, sizeof(r->verb), "%s", verb);
        snprintf(r->res, sizeof(r->res), "%s", res);
        r->code = code;
    }
    if (i < c->nstats)
        c->stats[i].n++;
    pthread_mutex_unlock(&c->mlock);
    if (code == 0)
        atomic_fetch_add(&c->requests, 1);
}

void kube_classify(const char *method, const char *path, char *verb, size_t vsize, char *res,
                   size_t rsize)
{
    char segs[8][64];
    int n = 0;
    const char *p = path, *q = strchr(path, '?');
    size_t len = q ? (size_t)(q - path) : strlen(path);
    while (p < path + len && n < 8) {
        while (p < path + len && *p == '/')
            p++;
        size_t s = strcspn(p, "/?");
        if (p + s > path + len)
            s = (size_t)(path + len - p);
        if (s)
            snprintf(segs[n++], sizeof(segs[0]), "%.*s", (int)s, p);
        p += s;
    }
    if (n > 0 && strcmp(segs[0], "api") != 0 && strcmp(segs[0], "apis") != 0) {
        snprintf(res, rsize, "%s", segs[0]); /* /openapi, /version */
        snprintf(verb, vsize, "get");
        return;
    }
    /* skip /api/v1 or /apis/group/version, then an optional namespaces/{ns} */
    int i = n > 0 && !strcmp(segs[0], "api") ? 2 : 3;
    if (i + 2 < n && !strcmp(segs[i], "namespaces"))
        i += 2;
    bool watch = q && (strstr(q, "watch=true") || strstr(q, "watch=1"));
    const char *r = i < n ? segs[i] : "unknown";
    bool item = i + 1 < n, sub = i + 2 < n;
    if (sub)
        snprintf(res, rsize, "%s/%s", r, segs[i + 2]);
    else
        snprintf(res, rsize, "%s", r);
    const char *v = "get";
    if (!strcmp(method, "GET"))
        v = watch ? "watch" : item ? "get" : "list";
    else if (!strcmp(method, "POST"))
        v = "create";
    else if (!strcmp(method, "PUT"))
        v = "update";
    else if (!strcmp(method, "PATCH"))
        v = "patch";
    else if (!strcmp(method, "DELETE"))
        v = item ? "delete" : "deletecollection";
    snprintf(verb, vsize, "%s", v);
}

static enum err_code code_for(long status)
{
    switch (status) {
    case 400:
        return ERR_INVALID;
    case 403:
        return ERR_FORBIDDEN;
    case 404:
        return ERR_NOT_FOUND;
    case 405:
        return ERR_METHOD;
    case 409:
        return ERR_CONFLICT;
    case 410:
        return ERR_GONE;
    case 413:
        return ERR_TOO_LARGE;
    case 415:
        return ERR_UNSUPPORTED;
    case 422:
        return ERR_VALIDATION;
    case 429:
        return ERR_RATE_LIMITED;
    case 503:
        return ERR_UNAVAILABLE;
    case 504:
        return ERR_TIMEOUT;
    default:
        return ERR_UPSTREAM; /* 401 too: the daemon's own credentials were refused */
    }
}

static void append_causes(struct buf *msg, const json_t *causes)
{
    size_t i;
    json_t *c;
    json_array_foreach(causes, i, c)
    {
        const char *field = jsonx_str(c, "field"), *m = jsonx_str(c, "message");
        if (!m || (msg->len && strstr(buf_cstr(msg), m)))
            continue;
        buf_printf(msg, "%s%s%s%s", msg->len ? "; " : "", field ? field : "", field ? ": " : "", m);
    }
}

int kube_status_err(long status, const char *body, size_t len, struct err *err)
{
    json_t *st = body && len ? json_loadb(body, len, 0, NULL) : NULL;
    const char *kind = jsonx_str(st, "kind");
    struct buf msg = BUF_INIT;
    const char *reason = NULL;
    if (kind && !strcmp(kind, "Status")) {
        const char *m = jsonx_str(st, "message");
        buf_puts(&msg, m ? m : "");
        reason = jsonx_str(st, "reason");
        append_causes(&msg, json_object_get(json_object_get(st, "details"), "causes"));
    } else {
        size_t n = len > 300 ? 300 : len;
        while (n && (body[n - 1] == '\n' || body[n - 1] == ' '))
            n--;
        buf_append(&msg, body ? body : "", n);
    }
    bool fresh = err && !err_is_set(err);
    err_set(err, code_for(status), "Kubernetes API: %s%s%s", reason ? reason : "",
            reason && msg.len ? ": " : "", msg.len ? buf_cstr(&msg) : "(no message)");
    if (fresh) {
        snprintf(err->reason, sizeof(err->reason), "%s", reason ? reason : "");
        json_t *details = json_object_get(st, "details");
        err->retry_after = (int)jsonx_int(details, "retryAfterSeconds", 0);
        if (status == 429 && !err->retry_after)
            err->retry_after = 1;
    }
    buf_release(&msg);
    json_decref(st);
    return -1;
}

static size_t on_body(char *data, size_t size, size_t n, void *arg)
{
    struct kube_call *call = arg;
    size_t len = size * n;
    long status = 0;
    curl_easy_getinfo(call->easy, CURLINFO_RESPONSE_CODE, &status);
    if (call->data && status >= 200 && status < 300) {
        call->data(call->ctx, data, len);
        return len;
    }
    if (call->resp.len + len > MAX_BODY)
        return 0; /* aborts the transfer */
    buf_append(&call->resp, data, len);
    return len;
}

/* Trust and client credentials: the kubeconfig's CA and certificate, or an exec plugin's. */
static void set_tls(struct kube_client *c, CURL *e)
{
    const struct kube_config *cfg = c->cfg;
    if (cfg->ca_data) {
        struct curl_blob ca = { cfg->ca_data, cfg->ca_len, CURL_BLOB_NOCOPY };
        curl_easy_setopt(e, CURLOPT_CAINFO_BLOB, &ca);
    } else if (cfg->ca_file) {
        curl_easy_setopt(e, CURLOPT_CAINFO, cfg->ca_file);
    }
    if (cfg->insecure) {
        curl_easy_setopt(e, CURLOPT_SSL_VERIFYPEER, 0L);
        curl_easy_setopt(e, CURLOPT_SSL_VERIFYHOST, 0L);
    }
    if (cfg->cert_data && cfg->key_data) {
        struct curl_blob cb = { cfg->cert_data, cfg->cert_len, CURL_BLOB_NOCOPY };
        struct curl_blob kb = { cfg->key_data, cfg->key_len, CURL_BLOB_NOCOPY };
        curl_easy_setopt(e, CURLOPT_SSLCERT_BLOB, &cb);
        curl_easy_setopt(e, CURLOPT_SSLKEY_BLOB, &kb);
    } else if (cfg->cert_file && cfg->key_file) {
        curl_easy_setopt(e, CURLOPT_SSLCERT, cfg->cert_file);
        curl_easy_setopt(e, CURLOPT_SSLKEY, cfg->key_file);
    } else {
        struct buf cert = BUF_INIT, key = BUF_INIT;
        if (kube_auth_client_cert(c->auth, &cert, &key) == 0) {
            struct curl_blob cb = { cert.data, cert.len, CURL_BLOB_COPY };
            struct curl_blob kb = { key.data, key.len, CURL_BLOB_COPY };
            curl_easy_setopt(e, CURLOPT_SSLCERT_BLOB, &cb);
            curl_easy_setopt(e, CURLOPT_SSLKEY_BLOB, &kb);
        }
        buf_release(&cert);
        buf_release(&key);
    }
}

static void set_headers(struct kube_call *call)
{
    curl_slist_free_all(call->headers);
    call->headers = curl_slist_append(NULL, "Accept: application/json, */*");
    char *h = xasprintf("Content-Type: %s", call->ctype ? call->ctype : "application/json");
    call->headers = curl_slist_append(call->headers, h);
    free(h);
    if (call->token) {
        h = xasprintf("Authorization: Bearer %s", call->token);
        call->headers = curl_slist_append(call->headers, h);
        free(h);
    }
    call->headers = curl_slist_append(call->headers, "User-Agent: trainyard/" TY_VERSION);
    curl_easy_setopt(call->easy, CURLOPT_HTTPHEADER, call->headers);
}

/* Sets up call->easy for call's request with the current credentials. */
static int prepare(struct kube_client *c, struct kube_call *call, struct err *err)
{
    free(call->token);
    call->token = kube_auth_token(c->auth, err);
    if (!call->token && err_is_set(err))
        return -1;
    CURL *e = call->easy;
    char *url = xasprintf("%s%s", c->cfg->server, call->path);
    curl_easy_setopt(e, CURLOPT_URL, url);
    free(url);
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    /* HTTP/2 over TLS (ALPN), and a new request waits for a connection it can share rather
     * than opening its own: thousands of watch and log streams ride a few connections. */
    curl_easy_setopt(e, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_2TLS);
    curl_easy_setopt(e, CURLOPT_PIPEWAIT, 1L);
    curl_easy_setopt(e, CURLOPT_TCP_NODELAY, 1L);
    curl_easy_setopt(e, CURLOPT_TCP_KEEPALIVE, 1L);
    curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, 10000L);
    curl_easy_setopt(e, CURLOPT_ACCEPT_ENCODING, "");
    long t = call->timeout_ms == 0 ? DEFAULT_TIMEOUT_MS : call->timeout_ms;
    curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, t < 0 ? 0L : t);
    curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, call->method);
    curl_easy_setopt(e, CURLOPT_ERRORBUFFER, call->errbuf);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, call);
    curl_easy_setopt(e, CURLOPT_PRIVATE, call);
    if (call->body) {
        curl_easy_setopt(e, CURLOPT_POSTFIELDS, call->body);
        curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE, (long)strlen(call->body));
    } else if (!strcmp(call->method, "GET")) {
        curl_easy_setopt(e, CURLOPT_HTTPGET, 1L);
    }
    set_tls(c, e);
    set_headers(call);
    buf_reset(&call->resp);
    call->errbuf[0] = '\0';
    count(c, call->method, call->path, 0);
    return 0;
}

static void call_free(struct kube_client *c, struct kube_call *call)
{
    if (call->easy) {
        if (c->nfree < MAX_FREE_HANDLES) {
            curl_easy_reset(call->easy);
            c->free_handles[c->nfree++] = call->easy;
        } else {
            curl_easy_cleanup(call->easy);
        }
    }
    curl_slist_free_all(call->headers);
    free(call->method);
    free(call->path);
    free(call->body);
    free(call->ctype);
    free(call->token);
    buf_release(&call->resp);
    err_release(&call->early_err);
    free(call);
}

static void unlink_call(struct kube_client *c, struct kube_call *call)
{
    if (call->prev)
        call->prev->next = call->next;
    else
        c->calls = call->next;
    if (call->next)
        call->next->prev = call->prev;
    c->ncalls--;
}

struct kube_call *kube_call_start(struct kube_client *c, const struct kube_request *r,
                                  kube_data_fn data, kube_done_fn done, void *ctx)
{
    struct kube_call *call = XNEW(struct kube_call);
    call->c = c;
    call->easy = c->nfree ? c->free_handles[--c->nfree] : curl_easy_init();
    call->method = xstrdup(r->method);
    call->path = xstrdup(r->path);
    call->body = r->body ? xstrdup(r->body) : NULL;
    call->ctype = r->content_type ? xstrdup(r->content_type) : NULL;
    call->timeout_ms = r->timeout_ms;
    call->data = data;
    call->done = done;
    call->ctx = ctx;
    call->next = c->calls;
    if (c->calls)
        c->calls->prev = call;
    c->calls = call;
    c->ncalls++;
    err_init(&call->early_err);
    if (prepare(c, call, &call->early_err) == 0 &&
        curl_multi_add_handle(c->multi, call->easy) == CURLM_OK)
        return call;
    /* Reported from the next run, so that done never runs inside start. */
    err_set(&call->early_err, ERR_UPSTREAM, "cannot start a request to %s", c->cfg->server);
    call->early = true;
    if (c->nearly == c->capearly) {
        c->capearly = c->capearly ? c->capearly * 2 : 8;
        c->early = xrealloc(c->early, c->capearly * sizeof(*c->early));
    }
    c->early[c->nearly++] = call;
    kube_client_wakeup(c);
    return call;
}

static void drop_early(struct kube_client *c, struct kube_call *call)
{
    for (size_t i = 0; i < c->nearly; i++) {
        if (c->early[i] == call) {
            c->early[i] = c->early[--c->nearly];
            return;
        }
    }
}

void kube_call_cancel(struct kube_client *c, struct kube_call *call)
{
    if (!call)
        return;
    if (call->early)
        drop_early(c, call);
    else
        curl_multi_remove_handle(c->multi, call->easy);
    unlink_call(c, call);
    call_free(c, call);
}

/* A finished transfer: retry once on 401, else report. */
/* Which protocol answered, and whether a connection had to be opened for it. */
static void count_transport(struct kube_client *c, CURL *e)
{
    long version = 0, connects = 0;
    curl_easy_getinfo(e, CURLINFO_HTTP_VERSION, &version);
    curl_easy_getinfo(e, CURLINFO_NUM_CONNECTS, &connects);
    if (version)
        atomic_fetch_add(&c->by_version[version >= CURL_HTTP_VERSION_2_0], 1);
    atomic_fetch_add(&c->connects, (unsigned long long)connects);
}

static void finish(struct kube_client *c, struct kube_call *call, CURLcode result)
{
    long status = 0;
    curl_easy_getinfo(call->easy, CURLINFO_RESPONSE_CODE, &status);
    count_transport(c, call->easy);
    curl_multi_remove_handle(c->multi, call->easy);
    if (status == 401 && !call->retried) {
        call->retried = true;
        count(c, call->method, call->path, 401);
        kube_auth_expired(c->auth, call->token);
        struct err err;
        err_init(&err);
        bool ok =
            prepare(c, call, &err) == 0 && curl_multi_add_handle(c->multi, call->easy) == CURLM_OK;
        err_release(&err);
        if (ok)
            return;
    }
    struct err err;
    err_init(&err);
    if (result != CURLE_OK && !(result == CURLE_WRITE_ERROR && status >= 400))
        err_set(&err, result == CURLE_OPERATION_TIMEDOUT ? ERR_TIMEOUT : ERR_UPSTREAM,
                "cannot reach the Kubernetes API server %s: %s", c->cfg->server,
                call->errbuf[0] ? call->errbuf : curl_easy_strerror(result));
    else if (status < 200 || status >= 300)
        kube_status_err(status, buf_cstr(&call->resp), call->resp.len, &err);
    if (err_is_set(&err))
        count(c, call->method, call->path, result != CURLE_OK && status < 400 ? -1 : status);
    unlink_call(c, call);
    kube_done_fn done = call->done;
    void *ctx = call->ctx;
    struct buf body = call->resp;
    call->resp = (struct buf)BUF_INIT;
    call_free(c, call);
    if (done)
        done(ctx, result == CURLE_OK ? status : 0, &body, &err);
    buf_release(&body);
    err_release(&err);
}

static void report_early(struct kube_client *c)
{
    while (c->nearly) {
        struct kube_call *call = c->early[--c->nearly];
        unlink_call(c, call);
        struct err err = call->early_err;
        err_init(&call->early_err);
        kube_done_fn done = call->done;
        void *ctx = call->ctx;
        call_free(c, call);
        struct buf none = BUF_INIT;
        if (done)
            done(ctx, 0, &none, &err);
        err_release(&err);
    }
}

void kube_client_run(struct kube_client *c, int timeout_ms)
{
    int running = 0;
    report_early(c);
    curl_multi_poll(c->multi, NULL, 0, c->nearly ? 0 : timeout_ms, NULL);
    int64_t t0 = clock_mono_ns();
    curl_multi_perform(c->multi, &running);
    CURLMsg *m;
    int left;
    while ((m = curl_multi_info_read(c->multi, &left))) {
        if (m->msg != CURLMSG_DONE)
            continue;
        struct kube_call *call = NULL;
        curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, (char **)&call);
        if (call)
            finish(c, call, m->data.result);
    }
    atomic_fetch_add(&c->busy_ns, (unsigned long long)(clock_mono_ns() - t0));
}

void kube_client_wakeup(struct kube_client *c)
{
    curl_multi_wakeup(c->multi);
}

int kube_client_do(struct kube_client *c, const struct kube_request *r, struct buf *out,
                   struct err *err)
{
    pthread_mutex_lock(&c->sync_lock);
    struct kube_call call = { .c = c,
                              .easy = c->sync,
                              .method = (char *)r->method,
                              .path = (char *)r->path,
                              .body = (char *)r->body,
                              .ctype = (char *)r->content_type,
                              .timeout_ms = r->timeout_ms };
    int rc = -1;
    long status = 0;
    CURLcode res = CURLE_OK;
    for (int attempt = 0; attempt < 2; attempt++) {
        curl_easy_reset(c->sync);
        if (prepare(c, &call, err) < 0)
            break;
        res = curl_easy_perform(c->sync);
        curl_easy_getinfo(c->sync, CURLINFO_RESPONSE_CODE, &status);
        if (res != CURLE_OK || status != 401 || attempt == 1)
            break;
        count(c, call.method, call.path, 401);
        kube_auth_expired(c->auth, call.token);
    }
    if (res != CURLE_OK)
        err_set(err, res == CURLE_OPERATION_TIMEDOUT ? ERR_TIMEOUT : ERR_UPSTREAM,
                "cannot reach the Kubernetes API server %s: %s", c->cfg->server,
                call.errbuf[0] ? call.errbuf : curl_easy_strerror(res));
    else if (status >= 200 && status < 300)
        rc = 0;
    else if (status)
        kube_status_err(status, buf_cstr(&call.resp), call.resp.len, err);
    if (rc < 0 && status)
        count(c, call.method, call.path, res != CURLE_OK ? -1 : status);
    if (out)
        buf_append(out, call.resp.data ? call.resp.data : "", call.resp.len);
    curl_slist_free_all(call.headers);
    free(call.token);
    buf_release(&call.resp);
    pthread_mutex_unlock(&c->sync_lock);
    return rc;
}

static void global_init(void)
{
    curl_global_init(CURL_GLOBAL_DEFAULT);
}

struct kube_client *kube_client_new(const struct kube_config *cfg, struct err *err)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, global_init);
    struct kube_client *c = XNEW(struct kube_client);
    c->cfg = cfg;
    c->auth = kube_auth_new(cfg);
    c->multi = curl_multi_init();
    c->sync = curl_easy_init();
    if (!c->multi || !c->sync) {
        kube_client_free(c);
        err_set(err, ERR_INTERNAL, "cannot initialise libcurl");
        return NULL;
    }
    curl_multi_setopt(c->multi, CURLMOPT_PIPELINING, CURLPIPE_MULTIPLEX);
    /* libcurl puts at most 100 streams on a connection unless told; the server's own limit
     * (SETTINGS_MAX_CONCURRENT_STREAMS: 250 on kube-apiserver, Go's default) still applies. */
    curl_multi_setopt(c->multi, CURLMOPT_MAX_CONCURRENT_STREAMS, 1000L);
    pthread_mutex_init(&c->sync_lock, NULL);
    pthread_mutex_init(&c->mlock, NULL);
    return c;
}

void kube_client_free(struct kube_client *c)
{
    if (!c)
        return;
    while (c->calls)
        kube_call_cancel(c, c->calls);
    for (size_t i = 0; i < c->nfree; i++)
        curl_easy_cleanup(c->free_handles[i]);
    if (c->multi)
        curl_multi_cleanup(c->multi);
    if (c->sync)
        curl_easy_cleanup(c->sync);
    free(c->early);
    kube_auth_free(c->auth);
    pthread_mutex_destroy(&c->sync_lock);
    pthread_mutex_destroy(&c->mlock);
    free(c);
}

void kube_client_metrics(struct kube_client *c, struct buf *out)
{
    struct prom p;
    prom_init(&p, out);
    prom_family(&p, "trainyard_kube_requests_total", PROM_COUNTER,
                "Kubernetes API requests by verb and resource.");
    pthread_mutex_lock(&c->mlock);
    for (size_t i = 0; i < c->nstats; i++)
        if (c->stats[i].code == 0)
            prom_sample(&p, NULL, (double)c->stats[i].n, "verb", c->stats[i].verb, "resource",
                        c->stats[i].res, NULL);
    prom_family(&p, "trainyard_kube_errors_total", PROM_COUNTER,
                "Kubernetes API requests that failed, by verb, resource and status (0: no "
                "response).");
    for (size_t i = 0; i < c->nstats; i++) {
        char code[24];
        if (c->stats[i].code == 0)
            continue;
        snprintf(code, sizeof(code), "%ld", c->stats[i].code < 0 ? 0 : c->stats[i].code);
        prom_sample(&p, NULL, (double)c->stats[i].n, "verb", c->stats[i].verb, "resource",
                    c->stats[i].res, "code", code, NULL);
    }
    pthread_mutex_unlock(&c->mlock);
    prom_family(&p, "trainyard_kube_responses_total", PROM_COUNTER,
                "Finished Kubernetes API requests by HTTP version (log streams and watches count "
                "when they end).");
    prom_sample(&p, NULL, (double)atomic_load(&c->by_version[0]), "http", "1.1", NULL);
    prom_sample(&p, NULL, (double)atomic_load(&c->by_version[1]), "http", "2", NULL);
    prom_scalar(&p, "trainyard_kube_connections_total", PROM_COUNTER,
                "Connections opened to the API server.", (double)atomic_load(&c->connects));
    prom_scalar(&p, "trainyard_kube_exec_plugin_runs_total", PROM_COUNTER,
                "Runs of the exec credential plugin.", (double)kube_auth_plugin_runs(c->auth));
}

uint64_t kube_client_busy_ns(struct kube_client *c)
{
    return atomic_load(&c->busy_ns);
}
