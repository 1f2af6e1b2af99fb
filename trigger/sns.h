/*
 * sns: Amazon SNS HTTP(S) messages: the envelope, the string that SNS signs, the checks on the
 * certificate and subscribe URLs, and signature verification (SignatureVersion 1 = SHA1withRSA,
 * 2 = SHA256withRSA) with certificates fetched once per URL and cached.
 * Algorithm: AWS's "Verifying the signatures of Amazon SNS messages" (SNS Developer Guide) and
 * AWS's own validators (aws-php-sns-message-validator, sns-validator): the string to sign from
 * the message's fields in a fixed order, https SigningCertURL on an sns.<region>.amazonaws.com
 * host ending in .pem; docs/triggers.md lists every check.
 *
 * Test mode: a struct sns_policy with test_host set accepts that one host[:port] instead of the
 * SNS host pattern, and test_ca_file is the CA used to fetch from it. A zeroed policy is the
 * production one; nothing turns test mode on implicitly.
 */
#ifndef TY_SNS_H
#define TY_SNS_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "core/buf.h"
#include "core/err.h"

enum sns_type {
    SNS_NOTIFICATION,
    SNS_SUBSCRIPTION_CONFIRMATION,
    SNS_UNSUBSCRIBE_CONFIRMATION,
};

/* A parsed envelope. The strings are borrowed from doc (owned by the message); message and
 * subject may contain NUL bytes, hence their lengths. Absent optional fields are NULL. */
struct sns_message {
    enum sns_type type;
    json_t *doc;
    const char *type_name;
    const char *message_id;
    const char *topic_arn;
    const char *message;
    size_t message_len;
    const char *subject; /* Notification only, when the publisher set one */
    size_t subject_len;
    const char *timestamp;
    int64_t timestamp_ns;
    const char *signature_version;
    const char *signature;
    const char *signing_cert_url;
    const char *subscribe_url;   /* confirmations */
    const char *token;           /* confirmations */
    const char *unsubscribe_url; /* notifications */
};

/* Parses an envelope from doc (takes a new reference). Fails with ERR_INVALID naming the missing
 * or mistyped field, or an unknown Type. Release with sns_message_release(). */
int sns_message_parse(json_t *doc, struct sns_message *out, struct err *err);
void sns_message_release(struct sns_message *m);

/* Appends the canonical string to sign: "Name\nValue\n" for each field of the type's list,
 * in byte order, skipping absent ones. */
void sns_string_to_sign(const struct sns_message *m, struct buf *out);

struct sns_policy {
    const char *test_host;    /* TEST ONLY: exact "host[:port]" allowed; NULL in production */
    const char *test_ca_file; /* TEST ONLY: CA bundle to fetch certificates from test_host */
    const char *cert_ca_file; /* when set, the signing certificate must chain to these CAs */
    int64_t max_age_s;        /* oldest Timestamp accepted; 0: 3900 (SNS retries for 1 h) */
    int64_t max_skew_s;       /* Timestamp this far in the future accepted; 0: 300 */
};

/* Checks a SigningCertURL (cert = true: https, allowed host, path ending in ".pem", no userinfo,
 * query or fragment) or a SubscribeURL (cert = false: https, allowed host, no userinfo or
 * fragment). ERR_UNAUTHORIZED saying what is wrong. */
int sns_check_url(const struct sns_policy *p, const char *url, bool cert, struct err *err);

/* Fetches a certificate PEM; the interface lets tests inject one. Returns 0, or -1 with
 * ERR_UPSTREAM (an answer other than 200), ERR_UNAVAILABLE (no answer) or ERR_TIMEOUT: all
 * temporary failures, answered 5xx so that SNS retries. */
struct sns_fetcher {
    int (*fetch)(void *ctx, const char *url, struct buf *out, struct err *err);
    void *ctx;
};

struct sns_verifier;

/* Copies policy (and its strings). fetcher NULL: fetch over HTTPS (core/httpc), with
 * policy->test_ca_file as the CA when set. Never NULL; free with sns_verifier_free(). */
struct sns_verifier *sns_verifier_new(const struct sns_policy *policy,
                                      const struct sns_fetcher *fetcher);
void sns_verifier_free(struct sns_verifier *v);

/* Verifies m at time now_ns: Timestamp within the window, SigningCertURL allowed, certificate
 * fetched (or cached) and valid now, signature over the string to sign. For a confirmation the
 * SubscribeURL is checked too, so the caller may fetch it afterwards.
 * Thread-safe: the certificate cache is shared under a lock; a fetch runs outside it.
 * Fails with ERR_UNAUTHORIZED (answer 4xx), or ERR_UPSTREAM/ERR_TIMEOUT when the certificate
 * could not be fetched (answer 5xx). */
int sns_verify(struct sns_verifier *v, const struct sns_message *m, int64_t now_ns,
               struct err *err);

/* Number of certificates fetched so far (for tests and metrics). */
unsigned sns_verifier_fetches(struct sns_verifier *v);

const char *sns_type_name(enum sns_type t);

#endif
