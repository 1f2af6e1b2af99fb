/*
 * bench_trigger: hook deliveries per second through the inbound path (trigger_receive: size
 * cap, authentication, parsing, rule match, dedupe key) for each sender shape, and job template
 * renders per second. One thread; every delivery is a distinct object (key and sequencer), signed
 * beforehand so that signing is not counted. Prints one line per case.
 *
 *   cmake --build build --target bench_trigger && build/bench/bench_trigger [deliveries]
 */
#include <stdio.h>
#include <stdlib.h>
#include <strings.h>

#include "core/clock.h"
#include "core/jsonx.h"
#include "core/parse.h"
#include "trigger/jobtemplate.h"
#include "trigger/stdwebhook.h"
#include "trigger/trigger.h"

#define SECRET "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"

struct delivery {
    struct buf body;
    char id[32], ts[24], sig[64];
    const char *kv[12];
};

static const char *header(void *ctx, const char *name)
{
    struct delivery *d = ctx;
    for (int i = 0; d->kv[i]; i += 2)
        if (strcasecmp(d->kv[i], name) == 0)
            return d->kv[i + 1];
    return NULL;
}

static void s3_body(struct buf *b, int i)
{
    buf_printf(b,
               "{\"Records\":[{\"eventVersion\":\"2.1\",\"eventSource\":\"aws:s3\",\"awsRegion\":"
               "\"eu-west-1\",\"eventTime\":\"2024-05-01T10:20:30.123Z\",\"eventName\":"
               "\"ObjectCreated:Put\",\"userIdentity\":{\"principalId\":\"AWS:AIDAEXAMPLE\"},"
               "\"requestParameters\":{\"sourceIPAddress\":\"203.0.113.7\"},\"responseElements\":"
               "{\"x-amz-request-id\":\"0A1B2C3D4E5F6789\",\"x-amz-id-2\":\"abc/def=\"},\"s3\":{"
               "\"s3SchemaVersion\":\"1.0\",\"configurationId\":\"train\",\"bucket\":{\"name\":"
               "\"datasets\",\"ownerIdentity\":{\"principalId\":\"A1EXAMPLE\"},\"arn\":"
               "\"arn:aws:s3:::datasets\"},\"object\":{\"key\":\"incoming/run+%d/data%%3Dv2.tar\","
               "\"size\":73400320,\"eTag\":\"9b2cf535f27731c974343645a3985328\",\"sequencer\":"
               "\"00663219FE%08X\"}}}]}",
               i, (unsigned)i);
}

static void minio_body(struct buf *b, int i)
{
    buf_printf(
        b,
        "{\"EventName\":\"s3:ObjectCreated:Put\",\"Key\":\"datasets/incoming/run %d/a+b.tar\","
        "\"Records\":[{\"eventVersion\":\"2.0\",\"eventSource\":\"minio:s3\",\"awsRegion\":"
        "\"\",\"eventTime\":\"2024-05-01T10:20:30.456Z\",\"eventName\":"
        "\"s3:ObjectCreated:Put\",\"userIdentity\":{\"principalId\":\"minioadmin\"},\"s3\":{"
        "\"s3SchemaVersion\":\"1.0\",\"configurationId\":\"Config\",\"bucket\":{\"name\":"
        "\"datasets\",\"arn\":\"arn:aws:s3:::datasets\"},\"object\":{\"key\":"
        "\"incoming%%2Frun+%d%%2Fa%%2Bb.tar\",\"size\":2048,\"eTag\":\"e5d8f0a1\","
        "\"contentType\":\"application/x-tar\",\"sequencer\":\"17C3D4E5%08X\"}}}]}",
        i, i, (unsigned)i);
}

static void eventbridge_body(struct buf *b, int i)
{
    buf_printf(b,
               "{\"version\":\"0\",\"id\":\"17793124-05d4-b198-2fde-%012d\",\"detail-type\":"
               "\"Object Created\",\"source\":\"aws.s3\",\"account\":\"111122223333\",\"time\":"
               "\"2021-11-12T00:00:00Z\",\"region\":\"ca-central-1\",\"resources\":["
               "\"arn:aws:s3:::datasets\"],\"detail\":{\"version\":\"0\",\"bucket\":{\"name\":"
               "\"datasets\"},\"object\":{\"key\":\"incoming/run %d/data.tar\",\"size\":5,"
               "\"etag\":\"b1946ac92492d2347c6235b4d2611184\",\"sequencer\":\"00617f08%08x\"},"
               "\"request-id\":\"N4N7GDK58NMKJ12R\",\"requester\":\"123456789012\",\"reason\":"
               "\"PutObject\"}}",
               i, i, (unsigned)i);
}

enum shape { HMAC_S3, BEARER_MINIO, APIKEY_EVENTBRIDGE };

