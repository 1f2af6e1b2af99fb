/*
 * Cross-checks of our signatures with independent implementations from npm (tests/interop):
 *   - Standard Webhooks: `standardwebhooks` verifies signatures made by webhook_sign(), and we
 *     verify signatures it makes;
 *   - SNS: AWS's `sns-validator` verifies messages signed (openssl CLI) over the canonical string
 *     that sns_string_to_sign() built, fetching the certificate from the test HTTPS server.
 * Skips (passing, with a message) only when node/npm are missing or `npm ci` cannot reach the
 * registry.
 */
#include "tests/unit/check.h"
#include "tests/unit/test_trigger.h"

#include <curl/curl.h>

#include "core/clock.h"
#include "core/jsonx.h"
#include "trigger/sns.h"
#include "trigger/stdwebhook.h"
#include "trigger/webhook.h"

static struct testpki pki;

static const char *const bodies[] = {
    "{\"type\":\"job.failed\",\"data\":{\"id\":\"j-1\"}}",
    "{\"text\":\"caf\xc3\xa9 \xe2\x9c\x93 \\\"quoted\\\" \\n newline\"}",
    "{}",
};

static void write_file(const char *name, const char *text)
{
    char path[160];
    snprintf(path, sizeof(path), "%s/%s", pki.dir, name);
    FILE *f = fopen(path, "w");
    if (f) {
        fputs(text, f);
        fclose(f);
    }
}

static void write_sw_vectors(void)
{
    json_t *arr = json_array();
    for (size_t i = 0; i < sizeof(bodies) / sizeof(bodies[0]); i++) {
        char *secret = stdwebhook_new_secret(), id[WEBHOOK_ID_LEN];
        int64_t ts = clock_now_ns() / NS_PER_SEC;
        struct webhook_headers h;
        webhook_new_id(id);
        CHECK_INT(webhook_sign(secret, id, ts, bodies[i], strlen(bodies[i]), &h, NULL), 0);
        json_array_append_new(arr,
                              json_pack("{s:s, s:s, s:I, s:s, s:s}", "secret", secret, "id", id,
                                        "timestamp", (json_int_t)ts, "body", bodies[i], "signature",
                                        h.lines[2] + strlen("webhook-signature: ")));
        webhook_headers_release(&h);
        free(secret);
    }
    char *text = jsonx_dumps(arr);
    write_file("sw-ours.json", text);
    free(text);
    json_decref(arr);
}

/* A message from a fixture, signed over our canonical string; Subject dropped when asked. */
static char *sns_signed(const char *name, const char *ver, bool no_subject, const char *message)
{
    struct buf body = BUF_INIT, sts = BUF_INIT, sig = BUF_INIT;
    char url[160], ts[CLOCK_RFC3339_MAX];
    struct sns_message m;
    fixture(name, &body);
    json_t *doc = jsonx_loadb(body.data, body.len, 16, NULL);
    snprintf(url, sizeof(url), "https://%s/SimpleNotificationService-test.pem", pki.host);
    json_object_set_new(doc, "SigningCertURL", json_string(url));
    json_object_set_new(doc, "Timestamp", json_string(clock_format(clock_now_ns(), ts)));
    json_object_set_new(doc, "SignatureVersion", json_string(ver));
    if (no_subject)
        json_object_del(doc, "Subject");
    if (message)
        json_object_set_new(doc, "Message", json_string(message));
    CHECK_INT(sns_message_parse(doc, &m, NULL), 0);
    sns_string_to_sign(&m, &sts);
    sns_message_release(&m);
    CHECK_INT(testpki_sign(&pki, "signing", strcmp(ver, "1") ? "sha256" : "sha1", sts.data, sts.len,
                           &sig),
              0);
    json_object_set_new(doc, "Signature", json_string(buf_cstr(&sig)));
    char *text = jsonx_dumps(doc);
    json_decref(doc);
    buf_release(&body);
    buf_release(&sts);
    buf_release(&sig);
    return text;
}

static void write_sns_vectors(void)
{
    json_t *valid = json_array(), *invalid = json_array();
    const char *odd = "line one\nline \"two\" caf\xc3\xa9 \xe2\x9c\x93 </tag> \\ end";
    char *texts[] = {
        sns_signed("sns-notification.json", "1", false, NULL),
        sns_signed("sns-notification.json", "2", false, NULL),
        sns_signed("sns-notification.json", "2", true, odd),
        sns_signed("sns-subscription.json", "1", false, NULL),
        sns_signed("sns-subscription.json", "2", false, NULL),
    };
    for (size_t i = 0; i < sizeof(texts) / sizeof(texts[0]); i++) {
        json_array_append_new(valid, json_string(texts[i]));
        /* The same message with its Message changed must be refused by the oracle too. */
        json_t *doc = jsonx_loadb(texts[i], strlen(texts[i]), 16, NULL);
        json_object_set_new(doc, "Message", json_string("tampered"));
        char *bad = jsonx_dumps(doc);
        json_array_append_new(invalid, json_string(bad));
        free(bad);
        json_decref(doc);
        free(texts[i]);
    }
    json_t *root = json_pack("{s:o, s:o}", "valid", valid, "invalid", invalid);
    char *text = jsonx_dumps(root);
    write_file("sns-messages.json", text);
    free(text);
    json_decref(root);
}

/* Verifies the signatures the npm library made. */
static void check_theirs(void)
{
    char path[160];
    snprintf(path, sizeof(path), "%s/sw-theirs.json", pki.dir);
    json_error_t jerr;
    json_t *arr = json_load_file(path, 0, &jerr);
    CHECK_INT(json_array_size(arr), sizeof(bodies) / sizeof(bodies[0]));
    for (size_t i = 0; i < json_array_size(arr); i++) {
        json_t *v = json_array_get(arr, i);
        const char *secrets[] = { jsonx_str(v, "secret") };
        const char *body = jsonx_str(v, "body");
        char ts[24];
        snprintf(ts, sizeof(ts), "%lld", (long long)jsonx_int(v, "timestamp", 0));
        struct err err;
        err_init(&err);
        CHECK_INT(stdwebhook_verify(secrets, 1, jsonx_str(v, "id"), ts, jsonx_str(v, "signature"),
                                    body, strlen(body), clock_now_ns() / NS_PER_SEC, 300, &err),
                  0);
        if (err_is_set(&err))
            fprintf(stderr, "their signature %zu: %s\n", i, err.msg);
        err_release(&err);
    }
    json_decref(arr);
}

int main(void)
{
    curl_global_init(CURL_GLOBAL_DEFAULT);
    if (testpki_setup(&pki) < 0) {
        fprintf(stderr, "cannot set up the test PKI (openssl CLI) and HTTPS server\n");
        testpki_teardown(&pki);
        return 1;
    }
    write_sw_vectors();
    write_sns_vectors();
    char cmd[512];
    snprintf(cmd, sizeof(cmd), "bash ../interop/run.sh '%s' '%s' '%s/ca.pem'", pki.dir, pki.host,
             pki.dir);
    int rc = system(cmd);
    rc = WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
    if (rc == 77) {
        printf("SKIP: the npm cross-check cannot run here (see above)\n");
    } else {
        CHECK_INT(rc, 0);
        check_theirs();
    }
    testpki_teardown(&pki);
    curl_global_cleanup();
    return check_done();
}
