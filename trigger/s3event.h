/*
 * s3event: one "object uploaded" event, normalised from whichever sender delivered it, and the
 * parsers of the three record shapes that carry such events: the S3 notification `Records[]`
 * document (AWS directly, through SNS, or a MinIO webhook body) and an EventBridge event.
 * Formats: AWS's "Event message structure" (S3 User Guide, notification-content-structure),
 * "Amazon S3 events delivered to EventBridge" (ev-events), and MinIO's webhook target, which
 * sends one record with a top-level EventName and Key; docs/triggers.md has what we take.
 *
 * Only uploads (ObjectCreated:{Put,Post,Copy,CompleteMultipartUpload}) become events; every
 * other record is counted as ignored with a reason, so the caller can acknowledge it.
 *
 * Ownership: a struct s3event_list lives in the caller's storage (s3event_list_init/release)
 * and owns every string of its events.
 */
#ifndef TY_S3EVENT_H
#define TY_S3EVENT_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/err.h"

/* How the event reached us; it decides how the key was encoded. */
enum s3event_source {
    S3EVENT_SOURCE_S3,          /* a bare S3 notification document (`Records[]`) */
    S3EVENT_SOURCE_SNS,         /* an S3 notification inside an SNS Notification */
    S3EVENT_SOURCE_EVENTBRIDGE, /* an EventBridge "Object Created" event */
    S3EVENT_SOURCE_MINIO,       /* a MinIO webhook target body */
};

#define S3EVENT_KEY_MAX 1024 /* S3's own limit on a key, in bytes */

struct s3event {
    enum s3event_source source;
    char *bucket;
    char *key;        /* decoded: the object's real name, valid UTF-8 without NUL */
    int64_t size;     /* bytes, or -1 when the sender did not say */
    char *etag;       /* without quotes; "" when absent */
    char *version_id; /* "" on unversioned buckets */
    char *sequencer;  /* upper-case hex; "" when absent */
    char *event_name; /* without the "s3:" prefix: "ObjectCreated:Put" */
    char *event_time; /* as sent (ISO-8601) */
    int64_t event_time_ns;
    char *region;   /* "" when absent */
    char *event_id; /* the sender's id for this message (SNS MessageId, EventBridge id) or "" */
};

struct s3event_list {
    struct s3event *items;
    size_t n;
    size_t nignored;          /* records that were not uploads */
    char ignored_reason[160]; /* why the first ignored record was ignored */
};

void s3event_list_init(struct s3event_list *l);
void s3event_list_release(struct s3event_list *l);

/* Decodes an S3-notification key (form encoding: '+' is a space, then %XX is a byte) into a new
 * string (caller frees). Fails with ERR_INVALID on a bad escape, %00, invalid UTF-8 or a key
 * longer than S3EVENT_KEY_MAX. */
char *s3event_decode_key(const char *encoded, struct err *err);

/* True for the four "upload finished" names, with or without the "s3:" prefix. */
bool s3event_is_upload(const char *event_name);

/* Parses a `Records[]` document (doc is the whole object) and appends its uploads to out.
 * source says who sent it (S3, SNS or MinIO): the keys are form-decoded for all three.
 * `where` prefixes field names in errors ("/Message" when the document came inside SNS).
 * Returns 0, or -1 with ERR_INVALID naming the bad field. */
int s3event_parse_records(const json_t *doc, enum s3event_source source, const char *where,
                          struct s3event_list *out, struct err *err);

/* Parses one EventBridge event; an "Object Created" event is appended to out, anything else is
 * counted as ignored. The key is taken as sent (EventBridge does not URL-encode it). */
int s3event_parse_eventbridge(const json_t *doc, struct s3event_list *out, struct err *err);

/* Parses a MinIO webhook body ({"EventName","Key","Records"}): its records as above, and checks
 * that the decoded record key agrees with the unescaped top-level "Key" (bucket + "/" + name). */
int s3event_parse_minio(const json_t *doc, struct s3event_list *out, struct err *err);

/* Normalises a sequencer into out (upper-case hex); -1 when it is not hex or too long. */
int s3event_sequencer_norm(const char *seq, char *out, size_t outlen);
/* Orders two sequencers of the same key: <0, 0, >0. The shorter is padded with '0' on the right,
 * case is ignored (reference section 1.5). */
int s3event_sequencer_cmp(const char *a, const char *b);

const char *s3event_source_name(enum s3event_source s);

#endif
