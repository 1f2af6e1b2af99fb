/*
 * Tests of SNS verification (trigger/sns.c) and of the SNS path through trigger_receive:
 * canonical strings against the .sts files in data/trigger (built from the reference by hand), URL
 * checks, and real signatures: a CA, a signing certificate and SignatureVersion 1 and 2 signatures
 * made with the openssl CLI, the certificate served over HTTPS by `openssl s_server` on 127.0.0.1,
 * which test mode (and only test mode) accepts as the certificate host.
 */
#include "tests/unit/check.h"
#include "tests/unit/test_trigger.h"

#include "core/clock.h"
#include "core/httpc.h"
#include "core/jsonx.h"
#include "trigger/sns.h"
#include "trigger/trigger.h"

static struct testpki pki;

static void test_string_to_sign(void)
{
    static const char *const names[] = { "sns-notification", "sns-testevent", "sns-subscription",
                                         "sns-unsubscribe" };
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        char file[64];
        struct buf body = BUF_INIT, want = BUF_INIT, got = BUF_INIT;
        struct sns_message m;
        snprintf(file, sizeof(file), "%s.json", names[i]);
        fixture(file, &body);
        snprintf(file, sizeof(file), "%s.sts", names[i]);
        fixture(file, &want);
        json_t *doc = jsonx_loadb(body.data, body.len, 16, NULL);
        CHECK_INT(sns_message_parse(doc, &m, NULL), 0);
        sns_string_to_sign(&m, &got);
        CHECK_STR(got.data, want.data);
        sns_message_release(&m);
        json_decref(doc);
        buf_release(&body);
        buf_release(&want);
        buf_release(&got);
    }
    /* A Notification without Subject leaves the Subject lines out entirely. */
    json_t *doc = json_pack("{s:s,s:s,s:s,s:s,s:s,s:s,s:s,s:s}", "Type", "Notification",
                            "MessageId", "m1", "TopicArn", "arn:t", "Message", "a\nb", "Timestamp",
                            "2024-05-01T10:20:31.456Z", "SignatureVersion", "1", "Signature",
                            "AA==", "SigningCertURL", "https://x/y.pem");
    struct sns_message m;
    struct buf got = BUF_INIT;
    CHECK_INT(sns_message_parse(doc, &m, NULL), 0);
    sns_string_to_sign(&m, &got);
    CHECK_STR(got.data, "Message\na\nb\nMessageId\nm1\nTimestamp\n2024-05-01T10:20:31.456Z\n"
                        "TopicArn\narn:t\nType\nNotification\n");
    sns_message_release(&m);
    json_decref(doc);
    buf_release(&got);
}

static void check_url(const struct sns_policy *p, const char *url, bool cert, bool ok)
{
    struct err err;
    err_init(&err);
    int rc = sns_check_url(p, url, cert, &err);
    if ((rc == 0) != ok)
        fprintf(stderr, "url %s: %s\n", url, rc == 0 ? "accepted" : err.msg);
    CHECK_INT(rc, ok ? 0 : -1);
    err_release(&err);
}

