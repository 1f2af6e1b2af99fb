/*
 * sns: SNS envelope parsing and signature verification with OpenSSL (X509 + EVP). It does not
 * parse the S3 event inside Message (hook.c does, after verification) and never fetches
 * SubscribeURL (the caller does, after sns_verify() succeeded).
 *
 * Threads: parsing and canonical strings are pure. A verifier's certificate cache is guarded by
 * its mutex; a certificate is fetched and checked outside the lock, so one slow fetch does not
 * hold up verifications that hit the cache. Cached keys are reference-counted EVP_PKEYs.
 */
#include "trigger/sns.h"

#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509_vfy.h>
#include <pthread.h>

#include "core/clock.h"
#include "core/crypto.h"
#include "core/httpc.h"
#include "core/xalloc.h"

#define CACHE_MAX 32
#define CERT_MAX  (64 * 1024)

const char *sns_type_name(enum sns_type t)
{
    switch (t) {
    case SNS_NOTIFICATION:
        return "Notification";
    case SNS_SUBSCRIPTION_CONFIRMATION:
        return "SubscriptionConfirmation";
    case SNS_UNSUBSCRIBE_CONFIRMATION:
        return "UnsubscribeConfirmation";
    }
    return "unknown";
}

/* A string member; absent or null leaves *out NULL unless required. */
static int field(const json_t *doc, const char *key, bool required, const char **out, size_t *len,
                 struct err *err)
{
    json_t *v = json_object_get(doc, key);
    *out = NULL;
    if (!v || json_is_null(v)) {
        if (required)
            return err_set(err, ERR_INVALID, "/%s: required string is missing", key);
        return 0;
    }
    if (!json_is_string(v))
        return err_set(err, ERR_INVALID, "/%s: must be a string", key);
    *out = json_string_value(v);
    if (len)
        *len = json_string_length(v);
    else if (strlen(*out) != json_string_length(v))
        return err_set(err, ERR_INVALID, "/%s: contains a NUL character", key);
    return 0;
}

static int parse_type(struct sns_message *m, struct err *err)
{
    static const enum sns_type types[] = { SNS_NOTIFICATION, SNS_SUBSCRIPTION_CONFIRMATION,
                                           SNS_UNSUBSCRIBE_CONFIRMATION };
    for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
        if (strcmp(m->type_name, sns_type_name(types[i])) == 0) {
            m->type = types[i];
            return 0;
        }
    }
    return err_set(err, ERR_INVALID, "/Type: unknown SNS message type \"%.40s\"", m->type_name);
}

int sns_message_parse(json_t *doc, struct sns_message *m, struct err *err)
{
    memset(m, 0, sizeof(*m));
    if (!json_is_object(doc))
        return err_set(err, ERR_INVALID, "SNS message is not a JSON object");
    m->doc = json_incref(doc);
    bool confirm;
    if (field(doc, "Type", true, &m->type_name, NULL, err) < 0 || parse_type(m, err) < 0)
        goto fail;
    confirm = m->type != SNS_NOTIFICATION;
    if (field(doc, "MessageId", true, &m->message_id, NULL, err) < 0 ||
        field(doc, "TopicArn", true, &m->topic_arn, NULL, err) < 0 ||
        field(doc, "Message", true, &m->message, &m->message_len, err) < 0 ||
        field(doc, "Timestamp", true, &m->timestamp, NULL, err) < 0 ||
        field(doc, "SignatureVersion", true, &m->signature_version, NULL, err) < 0 ||
        field(doc, "Signature", true, &m->signature, NULL, err) < 0 ||
        field(doc, "SigningCertURL", true, &m->signing_cert_url, NULL, err) < 0 ||
        field(doc, "SubscribeURL", confirm, &m->subscribe_url, NULL, err) < 0 ||
        field(doc, "Token", confirm, &m->token, NULL, err) < 0 ||
        field(doc, "UnsubscribeURL", false, &m->unsubscribe_url, NULL, err) < 0)
        goto fail;
    if (!confirm && field(doc, "Subject", false, &m->subject, &m->subject_len, err) < 0)
        goto fail;
    if (clock_parse(m->timestamp, &m->timestamp_ns) < 0) {
        err_set(err, ERR_INVALID, "/Timestamp: not an ISO-8601 time");
        goto fail;
    }
    return 0;
fail:
    sns_message_release(m);
    return -1;
}

void sns_message_release(struct sns_message *m)
{
    json_decref(m->doc);
    memset(m, 0, sizeof(*m));
}

static void add(struct buf *out, const char *name, const char *value, size_t len)
{
    if (!value)
        return;
    buf_puts(out, name);
    buf_putc(out, '\n');
    buf_append(out, value, len);
    buf_putc(out, '\n');
}

