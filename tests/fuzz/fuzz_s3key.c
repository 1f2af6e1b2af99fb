/*
 * fuzz_s3key: the small decoders inside hook payloads and headers: S3 object keys (form
 * encoding, %XX, UTF-8 checks), sequencers (normalising and ordering), base64 (SNS signatures,
 * Basic credentials) and Standard Webhooks secrets. Input: two NUL-separated strings.
 * Properties: a decoded key is valid UTF-8 without NUL and at most S3EVENT_KEY_MAX bytes;
 * sequencer order is antisymmetric and agrees with equality of the normalised forms.
 */
#include "core/crypto.h"
#include "core/utf8.h"
#include "trigger/s3event.h"
#include "trigger/stdwebhook.h"
#include "tests/fuzz/fuzz.h"

static void key(const char *text)
{
    struct err err;
    err_init(&err);
    char *k = s3event_decode_key(text, &err);
    if (k) {
        size_t n = strlen(k);
        FUZZ_ASSERT(n <= S3EVENT_KEY_MAX && utf8_valid(k, n));
    } else {
        FUZZ_ASSERT(err_is_set(&err));
    }
    free(k);
    err_release(&err);
}

static void sequencers(const char *a, const char *b)
{
    char na[128], nb[128];
    int ra = s3event_sequencer_norm(a, na, sizeof(na));
    int rb = s3event_sequencer_norm(b, nb, sizeof(nb));
    if (ra == 0 && rb == 0) {
        int ab = s3event_sequencer_cmp(na, nb), ba = s3event_sequencer_cmp(nb, na);
        FUZZ_ASSERT((ab < 0) == (ba > 0) && (ab == 0) == (ba == 0));
        FUZZ_ASSERT(s3event_sequencer_cmp(na, na) == 0);
    }
}

static void base64(const char *text, size_t len)
{
    struct buf out = BUF_INIT, again = BUF_INIT, back = BUF_INIT;
    if (crypto_base64_decode(&out, text, len) == 0) {
        crypto_base64_encode(&again, out.data, out.len);
        FUZZ_ASSERT(crypto_base64_decode(&back, again.data, again.len) == 0);
        FUZZ_ASSERT(back.len == out.len && (out.len == 0 || !memcmp(back.data, out.data, out.len)));
    }
    buf_release(&out);
    buf_release(&again);
    buf_release(&back);
    struct buf k = BUF_INIT;
    stdwebhook_key(text, &k, NULL);
    buf_release(&k);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    size_t na;
    const uint8_t *a = fuzz_take(&data, &size, 0, &na);
    char *sa = fuzz_cstr(a, na), *sb = fuzz_cstr(data, size);
    key(sa);
    sequencers(sa, sb);
    base64(sa, na);
    free(sa);
    free(sb);
    return 0;
}
