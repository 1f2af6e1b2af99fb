/*
 * hookauth: per-trigger authentication of hook requests. It does not parse bodies (hook.c) nor
 * keep replay state (the store dedupes webhook-id and SNS MessageId). Thread-safe apart from the
 * verifier, which has its own lock.
 */
#include "trigger/hookauth.h"

#include <strings.h>

#include "core/crypto.h"
#include "core/xalloc.h"
#include "trigger/stdwebhook.h"

#define NS_PER_S 1000000000LL

const char *hookauth_mode_name(enum hookauth_mode m)
{
    static const char *const names[] = { "none", "bearer", "header", "basic", "hmac", "sns" };
    return (unsigned)m < sizeof(names) / sizeof(names[0]) ? names[m] : "unknown";
}

int hookauth_mode_parse(const char *name, enum hookauth_mode *out)
{
    for (int m = HOOKAUTH_NONE; m <= HOOKAUTH_SNS; m++) {
        if (strcmp(name, hookauth_mode_name((enum hookauth_mode)m)) == 0) {
            *out = (enum hookauth_mode)m;
            return 0;
        }
    }
    return -1;
}

static bool token_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           strchr("!#$%&'*+-.^_`|~", c);
}

static bool same(const char *a, size_t alen, const char *b, size_t blen)
{
    unsigned char da[SHA256_LEN], db[SHA256_LEN];
    crypto_sha256(a, alen, da);
    crypto_sha256(b, blen, db);
    return crypto_equal(da, db, SHA256_LEN);
}

#define DIGEST_WHOLE "sha256:"
#define DIGEST_TOKEN "sha256-token:"

/* The hex part of a digest-form secret, or NULL for a plain one; *token says which kind. */
static const char *digest_hex(const char *s, bool *token)
{
    *token = strncmp(s, DIGEST_TOKEN, strlen(DIGEST_TOKEN)) == 0;
    if (*token)
        return s + strlen(DIGEST_TOKEN);
    return strncmp(s, DIGEST_WHOLE, strlen(DIGEST_WHOLE)) == 0 ? s + strlen(DIGEST_WHOLE) : NULL;
}

static bool valid_hex64(const char *h)
{
    size_t n = strspn(h, "0123456789abcdef");
    return n == 2 * SHA256_LEN && h[n] == '\0';
}

/* got against one configured secret, plain or digest, in constant time. */
static bool matches(const char *secret, const char *got, size_t len)
{
    bool token;
    const char *hex = digest_hex(secret, &token);
    if (!hex)
        return same(got, len, secret, strlen(secret));
    unsigned char want[SHA256_LEN] = { 0 }, have[SHA256_LEN];
    for (size_t i = 0; i < SHA256_LEN && valid_hex64(hex); i++) {
        unsigned v;
        sscanf(hex + 2 * i, "%2x", &v);
        want[i] = (unsigned char)v;
    }
    crypto_sha256(got, len, have);
    return crypto_equal(want, have, SHA256_LEN);
}

static bool hashable(enum hookauth_mode mode)
{
    return mode == HOOKAUTH_BEARER || mode == HOOKAUTH_HEADER || mode == HOOKAUTH_BASIC;
}

char *hookauth_hash(enum hookauth_mode mode, const char *secret)
{
    if (!hashable(mode))
        return NULL;
    bool token;
    if (digest_hex(secret, &token))
        return xstrdup(secret);
    char hex[SHA256_HEX_LEN];
    crypto_sha256_hex(secret, strlen(secret), hex);
    bool one_word = mode == HOOKAUTH_BEARER && !strchr(secret, ' ');
    return xasprintf("%s%s", one_word ? DIGEST_TOKEN : DIGEST_WHOLE, hex);
}

int hookauth_validate(const struct hookauth *a, struct err *err)
{
    struct buf key = BUF_INIT;
    if (a->mode != HOOKAUTH_NONE && a->mode != HOOKAUTH_SNS && a->nsecrets == 0)
        err_field(err, "/auth/secrets", "%s authentication needs at least one secret",
                  hookauth_mode_name(a->mode));
    for (size_t i = 0; i < a->nsecrets; i++) {
        char ptr[48];
        snprintf(ptr, sizeof(ptr), "/auth/secrets/%zu", i);
        const char *s = a->secrets[i];
        struct err e;
        err_init(&e);
        bool token;
        const char *hex = s ? digest_hex(s, &token) : NULL;
        if (hex) {
            if (!valid_hex64(hex) || !hashable(a->mode))
                err_field(err, ptr,
                          "a digest secret is sha256:<64 hex digits>, for bearer, "
                          "header or basic only");
        } else if (!s || strlen(s) < 8)
            err_field(err, ptr, "a secret needs at least 8 characters");
        else if (a->mode == HOOKAUTH_BASIC && !strchr(s, ':'))
            err_field(err, ptr, "basic credentials are written user:password");
        else if (a->mode == HOOKAUTH_HMAC && stdwebhook_key(s, &key, &e) < 0)
            err_field(err, ptr, "%s", e.msg);
        err_release(&e);
    }
    if (a->mode == HOOKAUTH_HEADER) {
        const char *h = a->header ? a->header : "";
        bool ok = *h && strcasecmp(h, "Authorization") != 0;
        for (const char *p = h; *p; p++)
            ok = ok && token_char(*p);
        if (!ok)
            err_field(err, "/auth/header", "a header name other than Authorization is required");
    }
    buf_release(&key);
    return err_is_set(err) ? -1 : 0;
}