void sns_string_to_sign(const struct sns_message *m, struct buf *out)
{
    add(out, "Message", m->message, m->message_len);
    add(out, "MessageId", m->message_id, strlen(m->message_id));
    if (m->type == SNS_NOTIFICATION) {
        add(out, "Subject", m->subject, m->subject_len);
    } else {
        add(out, "SubscribeURL", m->subscribe_url, strlen(m->subscribe_url));
    }
    add(out, "Timestamp", m->timestamp, strlen(m->timestamp));
    if (m->type != SNS_NOTIFICATION)
        add(out, "Token", m->token, strlen(m->token));
    add(out, "TopicArn", m->topic_arn, strlen(m->topic_arn));
    add(out, "Type", m->type_name, strlen(m->type_name));
}

/* ^sns\.[a-zA-Z0-9\-]{3,}\.amazonaws\.com(\.cn)?$ without a regex engine. Not any
 * *.amazonaws.com host: S3 buckets live under that domain too. */
static bool sns_host(const char *h)
{
    if (strncmp(h, "sns.", 4) != 0)
        return false;
    h += 4;
    size_t n = 0;
    while ((h[n] >= 'a' && h[n] <= 'z') || (h[n] >= 'A' && h[n] <= 'Z') ||
           (h[n] >= '0' && h[n] <= '9') || h[n] == '-')
        n++;
    return n >= 3 &&
           (strcmp(h + n, ".amazonaws.com") == 0 || strcmp(h + n, ".amazonaws.com.cn") == 0);
}

static bool plain_ascii(const char *s)
{
    for (; *s; s++)
        if ((unsigned char)*s <= 0x20 || (unsigned char)*s >= 0x7f || *s == '\\')
            return false;
    return true;
}

/* Host (and port) allowed by the policy. */
static int check_host(const struct sns_policy *p, const struct httpc_url *u, struct err *err)
{
    if (!u->host)
        return err_set(err, ERR_UNAUTHORIZED, "URL has no host");
    if (p && p->test_host) {
        char hostport[300];
        snprintf(hostport, sizeof(hostport), u->port ? "%s:%s" : "%s", u->host, u->port);
        if (strcmp(hostport, p->test_host) != 0)
            return err_set(err, ERR_UNAUTHORIZED, "host %.100s is not the test host", hostport);
        return 0;
    }
    if (!sns_host(u->host))
        return err_set(err, ERR_UNAUTHORIZED, "host %.100s is not an SNS host", u->host);
    if (u->port && strcmp(u->port, "443") != 0)
        return err_set(err, ERR_UNAUTHORIZED, "port %.10s is not 443", u->port);
    return 0;
}

int sns_check_url(const struct sns_policy *p, const char *url, bool cert, struct err *err)
{
    const char *what = cert ? "SigningCertURL" : "SubscribeURL";
    struct httpc_url u;
    int rc = -1;
    if (!url || !plain_ascii(url))
        return err_set(err, ERR_UNAUTHORIZED, "%s: missing or not a plain URL", what);
    if (httpc_url_parse(url, &u, NULL) < 0) {
        err_set(err, ERR_UNAUTHORIZED, "%s: not a URL", what);
    } else if (!u.scheme || strcmp(u.scheme, "https") != 0) {
        err_set(err, ERR_UNAUTHORIZED, "%s: scheme must be https", what);
    } else if (u.user || u.password || u.fragment || (cert && u.query)) {
        err_set(err, ERR_UNAUTHORIZED, "%s: must not carry userinfo, a fragment%s", what,
                cert ? " or a query" : "");
    } else if (cert && (strlen(u.path) < 5 || strcmp(u.path + strlen(u.path) - 4, ".pem"))) {
        err_set(err, ERR_UNAUTHORIZED, "%s: path must end in .pem", what);
    } else if (check_host(p, &u, err) < 0) {
        err_wrap(err, "%s", what);
    } else {
        rc = 0;
    }
    httpc_url_release(&u);
    return rc;
}

struct cached {
    char *url;
    EVP_PKEY *key;
    time_t not_before, not_after;
};

struct sns_verifier {
    struct sns_policy policy;
    struct sns_fetcher fetcher;
    pthread_mutex_t lock;
    struct cached cache[CACHE_MAX];
    size_t ncache, next_evict;
    unsigned fetches;
};

static char *dup_or_null(const char *s)
{
    return s ? xstrdup(s) : NULL;
}

