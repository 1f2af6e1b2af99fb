/*
 * hookauth: authenticates an inbound hook request with the method its trigger is configured
 * with. Every secret comparison is constant-time (fixed-length digests compared with
 * crypto_equal), and several secrets may be listed so that one can be rotated.
 *
 *   bearer  Authorization: Bearer <token>   MinIO auth_token (a two-word token such as
 *                                           "Token abc" is sent and compared as is), EventBridge
 *                                           OAuth
 *   header  <name>: <value>                 EventBridge API destination API_KEY
 *   basic   Authorization: Basic b64(u:p)   EventBridge BASIC, SNS credentials in the URL
 *   hmac    webhook-id/-timestamp/-signature  Standard Webhooks, timestamp window
 *   sns     SNS message signature            SignatureVersion 1 and 2, TopicArn allowlist
 *   none    nothing (local testing only; the config layer should refuse it elsewhere)
 */
#ifndef TY_HOOKAUTH_H
#define TY_HOOKAUTH_H

#include <stddef.h>
#include <stdint.h>

#include "core/err.h"
#include "trigger/hook.h"
#include "trigger/sns.h"

enum hookauth_mode {
    HOOKAUTH_NONE,
    HOOKAUTH_BEARER,
    HOOKAUTH_HEADER,
    HOOKAUTH_BASIC,
    HOOKAUTH_HMAC,
    HOOKAUTH_SNS,
};

/* A trigger's authentication; all pointers are borrowed from the caller's config. */
struct hookauth {
    enum hookauth_mode mode;
    const char *header;         /* header mode: the header's name, e.g. "x-api-key" */
    const char *const *secrets; /* bearer: tokens; header: values; basic: "user:password";
                                   hmac: "whsec_<base64>"; or hookauth_hash() digests */
    size_t nsecrets;
    int64_t tolerance_s;           /* hmac: timestamp window either side; 0: 300 */
    const char *const *topic_arns; /* sns: TopicArns accepted; none: any topic */
    size_t ntopics;
};

/* Checks a configuration when it is saved: secrets present and well-formed for the mode.
 * ERR_VALIDATION with a field per problem ("/auth/secrets/0"). */
int hookauth_validate(const struct hookauth *a, struct err *err);

/* Secrets at rest: bearer, header and basic secrets may be configured as digests instead of
 * plain text, so that a stored configuration cannot be replayed. hookauth_hash() returns the
 * digest form of a secret for mode ("sha256:<hex>", or "sha256-token:<hex>" for a one-word
 * bearer token, which is compared with what follows "Bearer "); caller frees. NULL for modes
 * that need the secret itself (hmac signs with it). Plain and digest forms may be mixed. */
char *hookauth_hash(enum hookauth_mode mode, const char *secret);

/* Authenticates req. hmac, bearer, header and basic need only the raw request; sns needs the
 * parsed envelope (h->sns, from hook_parse) and a verifier. now_ns is the wall clock.
 * Fails with ERR_UNAUTHORIZED saying what did not match (never echoing a secret), or, for sns,
 * ERR_UPSTREAM/ERR_TIMEOUT when the certificate could not be fetched. */
int hookauth_check(const struct hookauth *a, const struct hook_request *req, const struct hook *h,
                   struct sns_verifier *v, int64_t now_ns, struct err *err);

const char *hookauth_mode_name(enum hookauth_mode m);
/* "none", "bearer", "header", "basic", "hmac", "sns"; -1 when unknown. */
int hookauth_mode_parse(const char *name, enum hookauth_mode *out);

#endif
