/*
 * Tests of trigger parsing: key decoding, each sender's format from the fixtures in
 * data/trigger (written from AWS's and MinIO's documented examples), classification of non-uploads,
 * errors that name the field, rule matching and dedupe keys.
 */
#include "tests/unit/check.h"
#include "tests/unit/test_trigger.h"

#include "core/clock.h"
#include "core/jsonx.h"
#include "trigger/hook.h"
#include "trigger/s3event.h"
#include "trigger/triggerrule.h"

/* Parses a fixture with the given headers; returns hook_parse's result. */
static int parse(const char *name, struct fake_headers *hdr, struct hook *h, struct err *err)
{
    struct buf body = BUF_INIT;
    fixture(name, &body);
    struct hook_request req = fake_request(hdr, &body);
    hook_init(h);
    err_init(err);
    int rc = hook_parse(&req, NULL, h, err);
    buf_release(&body);
    return rc;
}

static void check_decoded(const char *enc, const char *want)
{
    struct err err;
    err_init(&err);
    char *got = s3event_decode_key(enc, &err);
    CHECK_STR(got, want);
    free(got);
    err_release(&err);
}

static void check_bad_key(const char *enc)
{
    struct err err;
    err_init(&err);
    char *got = s3event_decode_key(enc, &err);
    CHECK(got == NULL);
    CHECK_INT(err.code, ERR_INVALID);
    free(got);
    err_release(&err);
}

static void test_decode_key(void)
{
    check_decoded("incoming/run+42/data%3Dv2.tar", "incoming/run 42/data=v2.tar");
    check_decoded("red+flower.jpg", "red flower.jpg");
    check_decoded("a%2Bb+c", "a+b c");
    check_decoded("test%2F10%3A47", "test/10:47");
    check_decoded("caf%C3%A9", "caf\xc3\xa9");
    check_decoded("caf%c3%a9", "caf\xc3\xa9");
    check_bad_key("a%00b");  /* NUL would cut the key short */
    check_bad_key("a%zzb");  /* not hex */
    check_bad_key("a%2");    /* truncated escape */
    check_bad_key("%C3%28"); /* invalid UTF-8 */
    check_bad_key("");
    char longkey[1100];
    memset(longkey, 'a', 1025);
    longkey[1025] = '\0';
    check_bad_key(longkey);
    longkey[1024] = '\0';
    char *ok = s3event_decode_key(longkey, NULL);
    CHECK(ok != NULL);
    free(ok);
}

static void test_s3_put(void)
{
    struct hook h;
    struct err err;
    CHECK_INT(parse("s3-put.json", NULL, &h, &err), 0);
    CHECK_INT(h.kind, HOOK_EVENTS);
    CHECK_INT(h.sender, HOOK_SENDER_S3);
    CHECK_INT(h.events.n, 1);
    const struct s3event *e = &h.events.items[0];
    CHECK_STR(e->bucket, "datasets");
    CHECK_STR(e->key, "incoming/run 42/data=v2.tar");
    CHECK_INT(e->size, 73400320);
    CHECK_STR(e->etag, "9b2cf535f27731c974343645a3985328");
    CHECK_STR(e->version_id, "3HL4kqtJlcpXroDTDmJ.rmSpXd3dIbrHY");
    CHECK_STR(e->sequencer, "00663219FE1E2A3B4C");
    CHECK_STR(e->event_name, "ObjectCreated:Put");
    CHECK_STR(e->event_time, "2024-05-01T10:20:30.123Z");
    int64_t t;
    clock_parse("2024-05-01T10:20:30.123Z", &t);
    CHECK_INT(e->event_time_ns, t);
    CHECK_STR(e->region, "eu-west-1");
    CHECK_INT(e->source, S3EVENT_SOURCE_S3);
    hook_release(&h);
    err_release(&err);
}

