/*
 * crypto: the few primitives trainyard needs, over OpenSSL's libcrypto: SHA-256 (tokens are
 * stored only as hashes), HMAC-SHA256 (webhook signatures), constant-time comparison, random
 * bytes from the kernel, base64, and random identifiers.
 */
#ifndef TY_CRYPTO_H
#define TY_CRYPTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/buf.h"

#define SHA256_LEN     32
#define SHA256_HEX_LEN 65 /* with NUL */

void crypto_sha256(const void *data, size_t len, unsigned char out[SHA256_LEN]);
/* Lowercase hex digest, NUL-terminated. */
void crypto_sha256_hex(const void *data, size_t len, char out[SHA256_HEX_LEN]);
void crypto_hmac_sha256(const void *key, size_t keylen, const void *data, size_t len,
                        unsigned char out[SHA256_LEN]);
/* Compares in time independent of the contents. */
bool crypto_equal(const void *a, const void *b, size_t len);
/* Fills out with len bytes from getrandom(2); aborts if the kernel cannot supply them. */
void crypto_random(void *out, size_t len);
/* Appends the base64 (standard alphabet, padded) of data to out. */
void crypto_base64_encode(struct buf *out, const void *data, size_t len);
/* Decodes base64 (padding optional, whitespace ignored) into out; -1 when malformed. */
int crypto_base64_decode(struct buf *out, const char *text, size_t len);
/* Writes `nchars` random characters of [a-z0-9], the first a letter, so the result is a valid
 * DNS-1035 label fragment; out must hold nchars+1 bytes. */
void crypto_random_id(char *out, size_t nchars);
/* Lowercase hex of len bytes into out (2*len+1 bytes). */
void crypto_hex(const void *data, size_t len, char *out);

#endif