/* The default fetcher: one HTTPS GET with a fresh client (fetches are rare: one per URL). */
static int fetch_https(void *ctx, const char *url, struct buf *out, struct err *err)
{
    const struct sns_policy *p = ctx;
    struct httpc_options o = {
        .timeout_ms = 5000, .max_body = CERT_MAX, .https_only = true, .ca_file = p->test_ca_file
    };
    struct httpc *h = httpc_new(&o, err);
    struct httpc_request rq = { .url = url };
    struct httpc_response r;
    httpc_response_init(&r);
    int rc = httpc_do(h, &rq, &r, err);
    if (rc == 0 && (r.status != 200 || r.truncated))
        rc = err_set(err, ERR_UPSTREAM, "fetching %s: HTTP %ld%s", url, r.status,
                     r.truncated ? " (too large)" : "");
    if (rc == 0)
        buf_append(out, r.body.data, r.body.len);
    httpc_response_release(&r);
    httpc_free(h);
    return rc;
}

struct sns_verifier *sns_verifier_new(const struct sns_policy *policy,
                                      const struct sns_fetcher *fetcher)
{
    struct sns_verifier *v = XNEW(struct sns_verifier);
    if (policy)
        v->policy = *policy;
    v->policy.test_host = dup_or_null(v->policy.test_host);
    v->policy.test_ca_file = dup_or_null(v->policy.test_ca_file);
    v->policy.cert_ca_file = dup_or_null(v->policy.cert_ca_file);
    if (v->policy.max_age_s <= 0)
        v->policy.max_age_s = 3900;
    if (v->policy.max_skew_s <= 0)
        v->policy.max_skew_s = 300;
    if (fetcher)
        v->fetcher = *fetcher;
    else
        v->fetcher = (struct sns_fetcher){ fetch_https, &v->policy };
    pthread_mutex_init(&v->lock, NULL);
    return v;
}

void sns_verifier_free(struct sns_verifier *v)
{
    if (!v)
        return;
    for (size_t i = 0; i < v->ncache; i++) {
        free(v->cache[i].url);
        EVP_PKEY_free(v->cache[i].key);
    }
    free((char *)v->policy.test_host);
    free((char *)v->policy.test_ca_file);
    free((char *)v->policy.cert_ca_file);
    pthread_mutex_destroy(&v->lock);
    free(v);
}

unsigned sns_verifier_fetches(struct sns_verifier *v)
{
    pthread_mutex_lock(&v->lock);
    unsigned n = v->fetches;
    pthread_mutex_unlock(&v->lock);
    return n;
}

static time_t asn1_time(const ASN1_TIME *t)
{
    struct tm tm;
    if (!t || !ASN1_TIME_to_tm(t, &tm))
        return 0;
    return timegm(&tm);
}

/* When the policy names CAs, the certificate must chain to them (other PEM blocks in the
 * fetched file are offered as intermediates). */
static int check_chain(const struct sns_policy *p, X509 *cert, STACK_OF(X509) * extra,
                       struct err *err)
{
    if (!p->cert_ca_file)
        return 0;
    int rc = -1;
    X509_STORE *store = X509_STORE_new();
    X509_STORE_CTX *ctx = X509_STORE_CTX_new();
    if (!store || !ctx)
        abort();
    if (X509_STORE_load_file(store, p->cert_ca_file) != 1) {
        err_set(err, ERR_INTERNAL, "cannot load CA file %s", p->cert_ca_file);
    } else if (X509_STORE_CTX_init(ctx, store, cert, extra) != 1 || X509_verify_cert(ctx) != 1) {
        err_set(err, ERR_UNAUTHORIZED, "signing certificate does not chain to a trusted CA: %s",
                X509_verify_cert_error_string(X509_STORE_CTX_get_error(ctx)));
    } else {
        rc = 0;
    }
    X509_STORE_CTX_free(ctx);
    X509_STORE_free(store);
    return rc;
}

/* Parses a PEM into a cache entry (key + validity). */
static int load_cert(const struct sns_policy *p, const struct buf *pem, struct cached *c,
                     struct err *err)
{
    int rc = -1;
    BIO *bio = BIO_new_mem_buf(pem->data ? pem->data : "", (int)pem->len);
    X509 *cert = PEM_read_bio_X509(bio, NULL, NULL, NULL);
    STACK_OF(X509) *extra = sk_X509_new_null();
    X509 *more;
    if (!cert) {
        err_set(err, ERR_UNAUTHORIZED, "signing certificate is not a PEM certificate");
        goto out;
    }
    while ((more = PEM_read_bio_X509(bio, NULL, NULL, NULL)) != NULL)
        sk_X509_push(extra, more);
    if (check_chain(p, cert, extra, err) < 0)
        goto out;
    c->key = X509_get_pubkey(cert);
    if (!c->key || EVP_PKEY_get_base_id(c->key) != EVP_PKEY_RSA) {
        EVP_PKEY_free(c->key);
        c->key = NULL;
        err_set(err, ERR_UNAUTHORIZED, "signing certificate has no RSA key");
        goto out;
    }
    c->not_before = asn1_time(X509_get0_notBefore(cert));
    c->not_after = asn1_time(X509_get0_notAfter(cert));
    rc = 0;
out:
    sk_X509_pop_free(extra, X509_free);
    X509_free(cert);
    BIO_free(bio);
    if (rc < 0)
        ERR_clear_error(); /* leave no stale errors for the next OpenSSL user on this thread */
    return rc;
}

