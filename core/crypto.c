/* crypto: thin wrappers over libcrypto and getrandom(2). Thread-safe. */
#include "core/crypto.h"

#include <errno.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <pthread.h>
#include <sys/random.h>

static EVP_MD *sha256_md;
static pthread_key_t sha256_ctx_key;
static pthread_once_t sha256_once = PTHREAD_ONCE_INIT;

static void free_ctx(void *ctx)
{
    EVP_MD_CTX_free(ctx);
}

/* Fetched once: EVP_sha256() makes OpenSSL 3 look the algorithm up, under a lock, per digest. */
static void sha256_fetch(void)
{
    sha256_md = EVP_MD_fetch(NULL, "SHA256", NULL);
    if (!sha256_md || pthread_key_create(&sha256_ctx_key, free_ctx) != 0)
        abort();
}

/* Each thread keeps one digest context (freed when the thread ends): EVP_Digest() allocates and
 * sets one up per call, 20 times the cost of hashing a token. */
void crypto_sha256(const void *data, size_t len, unsigned char out[SHA256_LEN])
{
    pthread_once(&sha256_once, sha256_fetch);
    EVP_MD_CTX *ctx = pthread_getspecific(sha256_ctx_key);
    if (!ctx) {
        ctx = EVP_MD_CTX_new();
        if (!ctx || pthread_setspecific(sha256_ctx_key, ctx) != 0)
            abort();
    }
    unsigned int n = SHA256_LEN;
    if (!EVP_DigestInit_ex2(ctx, sha256_md, NULL) || !EVP_DigestUpdate(ctx, data, len) ||
        !EVP_DigestFinal_ex(ctx, out, &n))
        abort();
}

void crypto_hex(const void *data, size_t len, char *out)
{
    static const char hex[] = "0123456789abcdef";
    const unsigned char *p = data;
    for (size_t i = 0; i < len; i++) {
        out[2 * i] = hex[p[i] >> 4];
        out[2 * i + 1] = hex[p[i] & 15];
    }
    out[2 * len] = '\0';
}

void crypto_sha256_hex(const void *data, size_t len, char out[SHA256_HEX_LEN])
{
    unsigned char d[SHA256_LEN];
    crypto_sha256(data, len, d);
    crypto_hex(d, SHA256_LEN, out);
}

void crypto_hmac_sha256(const void *key, size_t keylen, const void *data, size_t len,
                        unsigned char out[SHA256_LEN])
{
    unsigned int n = SHA256_LEN;
    if (!HMAC(EVP_sha256(), key, (int)keylen, data, len, out, &n))
        abort();
}

bool crypto_equal(const void *a, const void *b, size_t len)
{
    return CRYPTO_memcmp(a, b, len) == 0;
}

void crypto_random(void *out, size_t len)
{
    unsigned char *p = out;
    while (len > 0) {
        ssize_t n = getrandom(p, len, 0);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            abort();
        }
        p += n;
        len -= (size_t)n;
    }
}

void crypto_base64_encode(struct buf *out, const void *data, size_t len)
{
    size_t need = 4 * ((len + 2) / 3);
    buf_reserve(out, need);
    int n = EVP_EncodeBlock((unsigned char *)out->data + out->len, data, (int)len);
    out->len += (size_t)n;
    out->data[out->len] = '\0';
}

static int b64_value(unsigned char c)
{
    if (c >= 'A' && c <= 'Z')
        return c - 'A';
    if (c >= 'a' && c <= 'z')
        return c - 'a' + 26;
    if (c >= '0' && c <= '9')
        return c - '0' + 52;
    if (c == '+' || c == '-')
        return 62;
    if (c == '/' || c == '_')
        return 63;
    return -1;
}

int crypto_base64_decode(struct buf *out, const char *text, size_t len)
{
    unsigned acc = 0;
    int bits = 0;
    size_t pad = 0;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)text[i];
        if (c == ' ' || c == '\n' || c == '\r' || c == '\t')
            continue;
        if (c == '=') {
            pad++;
            continue;
        }
        int v = b64_value(c);
        if (v < 0 || pad)
            return -1;
        acc = (acc << 6) | (unsigned)v;
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            buf_putc(out, (char)((acc >> bits) & 0xff));
        }
    }
    return pad > 2 ? -1 : 0;
}

void crypto_random_id(char *out, size_t nchars)
{
    static const char alphabet[] = "abcdefghijklmnopqrstuvwxyz0123456789";
    unsigned char r[64];
    for (size_t i = 0; i < nchars; i++) {
        if (i % sizeof(r) == 0)
            crypto_random(r, sizeof(r));
        unsigned char x = r[i % sizeof(r)];
        /* 252 = 7 * 36: values above are rerolled so every character is equally likely. */
        while (x >= 252) {
            crypto_random(&x, 1);
        }
        out[i] = i == 0 ? alphabet[x % 26] : alphabet[x % 36];
    }
    out[nchars] = '\0';
}
