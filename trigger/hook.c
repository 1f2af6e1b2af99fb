/*
 * hook: tells inbound hook bodies apart and hands each shape to its parser (s3event.c, sns.c).
 * It does not authenticate or match rules. Pure, thread-safe; struct hook owns what it holds.
 */
#include "trigger/hook.h"

#include <strings.h>

#include "core/jsonx.h"
#include "core/xalloc.h"

#define MAX_BODY_DEFAULT  (1024 * 1024)
#define MAX_DEPTH_DEFAULT 16

void hook_init(struct hook *h)
{
    memset(h, 0, sizeof(*h));
    s3event_list_init(&h->events);
}

void hook_release(struct hook *h)
{
    s3event_list_release(&h->events);
    free(h->delivery_id);
    if (h->sns.doc)
        sns_message_release(&h->sns);
    hook_init(h);
}

const char *hook_sender_name(enum hook_sender s)
{
    static const char *const names[] = { "auto", "s3", "sns", "eventbridge", "minio" };
    return (unsigned)s < sizeof(names) / sizeof(names[0]) ? names[s] : "unknown";
}

int hook_sender_parse(const char *name, enum hook_sender *out)
{
    for (int s = HOOK_SENDER_AUTO; s <= HOOK_SENDER_MINIO; s++) {
        if (strcmp(name, hook_sender_name((enum hook_sender)s)) == 0) {
            *out = (enum hook_sender)s;
            return 0;
        }
    }
    return -1;
}

static const char *header(const struct hook_request *req, const char *name)
{
    return req->header ? req->header(req->ctx, name) : NULL;
}

enum hook_sender hook_sender_guess(const struct hook_request *req)
{
    const char *ua = header(req, "User-Agent");
    if (header(req, "x-amz-sns-message-type"))
        return HOOK_SENDER_SNS;
    if (ua && strncmp(ua, "Amazon/EventBridge/ApiDestinations", 34) == 0)
        return HOOK_SENDER_EVENTBRIDGE;
    return HOOK_SENDER_S3;
}

static bool is_test_event(const json_t *doc)
{
    const char *ev = jsonx_str(doc, "Event");
    return ev && strcmp(ev, "s3:TestEvent") == 0;
}

/* A Records[] document or a TestEvent, bare or from inside an SNS Message. */
static int parse_s3_doc(const json_t *doc, enum s3event_source source, const char *where,
                        struct hook *h, struct err *err)
{
    if (is_test_event(doc)) {
        snprintf(h->reason, sizeof(h->reason), "s3:TestEvent for bucket %.100s",
                 jsonx_str(doc, "Bucket") ? jsonx_str(doc, "Bucket") : "?");
        return 0;
    }
    return s3event_parse_records(doc, source, where, &h->events, err);
}

/* The S3 document inside a Notification's Message string. Text that is not JSON at all is some
 * other publisher's message on the topic: ignored. Broken JSON is an error. */
