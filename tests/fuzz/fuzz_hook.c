/*
 * fuzz_hook: POST /v1/hooks/s3/{trigger} as a sender (S3, SNS, EventBridge, MinIO, or anyone)
 * could send it: request headers ("Name: value" lines), an empty line, then the body. The first
 * byte picks the trigger's configuration (auth mode, expected sender, rule), so one target runs
 * the whole inbound path: authentication on raw bytes, hook_parse (S3 Records, EventBridge,
 * MinIO, SNS envelopes and the S3 document in their Message), SNS signature checks against a
 * certificate served by a stand-in fetcher, rule matching, dedupe keys, and for every matched
 * upload the job template rendered with the event's bucket and key and validated as a spec.
 */
#include <strings.h>

#include "job/spec.h"
#include "trigger/jobtemplate.h"
#include "trigger/trigger.h"
#include "tests/fuzz/fuzz.h"
#include "tests/fuzz/spec_check.h"

/* A self-signed certificate for the stand-in fetcher (any signature fails against it). */
static const char cert_pem[] = "-----BEGIN CERTIFICATE-----\n"
                               "MIIDGzCCAgOgAwIBAgIUO4Tf08GtGnf7LK4phK4n9QMB5g4wDQYJKoZIhvcNAQEL\n"
                               "BQAwHDEaMBgGA1UEAwwRc25zLmFtYXpvbmF3cy5jb20wIBcNMjYxMTIyMDQxMTU2\n"
                               "WhgPMjEyNjEwMjkwNDExNTZaMBwxGjAYBgNVBAMMEXNucy5hbWF6b25hd3MuY29t\n"
                               "MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEAqrWHSJ6m89P33AqM+Gc5\n"
                               "xKtAKr4HNM0fBlBp6Rb1l4/mFtSEHUmxj/jW46qQYKUKueBMUefbQ0RtSMmQSYT5\n"
                               "ZnYKZsn/aoghBMab2nNrl6u8CG6c9wiCo0+3gvyURjPv5TRQA6So54SBs9rZkgFF\n"
                               "hWn/VUyFK69tLzcQKggFGUMr7+/tCQwfivn0eRwTb8dyipeIeEoYGAjO6gl0OzJJ\n"
                               "MQ5C7BQ/fawbuYZUey+efIrpqz7K0Q4zdInBfJKSTlZTzoBlZLOQPve5G0UB48yi\n"
                               "8Io2a+Cb+Iq4/OHlbqZBHgaWFZOceI6c7PyKeCMuM1PrEZI/wljfKxltMBcjWsVu\n"
                               "NQIDAQABo1MwUTAdBgNVHQ4EFgQU105t4Rd463tvcBfW6Uk3IitNwuMwHwYDVR0j\n"
                               "BBgwFoAU105t4Rd463tvcBfW6Uk3IitNwuMwDwYDVR0TAQH/BAUwAwEB/zANBgkq\n"
                               "hkiG9w0BAQsFAAOCAQEAi0LUpSiTkLllJY84jv1aBY6xoW+P5vashA+vgvtoRe/3\n"
                               "1amXOjIzrpB8On4JAEl3viU1BD3J7vcS7AnnKarrD+hvQBdAHKEmpemDn7GFUjVr\n"
                               "coTbBom5zWqTAuduVT/Qyu0vGq0AyIBLUNc68F/F+ulPD9A34b/Ok1TdLgY8I+k1\n"
                               "jBseVV7Tv++9qsXBhjzTDQYJm6waenNkEtD4UFa27LEB2NViyBy//Yb/k06sbS9r\n"
                               "OF3UtZzDd/f76IvtW4b8CP3SzSsR7WIlSNlDDPDWjdBkkUV+27SIzTZdpIQvfXhN\n"
                               "mfXNMzd2WTv3KN86WbBBEbiKX6IJ3ueomMSKaPqggA==\n"
                               "-----END CERTIFICATE-----\n";

static const char template_json[] =
    "{\"name\": \"ingest-${S3_BUCKET}\", \"command\": [\"python\", \"train.py\"],"
    " \"args\": [\"--data\", \"${S3_URI}\", \"--size\", \"${OBJECT_SIZE}\", \"${LR:-0.1}\"],"
    " \"env\": {\"KEY\": \"${S3_KEY}\", \"ETAG\": \"${S3_ETAG}\", \"VERSION\": "
    "\"${S3_VERSION_ID}\","
    " \"WHEN\": \"${EVENT_TIME}\"},"
    " \"labels\": {\"bucket\": \"${S3_BUCKET}\", \"key\": \"${S3_KEY}\"}}";

struct headers {
    char *kv[32];
    size_t n;
};

