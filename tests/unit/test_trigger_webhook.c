/*
 * Tests of outbound webhooks (trigger/webhook.c, sent with core/httpc.c): payloads, Standard
 * Webhooks signing, the retry schedule, and real POSTs to a local receiver (a small HTTP/1.1 server
 * in a thread) that checks every signature, fails on purpose and comes back, answers slowly, and
 * counts connections to show the handle is reused.
 */
#include "tests/unit/check.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <sys/socket.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/httpc.h"
#include "core/jsonx.h"
#include "trigger/stdwebhook.h"
#include "trigger/webhook.h"

#define SECRET "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"

/* The receiver answers request i with script[i] (status; 0 = hang for 0.7 s and close). */
struct receiver {
    int fd, port;
    pthread_t thread;
    volatile int stop;
    int script[16], nscript, nreq, connections, good_signatures;
    char last_id[64];
    char last_body[4096];
};

static const char *find_header(const char *head, const char *name, char *out, size_t len)
{
    size_t n = strlen(name);
    for (const char *p = head; (p = strchr(p, '\n')) != NULL;) {
        p++;
        if (strncasecmp(p, name, n) == 0 && p[n] == ':') {
            p += n + 1;
            while (*p == ' ')
                p++;
            size_t i = 0;
            while (p[i] && p[i] != '\r' && i + 1 < len) {
                out[i] = p[i];
                i++;
            }
            out[i] = '\0';
            return out;
        }
    }
    return NULL;
}

/* Waits for bytes on c; false when the receiver is being stopped. */
static bool readable(struct receiver *r, int c)
{
    struct pollfd p = { c, POLLIN, 0 };
    while (!r->stop)
        if (poll(&p, 1, 50) > 0)
            return true;
    return false;
}

/* Serves requests on one connection until the client closes it; -1 to close it ourselves. */
static int serve_one(struct receiver *r, int c, char *buf, size_t *have)
{
    char *end;
    while (!(end = strstr(buf, "\r\n\r\n"))) {
        if (!readable(r, c))
            return -1;
        ssize_t n = recv(c, buf + *have, 65535 - *have, 0);
        if (n <= 0)
            return -1;
        *have += (size_t)n;
        buf[*have] = '\0';
    }
    char v[256], id[64] = "", ts[32] = "", sig[256] = "";
    size_t head = (size_t)(end + 4 - buf), clen = 0;
    if (find_header(buf, "Content-Length", v, sizeof(v)))
        clen = strtoul(v, NULL, 10);
    find_header(buf, "webhook-id", id, sizeof(id));
    find_header(buf, "webhook-timestamp", ts, sizeof(ts));
    find_header(buf, "webhook-signature", sig, sizeof(sig));
    while (*have < head + clen) {
        if (!readable(r, c))
            return -1;
        ssize_t n = recv(c, buf + *have, 65535 - *have, 0);
        if (n <= 0)
            return -1;
        *have += (size_t)n;
    }
    const char *secrets[] = { SECRET };
    if (stdwebhook_verify(secrets, 1, id, ts, sig, buf + head, clen, clock_now_ns() / NS_PER_SEC,
                          300, NULL) == 0)
        r->good_signatures++;
    snprintf(r->last_id, sizeof(r->last_id), "%s", id);
    snprintf(r->last_body, sizeof(r->last_body), "%.*s", (int)clen, buf + head);
    int status = r->nreq < r->nscript ? r->script[r->nreq] : 200;
    r->nreq++;
    memmove(buf, buf + head + clen, *have - head - clen);
    *have -= head + clen;
    buf[*have] = '\0';
    if (status == 0) {
        usleep(700 * 1000);
        return -1;
    }
    char resp[256];
    int n = snprintf(resp, sizeof(resp), "HTTP/1.1 %d X\r\nContent-Length: 2\r\n%s%s\r\nok", status,
                     status == 429 ? "Retry-After: 7\r\n" : "",
                     status == 302 ? "Location: http://127.0.0.1:1/\r\n" : "");
    return send(c, resp, (size_t)n, MSG_NOSIGNAL) == n ? 0 : -1;
}

