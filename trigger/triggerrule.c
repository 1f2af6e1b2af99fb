/*
 * triggerrule: rule checks and dedupe keys over normalised events. No state, no I/O;
 * thread-safe.
 */
#include "trigger/triggerrule.h"

#include "core/buf.h"
#include "core/crypto.h"

static const char *const upload_names[] = { "Put", "Post", "Copy", "CompleteMultipartUpload", "*" };

static const char *strip_prefix(const char *pattern)
{
    return strncmp(pattern, "s3:", 3) == 0 ? pattern + 3 : pattern;
}

int triggerrule_validate(const struct triggerrule *r, struct err *err)
{
    for (size_t i = 0; i < r->nevents; i++) {
        char ptr[40];
        snprintf(ptr, sizeof(ptr), "/rule/events/%zu", i);
        const char *p = r->events[i] ? strip_prefix(r->events[i]) : "";
        bool ok = false;
        if (strncmp(p, "ObjectCreated:", 14) == 0)
            for (size_t k = 0; k < sizeof(upload_names) / sizeof(upload_names[0]); k++)
                ok |= strcmp(p + 14, upload_names[k]) == 0;
        if (!ok)
            err_field(err, ptr,
                      "must be s3:ObjectCreated:* or s3:ObjectCreated:{Put,Post,Copy,"
                      "CompleteMultipartUpload}: only uploads start jobs");
    }
    if (r->min_size < 0)
        err_field(err, "/rule/min_size", "must not be negative");
    if (r->bucket && strlen(r->bucket) > 255)
        err_field(err, "/rule/bucket", "too long for a bucket name");
    return err_is_set(err) ? -1 : 0;
}

static bool event_matches(const char *pattern, const char *name)
{
    const char *p = strip_prefix(pattern), *n = strip_prefix(name);
    size_t len = strlen(p);
    if (len > 0 && p[len - 1] == '*')
        return strncmp(p, n, len - 1) == 0;
    return strcmp(p, n) == 0;
}

#define WHY(...) (why ? (void)snprintf(why, whylen, __VA_ARGS__) : (void)0)

bool triggerrule_match(const struct triggerrule *r, const struct s3event *e, char *why,
                       size_t whylen)
{
    size_t klen = strlen(e->key);
    if (r->bucket && *r->bucket && strcmp(r->bucket, e->bucket) != 0) {
        WHY("bucket %.60s is not %.60s", e->bucket, r->bucket);
        return false;
    }
    if (r->prefix && *r->prefix && strncmp(e->key, r->prefix, strlen(r->prefix)) != 0) {
        WHY("key does not start with %.80s", r->prefix);
        return false;
    }
    size_t slen = r->suffix ? strlen(r->suffix) : 0;
    if (slen && (klen < slen || strcmp(e->key + klen - slen, r->suffix) != 0)) {
        WHY("key does not end with %.80s", r->suffix);
        return false;
    }
    bool named = r->nevents == 0;
    for (size_t i = 0; i < r->nevents && !named; i++)
        named = event_matches(r->events[i], e->event_name);
    if (!named) {
        WHY("event %.60s is not one of the rule's events", e->event_name);
        return false;
    }
    if (r->min_size > 0 && e->size < r->min_size) {
        if (e->size < 0)
            WHY("size unknown, rule needs at least %lld bytes", (long long)r->min_size);
        else
            WHY("size %lld is below %lld bytes", (long long)e->size, (long long)r->min_size);
        return false;
    }
    return true;
}

void triggerrule_dedupe_key(const struct s3event *e, char out[TRIGGERRULE_DEDUPE_LEN])
{
    struct buf b = BUF_INIT;
    unsigned char d[SHA256_LEN];
    size_t slen = strlen(e->sequencer);
    while (slen > 0 && e->sequencer[slen - 1] == '0')
        slen--;
    /* Fields are NUL-separated: none of them can contain NUL (the parsers refuse it). */
    buf_append(&b, e->bucket, strlen(e->bucket) + 1);
    buf_append(&b, e->key, strlen(e->key) + 1);
    buf_append(&b, e->version_id, strlen(e->version_id) + 1);
    if (*e->sequencer) {
        buf_append(&b, e->sequencer, slen);
    } else {
        buf_puts(&b, "etag:");
        buf_append(&b, e->etag, strlen(e->etag) + 1);
        buf_printf(&b, "%lld", (long long)e->event_time_ns);
    }
    crypto_sha256(b.data, b.len, d);
    memcpy(out, "s3v1:", 5);
    crypto_hex(d, SHA256_LEN, out + 5);
    buf_release(&b);
}