static const char *header(void *ctx, const char *name)
{
    struct headers *h = ctx;
    for (size_t i = 0; i + 1 < h->n; i += 2)
        if (strcasecmp(h->kv[i], name) == 0)
            return h->kv[i + 1];
    return NULL;
}

static int fetch(void *ctx, const char *url, struct buf *out, struct err *err)
{
    (void)ctx;
    (void)err;
    (void)url;
    buf_puts(out, cert_pem);
    return 0;
}

static struct sns_verifier *verifier(void)
{
    static struct sns_verifier *v;
    if (!v) {
        static const struct sns_fetcher f = { fetch, NULL };
        struct sns_policy p = { .max_age_s = 0 };
        v = sns_verifier_new(&p, &f);
    }
    return v;
}

/* Renders the template for an accepted event and validates the job it makes. */
static void render(const json_t *tmpl, const struct s3event *e)
{
    struct jobtemplate_values vals;
    jobtemplate_values_init(&vals);
    jobtemplate_values_from_event(&vals, e);
    struct err err;
    err_init(&err);
    json_t *spec = jobtemplate_render(tmpl, &vals, &err);
    FUZZ_ASSERT(spec || err_is_set(&err));
    if (spec)
        fuzz_spec_check(spec, false);
    json_decref(spec);
    err_release(&err);
    jobtemplate_values_release(&vals);
}

static void receive(uint8_t conf, const struct hook_request *req, const json_t *tmpl)
{
    static const char *const token[] = { "sekret-token-0123456789" },
                             *const basic[] = { "user:pass" },
                             *const hmac[] = { "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw" };
    static const char *const events[] = { "s3:ObjectCreated:*" };
    static const char *const topics[] = { "arn:aws:sns:eu-west-1:111122223333:uploads" };
    struct trigger t = { .sender = (enum hook_sender)(conf % 5) };
    t.auth.mode = (enum hookauth_mode)(conf / 5 % 6);
    t.auth.header = "x-api-key";
    t.auth.secrets = t.auth.mode == HOOKAUTH_BASIC  ? basic
                     : t.auth.mode == HOOKAUTH_HMAC ? hmac
                                                    : token;
    t.auth.nsecrets = 1;
    t.auth.topic_arns = conf & 0x80 ? topics : NULL;
    t.auth.ntopics = conf & 0x80 ? 1 : 0;
    if (conf & 0x40) {
        t.rule = (struct triggerrule){ .bucket = "datasets",
                                       .prefix = "incoming/",
                                       .suffix = ".tar",
                                       .events = events,
                                       .nevents = 1,
                                       .min_size = 1 };
    }
    struct trigger_result r;
    trigger_result_init(&r);
    /* 2024-05-01T10:21:00Z: the seeds' SNS timestamps are inside the window. */
    trigger_receive(&t, req, verifier(), 1714558860LL * 1000000000LL, &r);
    FUZZ_ASSERT(r.status >= 200 && r.status < 600);
    for (size_t i = 0; r.outcome == TRIGGER_ACCEPTED && i < r.hook.events.n; i++) {
        const struct s3event *e = &r.hook.events.items[i];
        FUZZ_ASSERT(e->bucket && e->key && strlen(e->key) <= S3EVENT_KEY_MAX);
        if (r.matches[i].matched)
            render(tmpl, e);
    }
    trigger_result_release(&r);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static json_t *tmpl;
    if (!tmpl) {
        tmpl = json_loads(template_json, 0, NULL);
        struct err err;
        err_init(&err);
        FUZZ_ASSERT(tmpl && jobtemplate_validate(tmpl, &err) == 0);
        err_release(&err);
    }
    if (size < 1)
        return 0;
    uint8_t conf = data[0];
    data++;
    size--;
    struct headers h = { .n = 0 };
    char *copies[16];
    size_t ncopies = 0;
    while (size && ncopies < 16) {
        size_t n;
        const uint8_t *line = fuzz_take(&data, &size, '\n', &n);
        if (n == 0)
            break; /* the empty line: the body follows */
        char *text = fuzz_cstr(line, n);
        copies[ncopies++] = text;
        char *colon = strchr(text, ':');
        if (!colon)
            continue;
        *colon = '\0';
        h.kv[h.n++] = text;
        h.kv[h.n++] = colon + 1 + (colon[1] == ' ');
    }
    /* An exact-size copy of the body: reading past it is caught. */
    char *body = malloc(size ? size : 1);
    memcpy(body, data, size);
    struct hook_request req = { header, &h, body, size };
    receive(conf, &req, tmpl);
    free(body);
    for (size_t i = 0; i < ncopies; i++)
        free(copies[i]);
    return 0;
}
