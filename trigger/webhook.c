/*
 * webhook: outbound notification payloads, Standard Webhooks signing and the retry schedule.
 * It does not send (core/httpc.c) or queue (the caller's delivery loop). Pure functions apart from
 * webhook_new_id(), which reads the kernel's random source; thread-safe.
 */
#include "trigger/webhook.h"

#include "core/clock.h"
#include "core/crypto.h"
#include "core/jsonx.h"
#include "core/xalloc.h"
#include "trigger/stdwebhook.h"

static const char *const event_names[WEBHOOK_EVENT_COUNT] = {
    "job.accepted",  "job.started", "job.succeeded", "job.failed",
    "job.cancelled", "job.stalled", "job.restarted", "webhook.test",
};

/* How a Slack message words each event. */
static const char *const event_verbs[WEBHOOK_EVENT_COUNT] = {
    "was accepted",  "started",       "succeeded",     "failed",
    "was cancelled", "looks stalled", "was restarted", "test message",
};

const char *webhook_event_name(enum webhook_event e)
{
    return (unsigned)e < WEBHOOK_EVENT_COUNT ? event_names[e] : "unknown";
}

int webhook_event_parse(const char *name, enum webhook_event *out)
{
    for (int e = 0; e < WEBHOOK_EVENT_COUNT; e++) {
        if (strcmp(name, event_names[e]) == 0) {
            *out = (enum webhook_event)e;
            return 0;
        }
    }
    return -1;
}

int webhook_event_for_state(enum job_state to, enum webhook_event *out)
{
    switch (to) {
    case JOB_QUEUED:
        *out = WEBHOOK_JOB_ACCEPTED;
        return 0;
    case JOB_RUNNING:
        *out = WEBHOOK_JOB_STARTED;
        return 0;
    case JOB_SUCCEEDED:
        *out = WEBHOOK_JOB_SUCCEEDED;
        return 0;
    case JOB_FAILED:
    case JOB_PREEMPTED:
        *out = WEBHOOK_JOB_FAILED;
        return 0;
    case JOB_CANCELLED:
        *out = WEBHOOK_JOB_CANCELLED;
        return 0;
    case JOB_RESTARTING:
        *out = WEBHOOK_JOB_RESTARTED;
        return 0;
    default:
        return -1;
    }
}

json_t *webhook_payload(enum webhook_event e, const struct webhook_job *job, int64_t now_ns)
{
    json_t *data = json_object(), *root = json_object();
    jsonx_set_str(data, "id", job->id);
    jsonx_set_str(data, "name", job->name);
    jsonx_set_str(data, "state", job->state);
    jsonx_set_str(data, "reason", job->reason);
    jsonx_set_str(data, "message", job->message);
    jsonx_set_str(data, "url", job->url);
    jsonx_set_time(data, "time", job->time_ns);
    jsonx_set_str(root, "type", webhook_event_name(e));
    jsonx_set_time(root, "timestamp", now_ns);
    json_object_set_new(root, "data", data);
    return root;
}

/* Slack mrkdwn needs &, < and > escaped; everything else is literal. */
static void slack_escape(struct buf *out, const char *s)
{
    for (; s && *s; s++) {
        if (*s == '&')
            buf_puts(out, "&amp;");
        else if (*s == '<')
            buf_puts(out, "&lt;");
        else if (*s == '>')
            buf_puts(out, "&gt;");
        else
            buf_putc(out, *s);
    }
}

