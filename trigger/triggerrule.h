/*
 * triggerrule: which upload events start a job (bucket, key prefix and suffix, event names,
 * a minimum size), and the dedupe key that makes each object version start at most one job per
 * trigger. Keys are matched decoded, as plain byte strings (reference section 7).
 */
#ifndef TY_TRIGGERRULE_H
#define TY_TRIGGERRULE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/err.h"
#include "trigger/s3event.h"

/* A rule; pointers are borrowed from the caller's config. NULL or "" means "any". */
struct triggerrule {
    const char *bucket;        /* exact bucket name */
    const char *prefix;        /* decoded key starts with */
    const char *suffix;        /* decoded key ends with */
    const char *const *events; /* "s3:ObjectCreated:*", "s3:ObjectCreated:Put", ... ("s3:" is
                                  optional); none: every upload */
    size_t nevents;
    int64_t min_size; /* bytes; an event without a size fails a rule with one */
};

/* Checks a rule when it is saved. ERR_VALIDATION with a field per problem ("/rule/events/0"). */
int triggerrule_validate(const struct triggerrule *r, struct err *err);

/* True when e satisfies r; otherwise why (whylen bytes, may be NULL) says which condition
 * failed, for the delivery log. */
bool triggerrule_match(const struct triggerrule *r, const struct s3event *e, char *why,
                       size_t whylen);

/* "s3v1:" + 64 hex digits + NUL */
#define TRIGGERRULE_DEDUPE_LEN 70

/* The object version's identity: SHA-256 over (bucket, key, version id, sequencer). The
 * sequencer is upper-cased and stripped of trailing zeros, so that it matches the
 * zero-padding comparison rule; without one (some emulators) the ETag and event time stand in.
 * Stable across senders (an S3 notification and an EventBridge event of the same write give
 * the same key) and across releases: the store keeps it per trigger as the unique key. */
void triggerrule_dedupe_key(const struct s3event *e, char out[TRIGGERRULE_DEDUPE_LEN]);

#endif
