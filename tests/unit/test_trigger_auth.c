/*
 * Tests of hook authentication (trigger/hookauth.c, stdwebhook.c) and of the status codes
 * trigger_receive answers each sender with (reference section 5.5).
 */
#include "tests/unit/check.h"
#include "tests/unit/test_trigger.h"

#include "core/clock.h"
#include "core/xalloc.h"
#include "trigger/hookauth.h"
#include "trigger/stdwebhook.h"
#include "trigger/trigger.h"

#define SECRET "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
#define MSG_ID "msg_p5jXN8AQM9LWM0D4loKWxJek"
#define BODY   "{\"test\": 2432232314}"
#define SIG    "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
#define TS     1614265330

static void test_stdwebhook_vector(void)
{
    struct buf key = BUF_INIT, sig = BUF_INIT;
    CHECK_INT(stdwebhook_key(SECRET, &key, NULL), 0);
    stdwebhook_sign(key.data, key.len, MSG_ID, TS, BODY, strlen(BODY), &sig);
    CHECK_STR(sig.data, SIG);
    const char *secrets[] = { SECRET };
    struct err err;
    err_init(&err);
    CHECK_INT(
        stdwebhook_verify(secrets, 1, MSG_ID, "1614265330", SIG, BODY, strlen(BODY), TS, 300, &err),
        0);
    /* Several signatures in the header, one of them ours; unknown schemes are skipped. */
    CHECK_INT(stdwebhook_verify(secrets, 1, MSG_ID, "1614265330", "v1a,AAAA v1,bm9wZQ== " SIG, BODY,
                                strlen(BODY), TS, 300, &err),
              0);
    /* Rotation: the second configured secret matches. */
    const char *rotated[] = { "whsec_"
                              "c2Vjb25kLXNlY3JldC1hdC1sZWFzdC0xNg==",
                              SECRET };
    CHECK_INT(
        stdwebhook_verify(rotated, 2, MSG_ID, "1614265330", SIG, BODY, strlen(BODY), TS, 300, &err),
        0);
    CHECK_INT(err.code, ERR_NONE);
    /* Stale, early, tampered, wrong id, missing. */
    CHECK_INT(stdwebhook_verify(secrets, 1, MSG_ID, "1614265330", SIG, BODY, strlen(BODY), TS + 301,
                                300, &err),
              -1);
    CHECK_INT(err.code, ERR_UNAUTHORIZED);
    CHECK(strstr(err.msg, "webhook-timestamp") != NULL);
    err_release(&err);
    CHECK_INT(stdwebhook_verify(secrets, 1, MSG_ID, "1614265330", SIG, BODY, strlen(BODY), TS - 301,
                                300, &err),
              -1);
    err_release(&err);
    CHECK_INT(stdwebhook_verify(secrets, 1, MSG_ID, "1614265330", SIG, "{\"test\": 2432232315}",
                                strlen(BODY), TS, 300, &err),
              -1);
    CHECK_STR(err.msg, "no webhook-signature matches a configured secret");
    err_release(&err);
    CHECK_INT(stdwebhook_verify(secrets, 1, "msg_other", "1614265330", SIG, BODY, strlen(BODY), TS,
                                300, &err),
              -1);
    err_release(&err);
    CHECK_INT(stdwebhook_verify(secrets, 1, MSG_ID, NULL, SIG, BODY, strlen(BODY), TS, 300, &err),
              -1);
    err_release(&err);
    CHECK_INT(
        stdwebhook_verify(secrets, 1, MSG_ID, "16142653x", SIG, BODY, strlen(BODY), TS, 300, &err),
        -1);
    err_release(&err);
    /* A truncated signature is not a prefix match. */
    CHECK_INT(stdwebhook_verify(secrets, 1, MSG_ID, "1614265330",
                                "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1O", BODY, strlen(BODY),
                                TS, 300, &err),
              -1);
    err_release(&err);
    CHECK_INT(stdwebhook_key("whsec_!!!", &key, &err), -1);
    err_release(&err);
    CHECK_INT(stdwebhook_key("whsec_c2hvcnQ=", &key, &err), -1); /* 5 bytes */
    err_release(&err);
    char *fresh = stdwebhook_new_secret();
    CHECK(strncmp(fresh, "whsec_", 6) == 0);
    CHECK_INT(stdwebhook_key(fresh, &key, NULL), 0);
    CHECK_INT(key.len, 32);
    free(fresh);
    buf_release(&key);
    buf_release(&sig);
}