static void test_urls(void)
{
    struct sns_policy prod = { 0 };
    const char *pem = "https://sns.us-east-1.amazonaws.com/SimpleNotificationService-abc.pem";
    check_url(&prod, pem, true, true);
    check_url(&prod, "https://sns.cn-north-1.amazonaws.com.cn/SimpleNotificationService-a.pem",
              true, true);
    check_url(&prod, "https://sns.us-gov-west-1.amazonaws.com/x.pem", true, true);
    check_url(&prod, "https://sns.us-east-1.amazonaws.com:443/x.pem", true, true);
    check_url(&prod, "http://sns.us-east-1.amazonaws.com/x.pem", true, false);
    check_url(&prod, "https://sns.us-east-1.amazonaws.com/x.txt", true, false);
    check_url(&prod, "https://sns.us-east-1.amazonaws.com/x.pem?a=b", true, false);
    check_url(&prod, "https://sns.us-east-1.amazonaws.com/x.pem#f", true, false);
    check_url(&prod, "https://sns.us-east-1.amazonaws.com@evil.example/x.pem", true, false);
    check_url(&prod, "https://u:p@sns.us-east-1.amazonaws.com/x.pem", true, false);
    check_url(&prod, "https://sns.us-east-1.amazonaws.com.evil.example/x.pem", true, false);
    check_url(&prod, "https://my-bucket.s3.amazonaws.com/x.pem", true, false);
    check_url(&prod, "https://sns.ab.amazonaws.com/x.pem", true, false); /* region too short */
    check_url(&prod, "https://sns.us-east-1.amazonaws.com:8443/x.pem", true, false);
    check_url(&prod, "https://sns.us-east-1.amazonaws.com/x .pem", true, false);
    check_url(&prod, "https://127.0.0.1:4433/x.pem", true, false);
    check_url(&prod, "https://sns.us-east-1.amazonaws.com/?Action=ConfirmSubscription&Token=a",
              false, true);
    check_url(&prod, "http://sns.us-east-1.amazonaws.com/?Action=ConfirmSubscription", false,
              false);
    check_url(&prod, "https://169.254.169.254/latest/meta-data/", false, false);
    /* Test mode accepts exactly its host and port, nothing else, not even SNS's. */
    struct sns_policy test = { .test_host = "127.0.0.1:4433" };
    check_url(&test, "https://127.0.0.1:4433/x.pem", true, true);
    check_url(&test, "https://127.0.0.1:4434/x.pem", true, false);
    check_url(&test, "https://127.0.0.1/x.pem", true, false);
    check_url(&test, pem, true, false);
}

/* A fixture made into a real signed message: certificate and subscribe URLs on the test
 * server, a fresh Timestamp, signed by <key> with SignatureVersion ver. Caller frees. */
static char *signed_message(const char *name, const char *certfile, const char *key,
                            const char *ver, int64_t ts_ns)
{
    struct buf body = BUF_INIT, sts = BUF_INIT, sig = BUF_INIT;
    char url[160], ts[CLOCK_RFC3339_MAX];
    struct sns_message m;
    fixture(name, &body);
    json_t *doc = jsonx_loadb(body.data, body.len, 16, NULL);
    snprintf(url, sizeof(url), "https://%s/%s", pki.host, certfile);
    json_object_set_new(doc, "SigningCertURL", json_string(url));
    if (json_object_get(doc, "SubscribeURL")) {
        snprintf(url, sizeof(url), "https://%s/confirm.xml", pki.host);
        json_object_set_new(doc, "SubscribeURL", json_string(url));
    }
    json_object_set_new(doc, "Timestamp", json_string(clock_format(ts_ns, ts)));
    json_object_set_new(doc, "SignatureVersion", json_string(ver));
    if (sns_message_parse(doc, &m, NULL) == 0) {
        sns_string_to_sign(&m, &sts);
        sns_message_release(&m);
    }
    CHECK_INT(
        testpki_sign(&pki, key, strcmp(ver, "1") == 0 ? "sha1" : "sha256", sts.data, sts.len, &sig),
        0);
    json_object_set_new(doc, "Signature", json_string(buf_cstr(&sig)));
    char *text = jsonx_dumps(doc);
    json_decref(doc);
    buf_release(&body);
    buf_release(&sts);
    buf_release(&sig);
    return text;
}

/* Parses text as an envelope and verifies it; returns the error code (ERR_NONE on success). */
static enum err_code verify(struct sns_verifier *v, const char *text, int64_t now_ns, char *msg)
{
    struct err err;
    struct sns_message m;
    err_init(&err);
    json_t *doc = jsonx_loadb(text, strlen(text), 16, &err);
    if (doc && sns_message_parse(doc, &m, &err) == 0) {
        sns_verify(v, &m, now_ns, &err);
        sns_message_release(&m);
    }
    json_decref(doc);
    enum err_code code = err.code;
    if (msg)
        snprintf(msg, 200, "%s", err.msg);
    err_release(&err);
    return code;
}

static char *replace_field(const char *text, const char *key, const char *value)
{
    json_t *doc = jsonx_loadb(text, strlen(text), 16, NULL);
    json_object_set_new(doc, key, json_string(value));
    char *out = jsonx_dumps(doc);
    json_decref(doc);
    return out;
}

