/*
 * stdwebhook: Standard Webhooks (spec v1.0.0) symmetric signatures, used both to verify inbound
 * hook deliveries and to sign our outbound job notifications.
 *
 *   webhook-id: msg_...           the message id, the same on every retry
 *   webhook-timestamp: 1614265330 Unix seconds of this attempt
 *   webhook-signature: v1,<base64 HMAC-SHA256(key, id "." timestamp "." body)> [v1,<...> ...]
 *
 * The key is base64-decode(secret without its "whsec_" prefix). Pure functions, thread-safe.
 */
#ifndef TY_STDWEBHOOK_H
#define TY_STDWEBHOOK_H

#include <stddef.h>
#include <stdint.h>

#include "core/buf.h"
#include "core/err.h"

#define STDWEBHOOK_TOLERANCE_S 300 /* the reference libraries' window, either side of now */

/* Decodes a "whsec_<base64>" secret (the prefix is optional) into key. Fails with ERR_INVALID
 * when the text is not base64 or the key is shorter than 16 bytes. */
int stdwebhook_key(const char *secret, struct buf *key, struct err *err);

/* Appends one "v1,<base64>" signature of (id, ts, body) under key to out. */
void stdwebhook_sign(const void *key, size_t keylen, const char *id, int64_t ts, const void *body,
                     size_t len, struct buf *out);

/* Verifies a delivery against any of nsecrets secrets (several while one is rotated).
 * id, ts and sig are the three header values (NULL when absent). Accepts when some "v1,"
 * entry of sig matches some secret, comparing digests in constant time, and ts is within
 * tolerance_s of now_s. Fails with ERR_UNAUTHORIZED saying which check failed, or ERR_INVALID
 * when a configured secret is malformed. */
int stdwebhook_verify(const char *const *secrets, size_t nsecrets, const char *id, const char *ts,
                      const char *sig, const void *body, size_t len, int64_t now_s,
                      int64_t tolerance_s, struct err *err);

/* Makes a fresh secret "whsec_" + base64 of 32 random bytes; caller frees. */
char *stdwebhook_new_secret(void);

#endif