/* Authenticates body with headers under a; returns the error code. */
static enum err_code auth(const struct hookauth *a, struct fake_headers *hdr, const char *body,
                          int64_t now_s)
{
    struct buf b = BUF_INIT;
    buf_puts(&b, body);
    struct hook_request req = fake_request(hdr, &b);
    struct err err;
    err_init(&err);
    hookauth_check(a, &req, NULL, NULL, now_s * NS_PER_SEC, &err);
    enum err_code code = err.code;
    err_release(&err);
    buf_release(&b);
    return code;
}

static void test_modes(void)
{
    /* MinIO: a one-word token is sent as "Bearer <token>", a two-word one as is. */
    const char *tokens[] = { "s3cr3t-token-1", "Token abcdefgh" };
    struct hookauth bearer = { .mode = HOOKAUTH_BEARER, .secrets = tokens, .nsecrets = 2 };
    struct fake_headers h1 = { { "Authorization", "Bearer s3cr3t-token-1", NULL } };
    CHECK_INT(auth(&bearer, &h1, "{}", 0), ERR_NONE);
    h1.kv[1] = "bearer s3cr3t-token-1";
    CHECK_INT(auth(&bearer, &h1, "{}", 0), ERR_NONE);
    h1.kv[1] = "Token abcdefgh";
    CHECK_INT(auth(&bearer, &h1, "{}", 0), ERR_NONE);
    h1.kv[1] = "Bearer Token abcdefgh";
    CHECK_INT(auth(&bearer, &h1, "{}", 0), ERR_UNAUTHORIZED);
    h1.kv[1] = "Bearer s3cr3t-token-";
    CHECK_INT(auth(&bearer, &h1, "{}", 0), ERR_UNAUTHORIZED);
    h1.kv[1] = "s3cr3t-token-1";
    CHECK_INT(auth(&bearer, &h1, "{}", 0), ERR_UNAUTHORIZED);
    CHECK_INT(auth(&bearer, NULL, "{}", 0), ERR_UNAUTHORIZED);

    /* EventBridge API_KEY: a header of our choosing. */
    const char *keys[] = { "k-0123456789" };
    struct hookauth header = {
        .mode = HOOKAUTH_HEADER, .header = "x-api-key", .secrets = keys, .nsecrets = 1
    };
    struct fake_headers h2 = { { "X-Api-Key", "k-0123456789", NULL } };
    CHECK_INT(auth(&header, &h2, "{}", 0), ERR_NONE);
    h2.kv[1] = "k-012345678";
    CHECK_INT(auth(&header, &h2, "{}", 0), ERR_UNAUTHORIZED);

    /* Basic (EventBridge BASIC, SNS credentials in the URL). */
    const char *creds[] = { "aladdin:opensesame" };
    struct hookauth basic = { .mode = HOOKAUTH_BASIC, .secrets = creds, .nsecrets = 1 };
    struct fake_headers h3 = { { "Authorization", "Basic YWxhZGRpbjpvcGVuc2VzYW1l", NULL } };
    CHECK_INT(auth(&basic, &h3, "{}", 0), ERR_NONE);
    h3.kv[1] = "Basic YWxhZGRpbjpvcGVuc2VzYW1m";
    CHECK_INT(auth(&basic, &h3, "{}", 0), ERR_UNAUTHORIZED);
    h3.kv[1] = "Bearer YWxhZGRpbjpvcGVuc2VzYW1l";
    CHECK_INT(auth(&basic, &h3, "{}", 0), ERR_UNAUTHORIZED);

    /* Standard Webhooks on the raw body. */
    const char *secrets[] = { SECRET };
    struct hookauth hmac = { .mode = HOOKAUTH_HMAC, .secrets = secrets, .nsecrets = 1 };
    struct fake_headers h4 = { { "webhook-id", MSG_ID, "webhook-timestamp", "1614265330",
                                 "webhook-signature", SIG, NULL } };
    CHECK_INT(auth(&hmac, &h4, BODY, TS + 299), ERR_NONE);
    CHECK_INT(auth(&hmac, &h4, BODY, TS + 301), ERR_UNAUTHORIZED);
    hmac.tolerance_s = 600;
    CHECK_INT(auth(&hmac, &h4, BODY, TS + 599), ERR_NONE);
    CHECK_INT(auth(&hmac, &h4, BODY " ", TS), ERR_UNAUTHORIZED); /* raw bytes, not re-serialised */

    /* SNS mode without a parsed envelope. */
    struct hookauth sns = { .mode = HOOKAUTH_SNS };
    CHECK_INT(auth(&sns, NULL, "{}", 0), ERR_UNAUTHORIZED);
}