static struct delivery *make(enum shape shape, int n)
{
    struct delivery *d = calloc((size_t)n, sizeof(*d));
    struct buf key = BUF_INIT, sig = BUF_INIT;
    stdwebhook_key(SECRET, &key, NULL);
    int64_t now = clock_now_ns() / NS_PER_SEC;
    for (int i = 0; i < n; i++) {
        if (shape == HMAC_S3) {
            s3_body(&d[i].body, i);
            snprintf(d[i].id, sizeof(d[i].id), "msg_%d", i);
            snprintf(d[i].ts, sizeof(d[i].ts), "%lld", (long long)now);
            buf_reset(&sig);
            stdwebhook_sign(key.data, key.len, d[i].id, now, d[i].body.data, d[i].body.len, &sig);
            snprintf(d[i].sig, sizeof(d[i].sig), "%s", sig.data);
            const char *kv[] = {
                "webhook-id", d[i].id, "webhook-timestamp", d[i].ts, "webhook-signature",
                d[i].sig,     NULL
            };
            memcpy(d[i].kv, kv, sizeof(kv));
        } else if (shape == BEARER_MINIO) {
            minio_body(&d[i].body, i);
            const char *kv[] = { "Authorization", "Bearer minio-token-0123456789", NULL };
            memcpy(d[i].kv, kv, sizeof(kv));
        } else {
            eventbridge_body(&d[i].body, i);
            const char *kv[] = { "User-Agent", "Amazon/EventBridge/ApiDestinations", "x-api-key",
                                 "eventbridge-key-0123456789", NULL };
            memcpy(d[i].kv, kv, sizeof(kv));
        }
    }
    buf_release(&key);
    buf_release(&sig);
    return d;
}

static void run(const char *name, enum shape shape, const struct trigger *t, int n)
{
    struct delivery *d = make(shape, n);
    size_t bytes = 0, accepted = 0;
    int64_t now = clock_now_ns(), t0 = clock_mono_ns();
    for (int i = 0; i < n; i++) {
        struct hook_request req = { header, &d[i], d[i].body.data, d[i].body.len };
        struct trigger_result r;
        trigger_result_init(&r);
        trigger_receive(t, &req, NULL, now, &r);
        accepted += r.outcome == TRIGGER_ACCEPTED;
        bytes += d[i].body.len;
        trigger_result_release(&r);
    }
    double secs = (double)(clock_mono_ns() - t0) / 1e9;
    printf("%-34s %9.0f deliveries/s  %6.2f us each  %4zu B body  %d/%d accepted\n", name, n / secs,
           secs / n * 1e6, bytes / (size_t)n, (int)accepted, n);
    for (int i = 0; i < n; i++)
        buf_release(&d[i].body);
    free(d);
}

static void run_render(int n)
{
    const char *text =
        "{\"name\": \"retrain-${S3_BUCKET}\", \"command\": [\"python\", \"train.py\"],"
        " \"args\": [\"--data\", \"${S3_URI}\", \"--lr\", \"${LR:-0.001}\"],"
        " \"env\": {\"EPOCHS\": \"${EPOCHS}\", \"KEY\": \"${S3_KEY}\", \"AT\": \"${EVENT_TIME}\"},"
        " \"labels\": {\"dataset\": \"${S3_BUCKET}\"}, \"image\": \"registry/train:1\","
        " \"resources\": {\"gpus\": 8, \"nodes\": 2}, \"variables\": {\"EPOCHS\": \"10\"}}";
    json_t *tmpl = jsonx_loadb(text, strlen(text), 32, NULL);
    struct s3event e = { .bucket = "datasets",
                         .key = "incoming/run 42/data=v2.tar",
                         .size = 73400320,
                         .etag = "9b2c",
                         .version_id = "",
                         .sequencer = "0A",
                         .event_name = "ObjectCreated:Put",
                         .event_time = "2024-05-01T10:20:30.123Z" };
    int64_t t0 = clock_mono_ns();
    for (int i = 0; i < n; i++) {
        struct jobtemplate_values v;
        jobtemplate_values_init(&v);
        jobtemplate_values_from_event(&v, &e);
        json_decref(jobtemplate_render(tmpl, &v, NULL));
        jobtemplate_values_release(&v);
    }
    double secs = (double)(clock_mono_ns() - t0) / 1e9;
    printf("%-34s %9.0f renders/s     %6.2f us each\n", "template render (event -> spec)", n / secs,
           secs / n * 1e6);
    json_decref(tmpl);
}

int main(int argc, char **argv)
{
    int n = 50000;
    if (argc > 1 && parse_int(argv[1], 1, 10000000, &n) < 0) {
        fprintf(stderr, "usage: bench_trigger [deliveries]\n");
        return 2;
    }
    const char *hmac_secrets[] = { SECRET };
    const char *tokens[] = { "minio-token-0123456789" };
    const char *keys[] = { "eventbridge-key-0123456789" };
    const char *const created[] = { "s3:ObjectCreated:*" };
    struct triggerrule rule = { .bucket = "datasets",
                                .prefix = "incoming/",
                                .suffix = ".tar",
                                .events = created,
                                .nevents = 1,
                                .min_size = 1 };
    struct trigger hmac = {
        .auth = { .mode = HOOKAUTH_HMAC, .secrets = hmac_secrets, .nsecrets = 1 }, .rule = rule
    };
    struct trigger minio = { .sender = HOOK_SENDER_MINIO,
                             .auth = { .mode = HOOKAUTH_BEARER, .secrets = tokens, .nsecrets = 1 },
                             .rule = rule };
    struct trigger eb = {
        .auth = { .mode = HOOKAUTH_HEADER, .header = "x-api-key", .secrets = keys, .nsecrets = 1 },
        .rule = rule
    };
    printf("bench_trigger: %d deliveries per case, one thread\n", n);
    run("S3 Records + Standard Webhooks HMAC", HMAC_S3, &hmac, n);
    run("MinIO body + bearer token", BEARER_MINIO, &minio, n);
    run("EventBridge event + API key", APIKEY_EVENTBRIDGE, &eb, n);
    run_render(n);
    return 0;
}