static int parse_sns_message(const struct hook_limits *lim, struct hook *h, struct err *err)
{
    const char *p = h->sns.message;
    while (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t')
        p++;
    if (*p != '{') {
        snprintf(h->reason, sizeof(h->reason), "SNS message is not JSON, not an S3 event");
        return 0;
    }
    json_t *doc = jsonx_loadb(h->sns.message, h->sns.message_len, lim->max_depth, err);
    if (!doc)
        return err_wrap(err, "/Message");
    int rc = 0;
    if (json_object_get(doc, "Records") || is_test_event(doc))
        rc = parse_s3_doc(doc, S3EVENT_SOURCE_SNS, "/Message", h, err);
    else
        snprintf(h->reason, sizeof(h->reason), "SNS message is not an S3 notification");
    json_decref(doc);
    for (size_t i = 0; rc == 0 && i < h->events.n; i++) {
        free(h->events.items[i].event_id);
        h->events.items[i].event_id = xstrdup(h->sns.message_id);
    }
    return rc;
}

static int parse_sns(const struct hook_request *req, const struct hook_limits *lim, json_t *doc,
                     struct hook *h, struct err *err)
{
    const char *type = header(req, "x-amz-sns-message-type");
    const char *topic = header(req, "x-amz-sns-topic-arn");
    h->sender = HOOK_SENDER_SNS;
    if (sns_message_parse(doc, &h->sns, err) < 0)
        return -1;
    h->delivery_id = xstrdup(h->sns.message_id);
    if (type && strcmp(type, h->sns.type_name) != 0)
        return err_set(err, ERR_INVALID, "header x-amz-sns-message-type %.40s does not match /Type",
                       type);
    if (topic && strcmp(topic, h->sns.topic_arn) != 0)
        return err_set(err, ERR_INVALID, "header x-amz-sns-topic-arn does not match /TopicArn");
    if (h->sns.type == SNS_SUBSCRIPTION_CONFIRMATION) {
        h->kind = HOOK_SNS_SUBSCRIBE;
        snprintf(h->reason, sizeof(h->reason), "subscription confirmation for %.150s",
                 h->sns.topic_arn);
        return 0;
    }
    if (h->sns.type == SNS_UNSUBSCRIBE_CONFIRMATION) {
        h->kind = HOOK_SNS_UNSUBSCRIBE;
        snprintf(h->reason, sizeof(h->reason), "unsubscribed from %.150s", h->sns.topic_arn);
        return 0;
    }
    return parse_sns_message(lim, h, err);
}

static bool is_sns_envelope(const json_t *doc)
{
    return jsonx_str(doc, "Type") && jsonx_str(doc, "TopicArn") && jsonx_str(doc, "Signature");
}

/* Everything that is not an SNS envelope, recognised by its shape. */
static int parse_body(const struct hook_request *req, json_t *doc, struct hook *h, struct err *err)
{
    const char *raw = header(req, "x-amz-sns-rawdelivery");
    const char *id = header(req, "webhook-id");
    if (id && *id)
        h->delivery_id = xstrdup(id);
    if (json_object_get(doc, "detail-type")) {
        h->sender = HOOK_SENDER_EVENTBRIDGE;
        free(h->delivery_id);
        h->delivery_id = jsonx_str(doc, "id") ? xstrdup(jsonx_str(doc, "id")) : NULL;
        return s3event_parse_eventbridge(doc, &h->events, err);
    }
    if (json_object_get(doc, "EventName") && json_object_get(doc, "Records")) {
        h->sender = HOOK_SENDER_MINIO;
        return s3event_parse_minio(doc, &h->events, err);
    }
    if (json_object_get(doc, "Records") || is_test_event(doc)) {
        bool sns_raw = raw && strcasecmp(raw, "true") == 0;
        return parse_s3_doc(doc, sns_raw ? S3EVENT_SOURCE_SNS : S3EVENT_SOURCE_S3, "", h, err);
    }
    return err_set(err, ERR_INVALID,
                   "body: not an upload event (expected Records, EventName, detail-type or an "
                   "SNS message)");
}

static void finish(struct hook *h)
{
    if (h->kind != HOOK_EVENTS)
        return;
    if (h->events.n > 0)
        return;
    h->kind = HOOK_IGNORED;
    if (h->reason[0])
        return;
    if (h->events.nignored > 0)
        snprintf(h->reason, sizeof(h->reason), "%s", h->events.ignored_reason);
    else
        snprintf(h->reason, sizeof(h->reason), "no records");
}

int hook_parse(const struct hook_request *req, const struct hook_limits *lim, struct hook *h,
               struct err *err)
{
    struct hook_limits l = lim ? *lim : (struct hook_limits){ 0 };
    const char *raw = header(req, "x-amz-sns-rawdelivery");
    int rc = -1;
    if (l.max_body == 0)
        l.max_body = MAX_BODY_DEFAULT;
    if (l.max_depth <= 0)
        l.max_depth = MAX_DEPTH_DEFAULT;
    h->sender = hook_sender_guess(req);
    if (req->len > l.max_body)
        return err_set(err, ERR_TOO_LARGE, "body: %zu bytes is over the limit of %zu", req->len,
                       l.max_body);
    json_t *doc = jsonx_loadb(req->body ? req->body : "", req->len, l.max_depth, err);
    if (!doc)
        return err_wrap(err, "body");
    if (!json_is_object(doc)) {
        err_set(err, ERR_INVALID, "body: must be a JSON object");
        goto out;
    }
    bool raw_delivery = raw && strcasecmp(raw, "true") == 0;
    if (!raw_delivery && (header(req, "x-amz-sns-message-type") || is_sns_envelope(doc)))
        rc = parse_sns(req, &l, doc, h, err);
    else
        rc = parse_body(req, doc, h, err);
    if (rc == 0)
        finish(h);
out:
    json_decref(doc);
    return rc;
}