/* Returns a new reference to the key for url, from the cache or fetched. */
static EVP_PKEY *get_key(struct sns_verifier *v, const char *url, time_t now, struct err *err)
{
    EVP_PKEY *key = NULL;
    struct cached c = { 0 };
    struct buf pem = BUF_INIT;
    pthread_mutex_lock(&v->lock);
    for (size_t i = 0; i < v->ncache && !key; i++) {
        if (strcmp(v->cache[i].url, url) == 0) {
            c = v->cache[i];
            key = c.key;
            EVP_PKEY_up_ref(key);
        }
    }
    pthread_mutex_unlock(&v->lock);
    if (!key) {
        if (v->fetcher.fetch(v->fetcher.ctx, url, &pem, err) < 0 ||
            load_cert(&v->policy, &pem, &c, err) < 0)
            goto out;
        key = c.key;
        EVP_PKEY_up_ref(key);
        pthread_mutex_lock(&v->lock);
        v->fetches++;
        size_t slot = v->ncache < CACHE_MAX ? v->ncache++ : v->next_evict++ % CACHE_MAX;
        if (v->cache[slot].url) {
            free(v->cache[slot].url);
            EVP_PKEY_free(v->cache[slot].key);
        }
        c.url = xstrdup(url);
        v->cache[slot] = c;
        pthread_mutex_unlock(&v->lock);
    }
    if (now < c.not_before || now > c.not_after) {
        EVP_PKEY_free(key);
        key = NULL;
        err_set(err, ERR_UNAUTHORIZED, "signing certificate is not valid at this time");
    }
out:
    buf_release(&pem);
    return key;
}

static int check_time(const struct sns_policy *p, const struct sns_message *m, int64_t now_ns,
                      struct err *err)
{
    int64_t age_s = (now_ns - m->timestamp_ns) / NS_PER_SEC;
    if (age_s > p->max_age_s)
        return err_set(err, ERR_UNAUTHORIZED, "Timestamp %s is %llds old (limit %llds)",
                       m->timestamp, (long long)age_s, (long long)p->max_age_s);
    if (-age_s > p->max_skew_s)
        return err_set(err, ERR_UNAUTHORIZED, "Timestamp %s is in the future", m->timestamp);
    return 0;
}

int sns_verify(struct sns_verifier *v, const struct sns_message *m, int64_t now_ns, struct err *err)
{
    const EVP_MD *md;
    int rc = -1;
    EVP_PKEY *key = NULL;
    EVP_MD_CTX *ctx = NULL;
    struct buf sig = BUF_INIT, sts = BUF_INIT;
    if (strcmp(m->signature_version, "1") == 0)
        md = EVP_sha1();
    else if (strcmp(m->signature_version, "2") == 0)
        md = EVP_sha256();
    else
        return err_set(err, ERR_UNAUTHORIZED, "SignatureVersion \"%.10s\" is not 1 or 2",
                       m->signature_version);
    if (check_time(&v->policy, m, now_ns, err) < 0 ||
        sns_check_url(&v->policy, m->signing_cert_url, true, err) < 0 ||
        (m->type != SNS_NOTIFICATION && sns_check_url(&v->policy, m->subscribe_url, false, err)))
        return -1;
    if (crypto_base64_decode(&sig, m->signature, strlen(m->signature)) < 0 || sig.len == 0) {
        err_set(err, ERR_UNAUTHORIZED, "Signature is not base64");
        goto out;
    }
    key = get_key(v, m->signing_cert_url, (time_t)(now_ns / NS_PER_SEC), err);
    if (!key)
        goto out;
    sns_string_to_sign(m, &sts);
    ctx = EVP_MD_CTX_new();
    if (!ctx || EVP_DigestVerifyInit(ctx, NULL, md, NULL, key) != 1 ||
        EVP_DigestVerify(ctx, (unsigned char *)sig.data, sig.len, (unsigned char *)sts.data,
                         sts.len) != 1) {
        err_set(err, ERR_UNAUTHORIZED, "SNS signature (version %s) does not verify",
                m->signature_version);
        goto out;
    }
    rc = 0;
out:
    EVP_MD_CTX_free(ctx);
    EVP_PKEY_free(key);
    buf_release(&sig);
    buf_release(&sts);
    if (rc < 0)
        ERR_clear_error();
    return rc;
}