static void test_s3_copy_multipart_keys(void)
{
    struct hook h;
    struct err err;
    CHECK_INT(parse("s3-copy.json", NULL, &h, &err), 0);
    CHECK_STR(h.events.items[0].event_name, "ObjectCreated:Copy");
    CHECK_STR(h.events.items[0].version_id, "");
    hook_release(&h);
    CHECK_INT(parse("s3-multipart.json", NULL, &h, &err), 0);
    CHECK_STR(h.events.items[0].event_name, "ObjectCreated:CompleteMultipartUpload");
    CHECK_STR(h.events.items[0].etag, "9b2cf535f27731c974343645a3985328-9");
    CHECK_INT(h.events.items[0].size, 5368709120LL);
    hook_release(&h);
    CHECK_INT(parse("s3-keys.json", NULL, &h, &err), 0);
    CHECK_INT(h.events.n, 5);
    if (h.events.n == 5) {
        CHECK_STR(h.events.items[0].key, "red flower.jpg");
        CHECK_STR(h.events.items[1].key, "a+b c.txt");
        CHECK_STR(h.events.items[2].key, "caf\xc3\xa9/na\xc3\xafve \xe2\x9c\x93.bin");
        CHECK_STR(h.events.items[3].key, "test/10:47:07/x");
        CHECK_STR(h.events.items[4].key, "dir/sub/file.txt");
        CHECK_STR(h.events.items[4].event_name, "ObjectCreated:Post");
    }
    hook_release(&h);
    err_release(&err);
}

static void test_ignored(void)
{
    struct hook h;
    struct err err;
    CHECK_INT(parse("s3-testevent.json", NULL, &h, &err), 0);
    CHECK_INT(h.kind, HOOK_IGNORED);
    CHECK(strstr(h.reason, "s3:TestEvent") != NULL);
    hook_release(&h);
    CHECK_INT(parse("s3-delete.json", NULL, &h, &err), 0);
    CHECK_INT(h.kind, HOOK_IGNORED);
    CHECK_STR(h.reason, "event ObjectRemoved:Delete is not an upload");
    hook_release(&h);
    CHECK_INT(parse("eventbridge-deleted.json", NULL, &h, &err), 0);
    CHECK_INT(h.kind, HOOK_IGNORED);
    CHECK_INT(h.sender, HOOK_SENDER_EVENTBRIDGE);
    CHECK(strstr(h.reason, "Object Deleted") != NULL);
    hook_release(&h);
    CHECK_INT(parse("minio-get.json", NULL, &h, &err), 0);
    CHECK_INT(h.kind, HOOK_IGNORED);
    CHECK_INT(h.sender, HOOK_SENDER_MINIO);
    hook_release(&h);
    err_release(&err);
}

static void test_eventbridge(void)
{
    struct fake_headers hdr = { { "User-Agent", "Amazon/EventBridge/ApiDestinations",
                                  "Content-Type", "application/json; charset=utf-8", NULL } };
    struct hook h;
    struct err err;
    CHECK_INT(parse("eventbridge-created.json", &hdr, &h, &err), 0);
    CHECK_INT(h.kind, HOOK_EVENTS);
    CHECK_INT(h.sender, HOOK_SENDER_EVENTBRIDGE);
    CHECK_STR(h.delivery_id, "17793124-05d4-b198-2fde-7ededc63b103");
    const struct s3event *e = &h.events.items[0];
    /* EventBridge does not URL-encode: '+' stays '+'. */
    CHECK_STR(e->key, "incoming/run 42/data=v2+final.tar");
    CHECK_STR(e->etag, "b1946ac92492d2347c6235b4d2611184");
    CHECK_STR(e->version_id, "IYV3p45BT0ac8hjHg1houSdS1a.Mro8e");
    CHECK_STR(e->sequencer, "00617F08299329D189"); /* upper-cased */
    CHECK_STR(e->event_name, "ObjectCreated:Put");
    CHECK_STR(e->event_id, "17793124-05d4-b198-2fde-7ededc63b103");
    CHECK_STR(e->region, "ca-central-1");
    CHECK_INT(e->size, 5);
    CHECK_INT(e->source, S3EVENT_SOURCE_EVENTBRIDGE);
    hook_release(&h);
    err_release(&err);
}