json_t *webhook_payload_slack(enum webhook_event e, const struct webhook_job *job)
{
    struct buf text = BUF_INIT, plain = BUF_INIT;
    const char *verb = (unsigned)e < WEBHOOK_EVENT_COUNT ? event_verbs[e] : "changed";
    const char *name = job->name ? job->name : job->id;
    if (job->url && *job->url) {
        buf_puts(&text, "*<");
        slack_escape(&text, job->url);
        buf_putc(&text, '|');
        slack_escape(&text, name);
        buf_puts(&text, ">*");
    } else {
        buf_putc(&text, '*');
        slack_escape(&text, name);
        buf_putc(&text, '*');
    }
    buf_printf(&text, " %s (state: ", verb);
    slack_escape(&text, job->state);
    buf_putc(&text, ')');
    if (job->reason && *job->reason) {
        buf_puts(&text, "\nreason: `");
        slack_escape(&text, job->reason);
        buf_putc(&text, '`');
    }
    if (job->message && *job->message) {
        buf_puts(&text, "\n>");
        slack_escape(&text, job->message);
    }
    buf_puts(&plain, "trainyard: job ");
    slack_escape(&plain, name);
    buf_printf(&plain, " %s", verb);
    json_t *block = json_pack("{s:s, s:{s:s, s:s}}", "type", "section", "text", "type", "mrkdwn",
                              "text", buf_cstr(&text));
    json_t *root = json_pack("{s:s, s:[o]}", "text", buf_cstr(&plain), "blocks", block);
    buf_release(&text);
    buf_release(&plain);
    return root;
}

char *webhook_body(enum webhook_event e, const struct webhook_job *job, bool slack, int64_t now_ns)
{
    json_t *p = slack ? webhook_payload_slack(e, job) : webhook_payload(e, job, now_ns);
    char *text = jsonx_dumps(p);
    json_decref(p);
    return text;
}

void webhook_new_id(char out[WEBHOOK_ID_LEN])
{
    memcpy(out, "msg_", 4);
    crypto_random_id(out + 4, WEBHOOK_ID_LEN - 5);
}

void webhook_headers_release(struct webhook_headers *h)
{
    for (size_t i = 0; i < sizeof(h->lines) / sizeof(h->lines[0]); i++)
        free(h->lines[i]);
    memset(h, 0, sizeof(*h));
}

int webhook_sign(const char *secret, const char *msg_id, int64_t ts, const char *body, size_t len,
                 struct webhook_headers *out, struct err *err)
{
    struct buf key = BUF_INIT, sig = BUF_INIT;
    memset(out, 0, sizeof(*out));
    if (strchr(msg_id, '.') || strchr(msg_id, '\n') || strchr(msg_id, '\r')) {
        err_set(err, ERR_INVALID, "webhook id must not contain '.' or a line break");
        goto fail;
    }
    if (stdwebhook_key(secret, &key, err) < 0)
        goto fail;
    stdwebhook_sign(key.data, key.len, msg_id, ts, body, len, &sig);
    out->lines[0] = xasprintf("webhook-id: %s", msg_id);
    out->lines[1] = xasprintf("webhook-timestamp: %lld", (long long)ts);
    out->lines[2] = xasprintf("webhook-signature: %s", buf_cstr(&sig));
    out->lines[3] = xstrdup("Content-Type: application/json");
    buf_release(&key);
    buf_release(&sig);
    return 0;
fail:
    buf_release(&key);
    buf_release(&sig);
    return -1;
}

enum webhook_verdict webhook_classify(long status)
{
    if (status >= 200 && status < 300)
        return WEBHOOK_DELIVERED;
    if (status == 410)
        return WEBHOOK_GONE;
    return WEBHOOK_RETRY;
}

int64_t webhook_retry_delay(const struct webhook_retry *p, int failed, uint32_t rnd,
                            int64_t retry_after_ms)
{
    int64_t base = p && p->base_ms > 0 ? p->base_ms : 5000;
    int64_t max = p && p->max_ms > 0 ? p->max_ms : 3600 * 1000;
    int attempts = p && p->max_attempts > 0 ? p->max_attempts : 12;
    if (failed < 1 || failed >= attempts)
        return -1;
    int64_t d = base;
    for (int i = 1; i < failed && d < max; i++)
        d *= 2;
    if (d > max)
        d = max;
    int64_t delay = d / 2 + (int64_t)(rnd % (uint32_t)(d / 2 + 1));
    /* A receiver's Retry-After wins when longer, within a day. */
    if (retry_after_ms > delay)
        delay = retry_after_ms < 24 * 3600 * 1000LL ? retry_after_ms : 24 * 3600 * 1000LL;
    return delay;
}