static struct sns_verifier *test_verifier(void)
{
    char ca[128];
    snprintf(ca, sizeof(ca), "%s/ca.pem", pki.dir);
    struct sns_policy p = { .test_host = pki.host, .test_ca_file = ca, .cert_ca_file = ca };
    return sns_verifier_new(&p, NULL);
}

static void test_verify(void)
{
    int64_t now = clock_now_ns();
    char msg[200];
    struct sns_verifier *v = test_verifier();
    const char *cert = "SimpleNotificationService-test.pem";
    char *v1 = signed_message("sns-notification.json", cert, "signing", "1", now);
    char *v2 = signed_message("sns-notification.json", cert, "signing", "2", now);
    CHECK_INT(verify(v, v1, now, msg), ERR_NONE);
    CHECK_INT(verify(v, v2, now, msg), ERR_NONE);
    CHECK_INT(sns_verifier_fetches(v), 1); /* the certificate was fetched once, then cached */

    /* A changed field, a signature claiming the other version, an unknown version. */
    char *bad = replace_field(v1, "Message", "{\"Records\":[]}");
    CHECK_INT(verify(v, bad, now, msg), ERR_UNAUTHORIZED);
    CHECK(strstr(msg, "does not verify") != NULL);
    free(bad);
    bad = replace_field(v1, "SignatureVersion", "2");
    CHECK_INT(verify(v, bad, now, msg), ERR_UNAUTHORIZED);
    free(bad);
    bad = replace_field(v1, "SignatureVersion", "3");
    CHECK_INT(verify(v, bad, now, msg), ERR_UNAUTHORIZED);
    CHECK(strstr(msg, "SignatureVersion") != NULL);
    free(bad);
    bad = replace_field(v1, "Signature", "not base64 !!");
    CHECK_INT(verify(v, bad, now, msg), ERR_UNAUTHORIZED);
    free(bad);

    /* Stale and future timestamps. */
    CHECK_INT(verify(v, v1, now + 2 * 3600 * NS_PER_SEC, msg), ERR_UNAUTHORIZED);
    CHECK(strstr(msg, "old") != NULL);
    CHECK_INT(verify(v, v1, now - 600 * NS_PER_SEC, msg), ERR_UNAUTHORIZED);
    CHECK(strstr(msg, "future") != NULL);

    /* Signed by a key whose certificate does not chain to the trusted CA. */
    char *rogue = signed_message("sns-notification.json", "SimpleNotificationService-rogue.pem",
                                 "rogue", "2", now);
    CHECK_INT(verify(v, rogue, now, msg), ERR_UNAUTHORIZED);
    CHECK(strstr(msg, "chain") != NULL);
    /* A valid-looking signature by another key than the certificate's. */
    char *mismatch = signed_message("sns-notification.json", cert, "rogue", "1", now);
    CHECK_INT(verify(v, mismatch, now, msg), ERR_UNAUTHORIZED);

    /* The production policy refuses the test host outright, before any fetch. */
    struct sns_verifier *prod = sns_verifier_new(NULL, NULL);
    CHECK_INT(verify(prod, v1, now, msg), ERR_UNAUTHORIZED);
    CHECK(strstr(msg, "not an SNS host") != NULL);
    CHECK_INT(sns_verifier_fetches(prod), 0);
    sns_verifier_free(prod);

    /* Test host but without the test CA: the TLS fetch fails, a temporary error (5xx). */
    struct sns_policy noca = { .test_host = pki.host };
    struct sns_verifier *v_noca = sns_verifier_new(&noca, NULL);
    CHECK_INT(verify(v_noca, v1, now, msg), ERR_UNAVAILABLE);
    sns_verifier_free(v_noca);

    /* Certificate host unreachable. */
    char *dead = replace_field(v1, "SigningCertURL", "https://127.0.0.1:1/x.pem");
    struct sns_policy deadp = { .test_host = "127.0.0.1:1" };
    struct sns_verifier *v_dead = sns_verifier_new(&deadp, NULL);
    CHECK_INT(verify(v_dead, dead, now, msg), ERR_UNAVAILABLE);
    sns_verifier_free(v_dead);
    free(dead);

    free(v1);
    free(v2);
    free(rogue);
    free(mismatch);
    sns_verifier_free(v);
}

/* An injected fetcher: serves signing.pem from memory and counts calls. */
struct memfetch {
    struct buf pem;
    int calls;
};

