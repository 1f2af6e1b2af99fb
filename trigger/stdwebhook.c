/*
 * stdwebhook: HMAC-SHA256 signing and verification per Standard Webhooks. It does not choose
 * ids, read clocks or keep replay state: callers pass the time and store the ids they have seen.
 * Thread-safe, no shared state.
 */
#include "trigger/stdwebhook.h"

#include "core/crypto.h"
#include "core/parse.h"
#include "core/xalloc.h"

#define KEY_MIN        16
#define SIG_HEADER_MAX 4096

int stdwebhook_key(const char *secret, struct buf *key, struct err *err)
{
    const char *b64 = strncmp(secret, "whsec_", 6) == 0 ? secret + 6 : secret;
    buf_reset(key);
    if (crypto_base64_decode(key, b64, strlen(b64)) < 0)
        return err_set(err, ERR_INVALID, "webhook secret is not whsec_<base64>");
    if (key->len < KEY_MIN)
        return err_set(err, ERR_INVALID, "webhook secret decodes to %zu bytes, need at least %d",
                       key->len, KEY_MIN);
    return 0;
}

/* The timestamp is signed as the text that was sent, not as a reformatted number. */
static void mac(const void *key, size_t keylen, const char *id, const char *ts, const void *body,
                size_t len, unsigned char out[SHA256_LEN])
{
    struct buf msg = BUF_INIT;
    buf_printf(&msg, "%s.%s.", id, ts);
    buf_append(&msg, body, len);
    crypto_hmac_sha256(key, keylen, msg.data, msg.len, out);
    buf_release(&msg);
}

void stdwebhook_sign(const void *key, size_t keylen, const char *id, int64_t ts, const void *body,
                     size_t len, struct buf *out)
{
    unsigned char d[SHA256_LEN];
    char t[24];
    snprintf(t, sizeof(t), "%lld", (long long)ts);
    mac(key, keylen, id, t, body, len, d);
    buf_puts(out, "v1,");
    crypto_base64_encode(out, d, sizeof(d));
}

/* True when some "v1,<base64>" entry in the space-separated list equals d. Every entry is
 * compared, so the time does not tell which one matched. */
static bool any_match(const char *sig, const unsigned char d[SHA256_LEN])
{
    bool ok = false;
    struct buf raw = BUF_INIT;
    const char *p = sig;
    while (*p) {
        while (*p == ' ')
            p++;
        const char *end = p;
        while (*end && *end != ' ')
            end++;
        if (end - p > 3 && strncmp(p, "v1,", 3) == 0) {
            buf_reset(&raw);
            if (crypto_base64_decode(&raw, p + 3, (size_t)(end - p - 3)) == 0 &&
                raw.len == SHA256_LEN && crypto_equal(raw.data, d, SHA256_LEN))
                ok = true;
        }
        p = end;
    }
    buf_release(&raw);
    return ok;
}

int stdwebhook_verify(const char *const *secrets, size_t nsecrets, const char *id, const char *ts,
                      const char *sig, const void *body, size_t len, int64_t now_s,
                      int64_t tolerance_s, struct err *err)
{
    int64_t t;
    int rc = -1;
    struct buf key = BUF_INIT;
    if (!id || !*id || !ts || !sig)
        return err_set(err, ERR_UNAUTHORIZED,
                       "missing webhook-id, webhook-timestamp or webhook-signature header");
    if (strlen(sig) > SIG_HEADER_MAX)
        return err_set(err, ERR_UNAUTHORIZED, "webhook-signature header too long");
    if (parse_int64(ts, 0, INT64_MAX / 2, &t) < 0)
        return err_set(err, ERR_UNAUTHORIZED, "webhook-timestamp is not Unix seconds");
    if (t < now_s - tolerance_s || t > now_s + tolerance_s)
        return err_set(err, ERR_UNAUTHORIZED,
                       "webhook-timestamp %lld is more than %llds away from now (%lld)",
                       (long long)t, (long long)tolerance_s, (long long)now_s);
    for (size_t i = 0; i < nsecrets; i++) {
        unsigned char d[SHA256_LEN];
        if (stdwebhook_key(secrets[i], &key, err) < 0)
            goto out;
        mac(key.data, key.len, id, ts, body, len, d);
        if (any_match(sig, d)) {
            rc = 0;
            goto out;
        }
    }
    err_set(err, ERR_UNAUTHORIZED, "no webhook-signature matches a configured secret");
out:
    buf_release(&key);
    return rc;
}

char *stdwebhook_new_secret(void)
{
    unsigned char raw[32];
    struct buf b = BUF_INIT;
    crypto_random(raw, sizeof(raw));
    buf_puts(&b, "whsec_");
    crypto_base64_encode(&b, raw, sizeof(raw));
    return buf_detach(&b, NULL);
}