static void test_validate(void)
{
    struct err err;
    err_init(&err);
    const char *weak[] = { "short", "whsec_!!!!!!!!" };
    struct hookauth a = { .mode = HOOKAUTH_HMAC, .secrets = weak, .nsecrets = 2 };
    CHECK_INT(hookauth_validate(&a, &err), -1);
    CHECK_INT(err.nfields, 2);
    err_release(&err);
    struct hookauth none = { .mode = HOOKAUTH_BEARER };
    CHECK_INT(hookauth_validate(&none, &err), -1);
    CHECK_STR(err.fields[0].pointer, "/auth/secrets");
    err_release(&err);
    const char *ok[] = { "abcdefgh1234" };
    struct hookauth hdr = {
        .mode = HOOKAUTH_HEADER, .header = "Authorization", .secrets = ok, .nsecrets = 1
    };
    CHECK_INT(hookauth_validate(&hdr, &err), -1);
    err_release(&err);
    hdr.header = "x-api-key";
    CHECK_INT(hookauth_validate(&hdr, &err), 0);
    const char *nocolon[] = { "useronly-password" };
    struct hookauth basic = { .mode = HOOKAUTH_BASIC, .secrets = nocolon, .nsecrets = 1 };
    CHECK_INT(hookauth_validate(&basic, &err), -1);
    err_release(&err);
    enum hookauth_mode m;
    CHECK_INT(hookauth_mode_parse("hmac", &m), 0);
    CHECK_INT(m, HOOKAUTH_HMAC);
    CHECK_INT(hookauth_mode_parse("magic", &m), -1);
}

/* trigger_receive on a fixture; returns the status. */
static int status_of(const struct trigger *t, struct fake_headers *hdr, const char *file,
                     const char *text, enum trigger_outcome *outcome)
{
    struct buf b = BUF_INIT;
    if (file)
        fixture(file, &b);
    else
        buf_puts(&b, text);
    struct hook_request req = fake_request(hdr, &b);
    struct trigger_result r;
    trigger_result_init(&r);
    trigger_receive(t, &req, NULL, clock_now_ns(), &r);
    int status = r.status;
    if (outcome)
        *outcome = r.outcome;
    trigger_result_release(&r);
    buf_release(&b);
    return status;
}

static void test_statuses(void)
{
    const char *tokens[] = { "minio-token-123" };
    struct trigger minio = { .sender = HOOK_SENDER_MINIO,
                             .auth = { .mode = HOOKAUTH_BEARER, .secrets = tokens, .nsecrets = 1 },
                             .rule = { .prefix = "incoming/" } };
    struct fake_headers good = { { "Authorization", "Bearer minio-token-123", NULL } };
    struct fake_headers bad = { { "Authorization", "Bearer nope", NULL } };
    enum trigger_outcome o;
    CHECK_INT(status_of(&minio, &good, "minio-put.json", NULL, &o), 200);
    CHECK_INT(o, TRIGGER_ACCEPTED);
    CHECK_INT(status_of(&minio, &good, "minio-get.json", NULL, &o), 200);
    CHECK_INT(o, TRIGGER_IGNORED);
    /* Bad token: 403 (MinIO logs a hint about the token). */
    CHECK_INT(status_of(&minio, &bad, "minio-put.json", NULL, &o), 403);
    CHECK_INT(o, TRIGGER_REJECTED);
    /* Authentic but malformed: 200, or MinIO's queue would retry it forever. */
    CHECK_INT(status_of(&minio, &good, NULL, "{\"EventName\": 1", &o), 200);
    CHECK_INT(o, TRIGGER_REJECTED);
    /* Rule does not match: acknowledged. */
    struct trigger other = minio;
    other.rule.prefix = "elsewhere/";
    CHECK_INT(status_of(&other, &good, "minio-put.json", NULL, &o), 200);
    CHECK_INT(o, TRIGGER_IGNORED);

    const char *keys[] = { "eventbridge-key-1" };
    struct trigger eb = {
        .auth = { .mode = HOOKAUTH_HEADER, .header = "x-api-key", .secrets = keys, .nsecrets = 1 }
    };
    struct fake_headers ebh = { { "User-Agent", "Amazon/EventBridge/ApiDestinations", "x-api-key",
                                  "eventbridge-key-1", NULL } };
    CHECK_INT(status_of(&eb, &ebh, "eventbridge-created.json", NULL, &o), 200);
    CHECK_INT(o, TRIGGER_ACCEPTED);
    CHECK_INT(status_of(&eb, &ebh, NULL, "not json", &o), 400);
    ebh.kv[3] = "wrong";
    CHECK_INT(status_of(&eb, &ebh, "eventbridge-created.json", NULL, &o), 401);

    /* Oversized bodies: 413 before anything else. */
    struct trigger small = eb;
    small.limits.max_body = 100;
    CHECK_INT(status_of(&small, &ebh, "eventbridge-created.json", NULL, &o), 413);

    /* Generic Standard Webhooks sender with a Records body. */
    const char *secrets[] = { SECRET };
    struct trigger gen = { .auth = { .mode = HOOKAUTH_HMAC, .secrets = secrets, .nsecrets = 1 } };
    CHECK_INT(status_of(&gen, NULL, "s3-put.json", NULL, &o), 401);
    CHECK_INT(trigger_status(HOOK_SENDER_SNS, TRIGGER_REJECTED, ERR_INVALID), 400);
    CHECK_INT(trigger_status(HOOK_SENDER_SNS, TRIGGER_REJECTED, ERR_UNAUTHORIZED), 403);
    CHECK_INT(trigger_status(HOOK_SENDER_EVENTBRIDGE, TRIGGER_RETRY, ERR_UPSTREAM), 503);
}