static int mem_fetch(void *ctx, const char *url, struct buf *out, struct err *err)
{
    struct memfetch *f = ctx;
    (void)url;
    (void)err;
    f->calls++;
    buf_append(out, f->pem.data, f->pem.len);
    return 0;
}

static void test_injected_fetcher(void)
{
    struct memfetch mf = { BUF_INIT, 0 };
    char path[128];
    snprintf(path, sizeof(path), "%s/signing.pem", pki.dir);
    FILE *f = fopen(path, "rb");
    char chunk[4096];
    size_t n;
    while (f && (n = fread(chunk, 1, sizeof(chunk), f)) > 0)
        buf_append(&mf.pem, chunk, n);
    if (f)
        fclose(f);
    struct sns_policy p = { .test_host = pki.host };
    struct sns_fetcher fetcher = { mem_fetch, &mf };
    struct sns_verifier *v = sns_verifier_new(&p, &fetcher);
    int64_t now = clock_now_ns();
    char *v2 = signed_message("sns-subscription.json", "SimpleNotificationService-test.pem",
                              "signing", "2", now);
    CHECK_INT(verify(v, v2, now, NULL), ERR_NONE);
    CHECK_INT(verify(v, v2, now, NULL), ERR_NONE);
    CHECK_INT(mf.calls, 1);
    sns_verifier_free(v);
    buf_release(&mf.pem);
    free(v2);
}

/* Runs trigger_receive on text with SNS headers of the given type. */
static void receive(const struct trigger *t, struct sns_verifier *v, const char *type,
                    const char *text, struct trigger_result *r)
{
    struct fake_headers hdr = { { "x-amz-sns-message-type", type, "User-Agent",
                                  "Amazon Simple Notification Service Agent", "Content-Type",
                                  "text/plain; charset=UTF-8", NULL } };
    struct buf body = BUF_INIT;
    buf_puts(&body, text);
    struct hook_request req = fake_request(&hdr, &body);
    trigger_result_init(r);
    trigger_receive(t, &req, v, clock_now_ns(), r);
    buf_release(&body);
}