static void test_minio(void)
{
    struct fake_headers hdr = { { "Authorization", "Bearer tok", NULL } };
    struct hook h;
    struct err err;
    CHECK_INT(parse("minio-put.json", &hdr, &h, &err), 0);
    CHECK_INT(h.kind, HOOK_EVENTS);
    CHECK_INT(h.sender, HOOK_SENDER_MINIO);
    const struct s3event *e = &h.events.items[0];
    CHECK_STR(e->key, "incoming/run 42/a+b.tar");
    CHECK_STR(e->event_name, "ObjectCreated:Put");
    CHECK_STR(e->sequencer, "17C3D4E5F6A7B8C9");
    CHECK_INT(e->source, S3EVENT_SOURCE_MINIO);
    hook_release(&h);
    err_release(&err);
}

static void test_sns_parse(void)
{
    struct fake_headers hdr = { { "x-amz-sns-message-type", "Notification", "x-amz-sns-message-id",
                                  "22b80b92-fdea-4c2c-8f9d-bdfb0c7bf324", "x-amz-sns-topic-arn",
                                  "arn:aws:sns:eu-west-1:111122223333:uploads", "Content-Type",
                                  "text/plain; charset=UTF-8", NULL } };
    struct hook h;
    struct err err;
    CHECK_INT(parse("sns-notification.json", &hdr, &h, &err), 0);
    CHECK_INT(h.kind, HOOK_EVENTS);
    CHECK_INT(h.sender, HOOK_SENDER_SNS);
    CHECK_STR(h.delivery_id, "22b80b92-fdea-4c2c-8f9d-bdfb0c7bf324");
    CHECK_STR(h.events.items[0].key, "incoming/run 42/data=v2.tar");
    CHECK_INT(h.events.items[0].source, S3EVENT_SOURCE_SNS);
    CHECK_STR(h.events.items[0].event_id, "22b80b92-fdea-4c2c-8f9d-bdfb0c7bf324");
    hook_release(&h);

    hdr.kv[1] = "Notification";
    CHECK_INT(parse("sns-testevent.json", &hdr, &h, &err), 0);
    CHECK_INT(h.kind, HOOK_IGNORED);
    hook_release(&h);

    hdr.kv[1] = "SubscriptionConfirmation";
    CHECK_INT(parse("sns-subscription.json", &hdr, &h, &err), 0);
    CHECK_INT(h.kind, HOOK_SNS_SUBSCRIBE);
    CHECK(strncmp(h.sns.subscribe_url, "https://sns.eu-west-1.amazonaws.com/?Action=Confirm", 51) ==
          0);
    hook_release(&h);

    hdr.kv[1] = "UnsubscribeConfirmation";
    CHECK_INT(parse("sns-unsubscribe.json", &hdr, &h, &err), 0);
    CHECK_INT(h.kind, HOOK_SNS_UNSUBSCRIBE);
    hook_release(&h);

    /* The type header must agree with the body. */
    hdr.kv[1] = "Notification";
    CHECK_INT(parse("sns-subscription.json", &hdr, &h, &err), -1);
    CHECK(strstr(err.msg, "x-amz-sns-message-type") != NULL);
    hook_release(&h);
    err_release(&err);

    /* Raw delivery: the body is the bare S3 document. */
    struct fake_headers raw = { { "x-amz-sns-message-type", "Notification", "x-amz-sns-rawdelivery",
                                  "true", NULL } };
    CHECK_INT(parse("s3-put.json", &raw, &h, &err), 0);
    CHECK_INT(h.sender, HOOK_SENDER_SNS);
    CHECK_INT(h.events.items[0].source, S3EVENT_SOURCE_SNS);
    CHECK(h.sns.doc == NULL);
    hook_release(&h);
    err_release(&err);
}

/* Parses text as a body and returns the error message ("" when it parsed). */
static int parse_text(const char *text, const struct hook_limits *lim, struct err *err)
{
    struct buf body = BUF_INIT;
    buf_puts(&body, text);
    struct hook_request req = fake_request(NULL, &body);
    struct hook h;
    hook_init(&h);
    err_init(err);
    int rc = hook_parse(&req, lim, &h, err);
    hook_release(&h);
    buf_release(&body);
    return rc;
}