/* Digest-form secrets (what the daemon stores) accept exactly what the plain ones accept. */
static void test_hashed(void)
{
    char *one = hookauth_hash(HOOKAUTH_BEARER, "s3cr3t-token-1");
    char *two = hookauth_hash(HOOKAUTH_BEARER, "Token abcdefgh");
    CHECK(strncmp(one, "sha256-token:", 13) == 0);
    CHECK(strncmp(two, "sha256:", 7) == 0);
    CHECK(hookauth_hash(HOOKAUTH_HMAC, "whsec_abc") == NULL);
    const char *tokens[] = { one, two };
    struct hookauth bearer = { .mode = HOOKAUTH_BEARER, .secrets = tokens, .nsecrets = 2 };
    struct fake_headers h1 = { { "Authorization", "Bearer s3cr3t-token-1", NULL } };
    CHECK_INT(auth(&bearer, &h1, "{}", 0), ERR_NONE);
    h1.kv[1] = "Token abcdefgh";
    CHECK_INT(auth(&bearer, &h1, "{}", 0), ERR_NONE);
    h1.kv[1] = "Bearer Token abcdefgh";
    CHECK_INT(auth(&bearer, &h1, "{}", 0), ERR_UNAUTHORIZED);
    h1.kv[1] = "s3cr3t-token-1";
    CHECK_INT(auth(&bearer, &h1, "{}", 0), ERR_UNAUTHORIZED);
    h1.kv[1] = "Bearer s3cr3t-token-2";
    CHECK_INT(auth(&bearer, &h1, "{}", 0), ERR_UNAUTHORIZED);
    /* The digest itself is not a credential. */
    char *stolen = xasprintf("Bearer %s", one);
    h1.kv[1] = stolen;
    CHECK_INT(auth(&bearer, &h1, "{}", 0), ERR_UNAUTHORIZED);
    free(stolen);

    char *cred = hookauth_hash(HOOKAUTH_BASIC, "aladdin:opensesame");
    const char *creds[] = { cred };
    struct hookauth basic = { .mode = HOOKAUTH_BASIC, .secrets = creds, .nsecrets = 1 };
    struct fake_headers h3 = { { "Authorization", "Basic YWxhZGRpbjpvcGVuc2VzYW1l", NULL } };
    CHECK_INT(auth(&basic, &h3, "{}", 0), ERR_NONE);
    h3.kv[1] = "Basic YWxhZGRpbjpvcGVuc2VzYW1m";
    CHECK_INT(auth(&basic, &h3, "{}", 0), ERR_UNAUTHORIZED);

    char *key = hookauth_hash(HOOKAUTH_HEADER, "k-0123456789");
    const char *keys[] = { key };
    struct hookauth header = {
        .mode = HOOKAUTH_HEADER, .header = "x-api-key", .secrets = keys, .nsecrets = 1
    };
    struct fake_headers h2 = { { "X-Api-Key", "k-0123456789", NULL } };
    CHECK_INT(auth(&header, &h2, "{}", 0), ERR_NONE);
    h2.kv[1] = "k-012345678";
    CHECK_INT(auth(&header, &h2, "{}", 0), ERR_UNAUTHORIZED);

    struct err err;
    err_init(&err);
    CHECK_INT(hookauth_validate(&bearer, &err), 0);
    const char *bad[] = { "sha256:abc", one };
    struct hookauth hmac = { .mode = HOOKAUTH_HMAC, .secrets = bad + 1, .nsecrets = 1 };
    CHECK_INT(hookauth_validate(&hmac, &err), -1); /* hmac needs the secret itself */
    err_release(&err);
    bearer.secrets = bad;
    CHECK_INT(hookauth_validate(&bearer, &err), -1);
    CHECK_INT(err.nfields, 1);
    err_release(&err);
    free(one);
    free(two);
    free(cred);
    free(key);
}

int main(void)
{
    test_stdwebhook_vector();
    test_modes();
    test_hashed();
    test_validate();
    test_statuses();
    return check_done();
}