static void test_trigger_sns(void)
{
    const char *const topics[] = { "arn:aws:sns:eu-west-1:111122223333:uploads" };
    struct trigger t = { .auth = { .mode = HOOKAUTH_SNS, .topic_arns = topics, .ntopics = 1 },
                         .rule = { .prefix = "incoming/" } };
    struct sns_verifier *v = test_verifier();
    int64_t now = clock_now_ns();
    const char *cert = "SimpleNotificationService-test.pem";
    struct trigger_result r;

    char *sub = signed_message("sns-subscription.json", cert, "signing", "1", now);
    receive(&t, v, "SubscriptionConfirmation", sub, &r);
    CHECK_INT(r.outcome, TRIGGER_SUBSCRIBE);
    CHECK_INT(r.status, 200);
    CHECK(r.subscribe_url && strstr(r.subscribe_url, "/confirm.xml") != NULL);
    /* What the lead's loop does next: GET SubscribeURL. */
    char ca[128];
    snprintf(ca, sizeof(ca), "%s/ca.pem", pki.dir);
    struct httpc_options o = { .https_only = true, .ca_file = ca };
    struct httpc *h = httpc_new(&o, NULL);
    struct httpc_response resp;
    httpc_response_init(&resp);
    struct httpc_request rq = { .url = r.subscribe_url };
    CHECK_INT(httpc_do(h, &rq, &resp, NULL), 0);
    CHECK_INT(resp.status, 200);
    CHECK_STR(resp.body.data, "<ConfirmSubscriptionResponse/>");
    httpc_response_release(&resp);
    httpc_free(h);
    trigger_result_release(&r);

    char *note = signed_message("sns-notification.json", cert, "signing", "2", now);
    receive(&t, v, "Notification", note, &r);
    CHECK_INT(r.outcome, TRIGGER_ACCEPTED);
    CHECK_INT(r.status, 200);
    CHECK_INT(r.nmatched, 1);
    CHECK_STR(r.matches[0].event->key, "incoming/run 42/data=v2.tar");
    CHECK_STR(r.hook.delivery_id, "22b80b92-fdea-4c2c-8f9d-bdfb0c7bf324");
    trigger_result_release(&r);

    char *test = signed_message("sns-testevent.json", cert, "signing", "1", now);
    receive(&t, v, "Notification", test, &r);
    CHECK_INT(r.outcome, TRIGGER_IGNORED);
    CHECK_INT(r.status, 200);
    trigger_result_release(&r);

    char *unsub = signed_message("sns-unsubscribe.json", cert, "signing", "2", now);
    receive(&t, v, "UnsubscribeConfirmation", unsub, &r);
    CHECK_INT(r.outcome, TRIGGER_UNSUBSCRIBED);
    trigger_result_release(&r);

    /* A forged notification is refused with a 4xx, which SNS does not retry. */
    char *forged = replace_field(note, "Message", "{\"Records\":[]}");
    receive(&t, v, "Notification", forged, &r);
    CHECK_INT(r.outcome, TRIGGER_REJECTED);
    CHECK_INT(r.status, 403);
    trigger_result_release(&r);

    /* Another topic than the allowed one. */
    const char *const other[] = { "arn:aws:sns:eu-west-1:111122223333:other" };
    struct trigger t2 = t;
    t2.auth.topic_arns = other;
    receive(&t2, v, "Notification", note, &r);
    CHECK_INT(r.status, 403);
    CHECK(strstr(r.err.msg, "TopicArn") != NULL);
    trigger_result_release(&r);

    /* Raw delivery has no signature to check. */
    struct buf raw = BUF_INIT;
    fixture("s3-put.json", &raw);
    struct fake_headers rh = { { "x-amz-sns-message-type", "Notification", "x-amz-sns-rawdelivery",
                                 "true", NULL } };
    struct hook_request req = fake_request(&rh, &raw);
    trigger_result_init(&r);
    trigger_receive(&t, &req, v, now, &r);
    CHECK_INT(r.outcome, TRIGGER_REJECTED);
    trigger_result_release(&r);
    buf_release(&raw);

    /* The certificate cannot be fetched: 503 so that SNS retries. */
    struct sns_policy deadp = { .test_host = "127.0.0.1:1" };
    struct sns_verifier *v_dead = sns_verifier_new(&deadp, NULL);
    char *dead = replace_field(note, "SigningCertURL", "https://127.0.0.1:1/x.pem");
    receive(&t, v_dead, "Notification", dead, &r);
    CHECK_INT(r.outcome, TRIGGER_RETRY);
    CHECK_INT(r.status, 503);
    trigger_result_release(&r);
    sns_verifier_free(v_dead);

    /* Another auth mode still verifies an SNS envelope before trusting it. */
    const char *const pw[] = { "sns:correct-horse" };
    struct trigger tb = { .auth = { .mode = HOOKAUTH_BASIC, .secrets = pw, .nsecrets = 1 } };
    struct fake_headers bh = { { "x-amz-sns-message-type", "Notification", "Authorization",
                                 "Basic c25zOmNvcnJlY3QtaG9yc2U=", NULL } };
    struct buf fb = BUF_INIT;
    buf_puts(&fb, forged);
    req = fake_request(&bh, &fb);
    trigger_result_init(&r);
    trigger_receive(&tb, &req, v, now, &r);
    CHECK_INT(r.outcome, TRIGGER_REJECTED);
    trigger_result_release(&r);
    /* ... and challenges a request without credentials, as SNS expects. */
    bh.kv[2] = NULL;
    trigger_result_init(&r);
    trigger_receive(&tb, &req, v, now, &r);
    CHECK_INT(r.status, 401);
    CHECK(r.challenge);
    trigger_result_release(&r);
    buf_release(&fb);

    free(dead);
    free(forged);
    free(sub);
    free(note);
    free(test);
    free(unsub);
    sns_verifier_free(v);
}

int main(void)
{
    test_string_to_sign();
    test_urls();
    if (testpki_setup(&pki) < 0) {
        fprintf(stderr, "cannot set up the test PKI (openssl CLI) and HTTPS server\n");
        testpki_teardown(&pki);
        return 1;
    }
    test_verify();
    test_injected_fetcher();
    test_trigger_sns();
    testpki_teardown(&pki);
    return check_done();
}