static void *receiver_main(void *arg)
{
    struct receiver *r = arg;
    static char buf[65536];
    while (!r->stop) {
        struct pollfd p = { r->fd, POLLIN, 0 };
        if (poll(&p, 1, 50) <= 0)
            continue;
        int c = accept(r->fd, NULL, NULL);
        if (c < 0)
            continue;
        r->connections++;
        size_t have = 0;
        buf[0] = '\0';
        while (!r->stop && serve_one(r, c, buf, &have) == 0)
            ;
        close(c);
    }
    return NULL;
}

static int receiver_start(struct receiver *r)
{
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    socklen_t len = sizeof(a);
    r->fd = socket(AF_INET, SOCK_STREAM, 0);
    if (r->fd < 0 || bind(r->fd, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(r->fd, 8) < 0 ||
        getsockname(r->fd, (struct sockaddr *)&a, &len) < 0)
        return -1;
    r->port = ntohs(a.sin_port);
    return pthread_create(&r->thread, NULL, receiver_main, r);
}

static void receiver_stop(struct receiver *r)
{
    r->stop = 1;
    pthread_join(r->thread, NULL);
    close(r->fd);
}

static const struct webhook_job job = { "j-7f3a",
                                        "llama-ft",
                                        "failed",
                                        "OOMKilled",
                                        "rank 3: CUDA out of memory <oops> & more",
                                        "https://ty.example/jobs/j-7f3a",
                                        1700000000LL * NS_PER_SEC };

static void test_payloads(void)
{
    json_t *p = webhook_payload(WEBHOOK_JOB_FAILED, &job, 1700000001LL * NS_PER_SEC);
    CHECK_STR(jsonx_str(p, "type"), "job.failed");
    CHECK_STR(jsonx_str(p, "timestamp"), "2023-11-14T22:13:21.000000Z");
    json_t *d = json_object_get(p, "data");
    CHECK_STR(jsonx_str(d, "id"), "j-7f3a");
    CHECK_STR(jsonx_str(d, "name"), "llama-ft");
    CHECK_STR(jsonx_str(d, "state"), "failed");
    CHECK_STR(jsonx_str(d, "reason"), "OOMKilled");
    CHECK_STR(jsonx_str(d, "url"), "https://ty.example/jobs/j-7f3a");
    CHECK_STR(jsonx_str(d, "time"), "2023-11-14T22:13:20.000000Z");
    json_decref(p);
    struct webhook_job bare = { .id = "j-1", .name = "n", .state = "queued" };
    p = webhook_payload(WEBHOOK_JOB_ACCEPTED, &bare, 1);
    CHECK(json_is_null(json_object_get(json_object_get(p, "data"), "reason")));
    json_decref(p);

    p = webhook_payload_slack(WEBHOOK_JOB_FAILED, &job);
    CHECK_STR(jsonx_str(p, "text"), "trainyard: job llama-ft failed");
    json_t *block = json_array_get(json_object_get(p, "blocks"), 0);
    CHECK_STR(jsonx_str(json_object_get(block, "text"), "text"),
              "*<https://ty.example/jobs/j-7f3a|llama-ft>* failed (state: failed)\n"
              "reason: `OOMKilled`\n>rank 3: CUDA out of memory &lt;oops&gt; &amp; more");
    json_decref(p);

    enum webhook_event e;
    CHECK_INT(webhook_event_parse("job.stalled", &e), 0);
    CHECK_INT(e, WEBHOOK_JOB_STALLED);
    CHECK_INT(webhook_event_parse("job.exploded", &e), -1);
    CHECK_INT(webhook_event_for_state(JOB_RUNNING, &e), 0);
    CHECK_INT(e, WEBHOOK_JOB_STARTED);
    CHECK_INT(webhook_event_for_state(JOB_RESTARTING, &e), 0);
    CHECK_INT(e, WEBHOOK_JOB_RESTARTED);
    CHECK_INT(webhook_event_for_state(JOB_CANCELLING, &e), -1);
}

static void test_sign(void)
{
    struct webhook_headers h;
    const char *body = "{\"test\": 2432232314}";
    CHECK_INT(webhook_sign(SECRET, "msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330, body, strlen(body),
                           &h, NULL),
              0);
    CHECK_STR(h.lines[0], "webhook-id: msg_p5jXN8AQM9LWM0D4loKWxJek");
    CHECK_STR(h.lines[1], "webhook-timestamp: 1614265330");
    CHECK_STR(h.lines[2], "webhook-signature: v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=");
    CHECK_STR(h.lines[3], "Content-Type: application/json");
    CHECK(h.lines[4] == NULL);
    webhook_headers_release(&h);
    struct err err;
    err_init(&err);
    CHECK_INT(webhook_sign(SECRET, "msg.1", 1, body, 1, &h, &err), -1);
    err_release(&err);
    CHECK_INT(webhook_sign("whsec_?", "msg_1", 1, body, 1, &h, &err), -1);
    err_release(&err);
    char id[WEBHOOK_ID_LEN], id2[WEBHOOK_ID_LEN];
    webhook_new_id(id);
    webhook_new_id(id2);
    CHECK_INT(strlen(id), WEBHOOK_ID_LEN - 1);
    CHECK(strncmp(id, "msg_", 4) == 0 && strcmp(id, id2) != 0);
}

static void test_retry(void)
{
    struct webhook_retry p = { .base_ms = 1000, .max_ms = 60000, .max_attempts = 10 };
    /* Equal jitter: within [d/2, d] where d doubles each time up to the cap. */
    for (int failed = 1; failed < 10; failed++) {
        int64_t d = 1000LL << (failed - 1);
        if (d > 60000)
            d = 60000;
        CHECK_INT(webhook_retry_delay(&p, failed, 0, -1), d / 2);
        CHECK_INT(webhook_retry_delay(
                      &p, failed, UINT32_MAX - (UINT32_MAX % (uint32_t)(d / 2 + 1)) - 1, -1) <= d,
                  1);
        CHECK(webhook_retry_delay(&p, failed, 12345, -1) >= d / 2);
    }
    CHECK_INT(webhook_retry_delay(&p, 10, 0, -1), -1); /* tenth attempt failed: give up */
    CHECK_INT(webhook_retry_delay(&p, 0, 0, -1), -1);
    CHECK_INT(webhook_retry_delay(&p, 1, 0, 7000), 7000); /* Retry-After asks for longer */
    CHECK_INT(webhook_retry_delay(&p, 1, 0, 100), 500);
    CHECK_INT(webhook_retry_delay(NULL, 1, 0, -1), 2500); /* defaults: 5 s base */
    CHECK_INT(webhook_retry_delay(NULL, 12, 0, -1), -1);
    CHECK_INT(webhook_classify(204), WEBHOOK_DELIVERED);
    CHECK_INT(webhook_classify(410), WEBHOOK_GONE);
    CHECK_INT(webhook_classify(400), WEBHOOK_RETRY);
    CHECK_INT(webhook_classify(0), WEBHOOK_RETRY);
}

/* One attempt of a delivery, as the lead's loop makes it: sign for now, POST, classify. */
static enum webhook_verdict attempt(struct httpc *h, const char *url, const char *id,
                                    const char *body, struct httpc_response *resp, struct err *err)
{
    struct webhook_headers hdr;
    webhook_sign(SECRET, id, clock_now_ns() / NS_PER_SEC, body, strlen(body), &hdr, NULL);
    httpc_response_init(resp);
    struct httpc_request rq = { .url = url,
                                .headers = (const char *const *)hdr.lines,
                                .body = body,
                                .body_len = strlen(body) };
    int rc = httpc_do(h, &rq, resp, err);
    webhook_headers_release(&hdr);
    return webhook_classify(rc == 0 ? resp->status : 0);
}

static void test_delivery(void)
{
    struct receiver r = { .script = { 503, 429, 200, 410, 302, 0, 200 }, .nscript = 7 };
    if (receiver_start(&r) != 0) {
        CHECK(!"receiver did not start");
        return;
    }
    char url[64];
    snprintf(url, sizeof(url), "http://127.0.0.1:%d/hook", r.port);
    struct httpc_options o = { .timeout_ms = 300 };
    struct httpc *h = httpc_new(&o, NULL);
    struct httpc_response resp;
    struct err err;
    err_init(&err);
    char id[WEBHOOK_ID_LEN];
    webhook_new_id(id);
    json_t *p = webhook_payload(WEBHOOK_JOB_SUCCEEDED, &job, clock_now_ns());
    char *body = jsonx_dumps(p);
    struct webhook_retry policy = { .base_ms = 10, .max_attempts = 5 };

    /* Fails on purpose twice, then comes back: the loop retries with the same id. */
    int failed = 0;
    enum webhook_verdict v;
    int64_t waited = 0;
    while ((v = attempt(h, url, id, body, &resp, &err)) == WEBHOOK_RETRY) {
        int64_t after = resp.retry_after_ms;
        int64_t delay = webhook_retry_delay(&policy, ++failed, 7, after);
        httpc_response_release(&resp);
        if (delay < 0)
            break;
        waited += delay;
        clock_sleep_ms(delay > 50 ? 50 : delay); /* the schedule is checked, not slept out */
    }
    CHECK_INT(v, WEBHOOK_DELIVERED);
    CHECK_INT(failed, 2);
    CHECK(waited >= 7000); /* the 429's Retry-After: 7 was honoured */
    CHECK_STR(resp.body.data, "ok");
    httpc_response_release(&resp);
    CHECK_INT(r.good_signatures, 3);
    CHECK_STR(r.last_id, id);
    CHECK_STR(r.last_body, body);

    /* 410: stop sending. 302: not followed, reported as is. */
    CHECK_INT(attempt(h, url, id, body, &resp, &err), WEBHOOK_GONE);
    httpc_response_release(&resp);
    CHECK_INT(attempt(h, url, id, body, &resp, &err), WEBHOOK_RETRY);
    CHECK_INT(resp.status, 302);
    httpc_response_release(&resp);
    CHECK_INT(r.connections, 1); /* five requests, one connection */

    /* A receiver that hangs costs at most the timeout. */
    int64_t t0 = clock_mono_ns();
    CHECK_INT(attempt(h, url, id, body, &resp, &err), WEBHOOK_RETRY);
    CHECK_INT(err.code, ERR_TIMEOUT);
    CHECK((clock_mono_ns() - t0) / NS_PER_MS < 650);
    CHECK_INT(resp.status, 0);
    httpc_response_release(&resp);
    err_release(&err);
    /* And the same handle works again once the receiver is back. */
    clock_sleep_ms(800);
    CHECK_INT(attempt(h, url, id, body, &resp, &err), WEBHOOK_DELIVERED);
    httpc_response_release(&resp);
    receiver_stop(&r);

    /* Nobody listening. */
    CHECK_INT(attempt(h, "http://127.0.0.1:1/x", id, body, &resp, &err), WEBHOOK_RETRY);
    CHECK_INT(err.code, ERR_UNAVAILABLE);
    CHECK(strstr(err.msg, "127.0.0.1:1") != NULL);
    httpc_response_release(&resp);
    err_release(&err);
    /* Only http and https. */
    CHECK_INT(attempt(h, "file:///etc/passwd", id, body, &resp, &err), WEBHOOK_RETRY);
    CHECK_INT(err.code, ERR_UNAVAILABLE);
    httpc_response_release(&resp);
    err_release(&err);
    httpc_free(h);
    free(body);
    json_decref(p);
}

int main(void)
{
    test_payloads();
    test_sign();
    test_retry();
    test_delivery();
    return check_done();
}
