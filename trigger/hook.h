/*
 * hook: one inbound hook request (headers + raw body), told apart by sender and parsed into
 * upload events or a classification: S3 notification `Records[]` (and s3:TestEvent), EventBridge
 * events from API destinations, SNS HTTP(S) messages (SubscriptionConfirmation, Notification
 * carrying an S3 notification, UnsubscribeConfirmation) and MinIO webhook bodies.
 * Recognition, headers first: SNS by `x-amz-sns-message-type`, EventBridge API destinations by
 * `User-Agent: Amazon/EventBridge/ApiDestinations`; then the body: `detail-type` (EventBridge),
 * `EventName` with `Records` (MinIO), `Records` or an s3:TestEvent (S3); docs/triggers.md.
 *
 * hook_parse() never authenticates: for SNS it parses the envelope and the S3 document inside
 * Message; the caller must sns_verify() the envelope before acting on anything (trigger.h does
 * both in the right order).
 *
 * Ownership: struct hook lives in the caller's storage (hook_init/hook_release) and owns its
 * events, reason and SNS envelope.
 */
#ifndef TY_HOOK_H
#define TY_HOOK_H

#include <stddef.h>
#include <stdint.h>

#include "core/err.h"
#include "trigger/s3event.h"
#include "trigger/sns.h"

/* Returns the value of the named request header (case-insensitive name) or NULL. The string
 * must stay valid while the request is processed: a two-line adapter over libmicrohttpd's
 * MHD_lookup_connection_value(conn, MHD_HEADER_KIND, name), which ignores case. */
typedef const char *(*hook_header_fn)(void *ctx, const char *name);

struct hook_request {
    hook_header_fn header;
    void *ctx;
    const char *body; /* raw bytes, exactly as received */
    size_t len;
};

struct hook_limits {
    size_t max_body; /* 0: 1 MiB (SNS 256 KiB + envelope; EventBridge 1 MiB) */
    int max_depth;   /* JSON nesting; 0: 16 */
};

/* Who sent it, for status codes: each sender treats our answer differently. */
enum hook_sender {
    HOOK_SENDER_AUTO, /* in a trigger config: recognise from the request */
    HOOK_SENDER_S3,   /* a bare Records[] document (own forwarder, s3rver, SNS raw delivery) */
    HOOK_SENDER_SNS,
    HOOK_SENDER_EVENTBRIDGE,
    HOOK_SENDER_MINIO,
};

enum hook_kind {
    HOOK_EVENTS,         /* events.n >= 1 uploads (other records may have been ignored) */
    HOOK_IGNORED,        /* nothing to do: reason says why (TestEvent, deletes, ...) */
    HOOK_SNS_SUBSCRIBE,  /* SubscriptionConfirmation: fetch sns->subscribe_url once verified */
    HOOK_SNS_UNSUBSCRIBE /* UnsubscribeConfirmation: record it */
};

struct hook {
    enum hook_sender sender;
    enum hook_kind kind;
    struct s3event_list events;
    char reason[200];       /* for HOOK_IGNORED and the delivery log */
    char *delivery_id;      /* the sender's id for this delivery, for transport dedupe, or NULL:
                               SNS MessageId, EventBridge id, webhook-id header */
    struct sns_message sns; /* the envelope when sender is SNS and not raw (sns.doc != NULL) */
};

void hook_init(struct hook *h);
void hook_release(struct hook *h);

/* Parses req into h. Fails with ERR_TOO_LARGE (body over the limit), or ERR_INVALID naming the
 * field ("/Records/0/s3/object/key: ...", "/Message: invalid JSON ...", "body: nested deeper
 * than 16 levels") for garbage, or a body that is none of the known shapes. */
int hook_parse(const struct hook_request *req, const struct hook_limits *lim, struct hook *h,
               struct err *err);

/* Recognises the sender from headers alone (SNS type header, EventBridge user agent, MinIO has
 * no mark of its own: HOOK_SENDER_S3 then). */
enum hook_sender hook_sender_guess(const struct hook_request *req);

const char *hook_sender_name(enum hook_sender s);
/* Parses "auto", "s3", "sns", "eventbridge", "minio"; -1 when unknown. */
int hook_sender_parse(const char *name, enum hook_sender *out);

#endif