static void test_errors(void)
{
    struct err err;
    CHECK_INT(parse_text("{\"Records\": [", NULL, &err), -1);
    CHECK_INT(err.code, ERR_INVALID);
    CHECK(strncmp(err.msg, "body: invalid JSON", 18) == 0);
    err_release(&err);
    CHECK_INT(parse_text("[1,2]", NULL, &err), -1);
    CHECK_STR(err.msg, "body: must be a JSON object");
    err_release(&err);
    CHECK_INT(parse_text("{\"hello\": 1}", NULL, &err), -1);
    CHECK(strstr(err.msg, "not an upload event") != NULL);
    err_release(&err);
    CHECK_INT(parse_text("{\"Records\": [{\"eventVersion\":\"2.1\",\"eventName\":"
                         "\"ObjectCreated:Put\",\"eventTime\":\"2024-05-01T10:20:30Z\","
                         "\"s3\":{\"bucket\":{\"name\":\"b\"},\"object\":{\"size\":1}}}]}",
                         NULL, &err),
              -1);
    CHECK_STR(err.msg, "/Records/0/s3/object/key: required string is missing");
    err_release(&err);
    CHECK_INT(parse_text("{\"Records\": [{\"eventVersion\":\"3.0\",\"eventName\":"
                         "\"ObjectCreated:Put\"}]}",
                         NULL, &err),
              -1);
    CHECK(strstr(err.msg, "/Records/0/eventVersion") != NULL);
    err_release(&err);
    CHECK_INT(parse_text("{\"Records\": [{\"eventName\":\"ObjectCreated:Put\",\"eventTime\":"
                         "\"yesterday\",\"s3\":{}}]}",
                         NULL, &err),
              -1);
    CHECK(strstr(err.msg, "/Records/0/eventTime") != NULL);
    err_release(&err);
    CHECK_INT(parse_text("{\"Records\": [{\"eventName\":\"ObjectCreated:Put\",\"eventTime\":"
                         "\"2024-05-01T10:20:30Z\",\"s3\":{\"bucket\":{\"name\":\"b\"},"
                         "\"object\":{\"key\":\"a%00\"}}}]}",
                         NULL, &err),
              -1);
    CHECK(strncmp(err.msg, "/Records/0/s3/object/key", 24) == 0);
    err_release(&err);
    CHECK_INT(parse_text("{\"Records\": [{\"eventName\":\"ObjectCreated:Put\",\"eventTime\":"
                         "\"2024-05-01T10:20:30Z\",\"s3\":{\"bucket\":{\"name\":\"b\"},"
                         "\"object\":{\"key\":\"k\",\"size\":-4}}}]}",
                         NULL, &err),
              -1);
    CHECK_STR(err.msg, "/Records/0/s3/object/size: must be a non-negative integer");
    err_release(&err);

    /* Too deep and too large. */
    struct buf deep = BUF_INIT;
    for (int i = 0; i < 40; i++)
        buf_puts(&deep, "{\"a\":");
    buf_puts(&deep, "1");
    for (int i = 0; i < 40; i++)
        buf_puts(&deep, "}");
    CHECK_INT(parse_text(deep.data, NULL, &err), -1);
    CHECK(strstr(err.msg, "body: JSON nested deeper than 16") != NULL);
    err_release(&err);
    buf_release(&deep);
    struct hook_limits small = { .max_body = 64 };
    CHECK_INT(
        parse_text("{\"Records\": [], \"padding\": \"..........................................\"}",
                   &small, &err),
        -1);
    CHECK_INT(err.code, ERR_TOO_LARGE);
    err_release(&err);

    /* An SNS Message that is broken JSON names /Message; plain text is someone else's. */
    struct buf body = BUF_INIT;
    fixture("sns-notification.json", &body);
    json_t *doc = jsonx_loadb(body.data, body.len, 16, NULL);
    json_object_set_new(doc, "Message", json_string("{\"Records\": [tru"));
    char *text = jsonx_dumps(doc);
    CHECK_INT(parse_text(text, NULL, &err), -1);
    CHECK(strncmp(err.msg, "/Message: invalid JSON", 22) == 0);
    err_release(&err);
    free(text);
    json_object_set_new(doc, "Message", json_string("hello from another publisher"));
    text = jsonx_dumps(doc);
    struct buf b2 = BUF_INIT;
    buf_puts(&b2, text);
    struct hook_request req = fake_request(NULL, &b2);
    struct hook h;
    hook_init(&h);
    CHECK_INT(hook_parse(&req, NULL, &h, &err), 0);
    CHECK_INT(h.kind, HOOK_IGNORED);
    hook_release(&h);
    buf_release(&b2);
    free(text);
    json_decref(doc);
    buf_release(&body);
    err_release(&err);
}