/* True when got equals any secret; all secrets are compared. */
static bool any_secret(const struct hookauth *a, const char *got, size_t len)
{
    bool ok = false;
    for (size_t i = 0; i < a->nsecrets; i++)
        ok |= matches(a->secrets[i], got, len);
    return ok;
}

/* MinIO sends a one-word token as "Bearer <token>" and a two-word one ("Token abc") as is. */
static int check_bearer(const struct hookauth *a, const char *auth, struct err *err)
{
    bool ok = false;
    if (!auth)
        return err_set(err, ERR_UNAUTHORIZED, "missing Authorization header");
    for (size_t i = 0; i < a->nsecrets; i++) {
        const char *s = a->secrets[i];
        bool token, whole = digest_hex(s, &token) ? !token : strchr(s, ' ') != NULL;
        if (whole)
            ok |= matches(s, auth, strlen(auth));
        else if (strncasecmp(auth, "Bearer ", 7) == 0)
            ok |= matches(s, auth + 7, strlen(auth + 7));
    }
    return ok ? 0 : err_set(err, ERR_UNAUTHORIZED, "Authorization does not match the token");
}

static int check_basic(const struct hookauth *a, const char *auth, struct err *err)
{
    struct buf cred = BUF_INIT;
    int rc = -1;
    if (!auth || strncasecmp(auth, "Basic ", 6) != 0)
        return err_set(err, ERR_UNAUTHORIZED, "missing Basic Authorization header");
    if (crypto_base64_decode(&cred, auth + 6, strlen(auth + 6)) < 0)
        err_set(err, ERR_UNAUTHORIZED, "Basic credentials are not base64");
    else if (!any_secret(a, cred.data ? cred.data : "", cred.len))
        err_set(err, ERR_UNAUTHORIZED, "Basic credentials do not match");
    else
        rc = 0;
    buf_release(&cred);
    return rc;
}

static int check_sns(const struct hookauth *a, const struct hook *h, struct sns_verifier *v,
                     int64_t now_ns, struct err *err)
{
    if (!h || !h->sns.doc)
        return err_set(err, ERR_UNAUTHORIZED,
                       "not a signed SNS message (raw delivery carries no signature)");
    if (!v)
        return err_set(err, ERR_INTERNAL, "no SNS verifier configured");
    bool topic_ok = a->ntopics == 0;
    for (size_t i = 0; i < a->ntopics; i++)
        topic_ok |= strcmp(a->topic_arns[i], h->sns.topic_arn) == 0;
    if (!topic_ok)
        return err_set(err, ERR_UNAUTHORIZED, "TopicArn %.150s is not allowed", h->sns.topic_arn);
    return sns_verify(v, &h->sns, now_ns, err);
}

int hookauth_check(const struct hookauth *a, const struct hook_request *req, const struct hook *h,
                   struct sns_verifier *v, int64_t now_ns, struct err *err)
{
    const char *auth = req->header ? req->header(req->ctx, "Authorization") : NULL;
    switch (a->mode) {
    case HOOKAUTH_NONE:
        return 0;
    case HOOKAUTH_BEARER:
        return check_bearer(a, auth, err);
    case HOOKAUTH_HEADER: {
        const char *got = req->header ? req->header(req->ctx, a->header) : NULL;
        if (!got)
            return err_set(err, ERR_UNAUTHORIZED, "missing %.60s header", a->header);
        if (!any_secret(a, got, strlen(got)))
            return err_set(err, ERR_UNAUTHORIZED, "%.60s header does not match", a->header);
        return 0;
    }
    case HOOKAUTH_BASIC:
        return check_basic(a, auth, err);
    case HOOKAUTH_HMAC: {
        hook_header_fn get = req->header;
        if (!get)
            return err_set(err, ERR_UNAUTHORIZED, "no headers");
        return stdwebhook_verify(a->secrets, a->nsecrets, get(req->ctx, "webhook-id"),
                                 get(req->ctx, "webhook-timestamp"),
                                 get(req->ctx, "webhook-signature"), req->body, req->len,
                                 now_ns / NS_PER_S,
                                 a->tolerance_s > 0 ? a->tolerance_s : STDWEBHOOK_TOLERANCE_S, err);
    }
    case HOOKAUTH_SNS:
        return check_sns(a, h, v, now_ns, err);
    }
    return err_set(err, ERR_INTERNAL, "unknown authentication mode %d", (int)a->mode);
}