static void test_sequencer(void)
{
    CHECK(s3event_sequencer_cmp("0055AED6DCD90281E5", "0055AED6DCD90281E6") < 0);
    CHECK(s3event_sequencer_cmp("0055aed6dcd90281e6", "0055AED6DCD90281E5") > 0);
    CHECK_INT(s3event_sequencer_cmp("00AB", "00ab00"), 0); /* padded with 0 on the right */
    CHECK(s3event_sequencer_cmp("00AB", "00AB01") < 0);
    char out[8];
    CHECK_INT(s3event_sequencer_norm("xyz", out, sizeof(out)), -1);
}

static struct s3event sample(const char *bucket, const char *key, const char *version,
                             const char *seq)
{
    struct s3event e = { .bucket = (char *)bucket,
                         .key = (char *)key,
                         .size = 100,
                         .etag = (char *)"e",
                         .version_id = (char *)version,
                         .sequencer = (char *)seq,
                         .event_name = (char *)"ObjectCreated:Put",
                         .event_time = (char *)"2024-05-01T10:20:30Z" };
    return e;
}

static void test_rules(void)
{
    const char *const created[] = { "s3:ObjectCreated:*" };
    const char *const put_only[] = { "s3:ObjectCreated:Put" };
    struct triggerrule r = { .bucket = "datasets",
                             .prefix = "incoming/",
                             .suffix = ".tar",
                             .events = created,
                             .nevents = 1,
                             .min_size = 50 };
    struct s3event e = sample("datasets", "incoming/run 42/data=v2.tar", "", "0A");
    char why[160];
    CHECK(triggerrule_match(&r, &e, why, sizeof(why)));
    e.bucket = (char *)"other";
    CHECK(!triggerrule_match(&r, &e, why, sizeof(why)));
    CHECK_STR(why, "bucket other is not datasets");
    e.bucket = (char *)"datasets";
    e.key = (char *)"outgoing/x.tar";
    CHECK(!triggerrule_match(&r, &e, why, sizeof(why)));
    CHECK_STR(why, "key does not start with incoming/");
    e.key = (char *)"incoming/x.tar.tmp";
    CHECK(!triggerrule_match(&r, &e, why, sizeof(why)));
    e.key = (char *)"incoming/x.tar";
    e.size = 10;
    CHECK(!triggerrule_match(&r, &e, why, sizeof(why)));
    CHECK_STR(why, "size 10 is below 50 bytes");
    e.size = -1;
    CHECK(!triggerrule_match(&r, &e, why, sizeof(why)));
    e.size = 50;
    CHECK(triggerrule_match(&r, &e, NULL, 0));
    r.events = put_only;
    e.event_name = (char *)"ObjectCreated:Copy";
    CHECK(!triggerrule_match(&r, &e, why, sizeof(why)));
    struct triggerrule any = { 0 };
    CHECK(triggerrule_match(&any, &e, why, sizeof(why)));

    const char *const bad[] = { "s3:ObjectRemoved:*", "ObjectCreated:Put", "s3:ObjectCreated:" };
    struct triggerrule rb = { .events = bad, .nevents = 3, .min_size = -1 };
    struct err err;
    err_init(&err);
    CHECK_INT(triggerrule_validate(&rb, &err), -1);
    CHECK_INT(err.nfields, 3);
    if (err.nfields == 3) {
        CHECK_STR(err.fields[0].pointer, "/rule/events/0");
        CHECK_STR(err.fields[1].pointer, "/rule/events/2");
        CHECK_STR(err.fields[2].pointer, "/rule/min_size");
    }
    err_release(&err);
}

static void test_dedupe(void)
{
    char a[TRIGGERRULE_DEDUPE_LEN], b[TRIGGERRULE_DEDUPE_LEN];
    struct s3event e1 = sample("datasets", "k", "v1", "00617F08299329D189");
    struct s3event e2 = sample("datasets", "k", "v1", "00617F08299329D18900");
    triggerrule_dedupe_key(&e1, a);
    triggerrule_dedupe_key(&e2, b);
    CHECK_STR(a, b); /* zero padding does not make a new version */
    CHECK_INT(strlen(a), TRIGGERRULE_DEDUPE_LEN - 1);
    CHECK(strncmp(a, "s3v1:", 5) == 0);
    /* Stable across releases: the store keeps these. */
    CHECK_STR(a, "s3v1:7e41e5f6d798736198ca5a34f9b4a9d5968dd14df767f29509d098e61d520838");
    struct s3event e3 = sample("datasets", "k", "v2", "00617F08299329D189");
    triggerrule_dedupe_key(&e3, b);
    CHECK(strcmp(a, b) != 0);
    struct s3event e4 = sample("datasets", "k", "v1", "00617F08299329D18A");
    triggerrule_dedupe_key(&e4, b);
    CHECK(strcmp(a, b) != 0);
    /* Fields cannot run into each other. */
    struct s3event x = sample("ab", "c", "", "01"), y = sample("a", "bc", "", "01");
    triggerrule_dedupe_key(&x, a);
    triggerrule_dedupe_key(&y, b);
    CHECK(strcmp(a, b) != 0);

    /* The same write seen through an S3 notification and through EventBridge (lower-case
     * sequencer, key not encoded) has one key. */
    struct hook h1;
    struct err err;
    CHECK_INT(parse("eventbridge-created.json", NULL, &h1, &err), 0);
    triggerrule_dedupe_key(&h1.events.items[0], a);
    hook_release(&h1);
    CHECK_INT(parse_text("{\"Records\": [{\"eventVersion\":\"2.1\",\"eventName\":"
                         "\"ObjectCreated:Put\",\"eventTime\":\"2021-11-12T00:00:00.000Z\","
                         "\"s3\":{\"bucket\":{\"name\":\"datasets\"},\"object\":{\"key\":"
                         "\"incoming/run+42/data%3Dv2%2Bfinal.tar\",\"size\":5,\"versionId\":"
                         "\"IYV3p45BT0ac8hjHg1houSdS1a.Mro8e\",\"sequencer\":"
                         "\"00617F08299329D189\"}}}]}",
                         NULL, &err),
              0);
    err_release(&err);
    struct buf body = BUF_INIT;
    buf_puts(&body, "{\"Records\": [{\"eventVersion\":\"2.1\",\"eventName\":"
                    "\"ObjectCreated:Put\",\"eventTime\":\"2021-11-12T00:00:00.000Z\","
                    "\"s3\":{\"bucket\":{\"name\":\"datasets\"},\"object\":{\"key\":"
                    "\"incoming/run+42/data%3Dv2%2Bfinal.tar\",\"size\":5,\"versionId\":"
                    "\"IYV3p45BT0ac8hjHg1houSdS1a.Mro8e\",\"sequencer\":"
                    "\"00617F08299329D189\"}}}]}");
    struct hook_request req = fake_request(NULL, &body);
    hook_init(&h1);
    CHECK_INT(hook_parse(&req, NULL, &h1, &err), 0);
    triggerrule_dedupe_key(&h1.events.items[0], b);
    CHECK_STR(a, b);
    hook_release(&h1);
    buf_release(&body);
    err_release(&err);
}

int main(void)
{
    test_decode_key();
    test_s3_put();
    test_s3_copy_multipart_keys();
    test_ignored();
    test_eventbridge();
    test_minio();
    test_sns_parse();
    test_errors();
    test_sequencer();
    test_rules();
    test_dedupe();
    return check_done();
}
