/*
 * webhook: outbound job notifications. Builds the payload for a job state change (our JSON, or
 * a Slack-compatible message), signs it with Standard Webhooks headers, tells what a response
 * status means, and computes the retry schedule. Sending is httpc_do() (core/httpc.h, which
 * also parses Retry-After); the queue, the background thread, per-job ordering and the
 * delivery log belong to the caller.
 *
 * Payload (Content-Type: application/json):
 *   {"type": "job.failed", "timestamp": "2026-11-22T02:54:37.123456Z",
 *    "data": {"id": "...", "name": "...", "state": "failed", "reason": "OOMKilled",
 *             "message": "...", "url": "https://.../jobs/...", "time": "..."}}
 */
#ifndef TY_WEBHOOK_H
#define TY_WEBHOOK_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "core/buf.h"
#include "core/err.h"
#include "job/jobstate.h"

enum webhook_event {
    WEBHOOK_JOB_ACCEPTED,
    WEBHOOK_JOB_STARTED,
    WEBHOOK_JOB_SUCCEEDED,
    WEBHOOK_JOB_FAILED,
    WEBHOOK_JOB_CANCELLED,
    WEBHOOK_JOB_STALLED,
    WEBHOOK_JOB_RESTARTED,
    WEBHOOK_TEST, /* "webhook.test", sent by POST /v1/webhooks/{id}/test */
    WEBHOOK_EVENT_COUNT
};

const char *webhook_event_name(enum webhook_event e); /* "job.failed" */
int webhook_event_parse(const char *name, enum webhook_event *out);
/* The event a job entering state `to` announces; -1 when none does (starting, cancelling).
 * Preempted is announced as job.failed (its state field still says preempted). */
int webhook_event_for_state(enum job_state to, enum webhook_event *out);

/* The job as the payload shows it; strings borrowed, reason and message may be NULL. */
struct webhook_job {
    const char *id;
    const char *name;
    const char *state;
    const char *reason;
    const char *message;
    const char *url; /* link to the job in the web page */
    int64_t time_ns; /* when the state changed */
};

/* New references; caller decrefs. now_ns stamps the message. */
json_t *webhook_payload(enum webhook_event e, const struct webhook_job *job, int64_t now_ns);
/* {"text": ..., "blocks": [...]} for a Slack incoming webhook (mrkdwn-escaped). */
json_t *webhook_payload_slack(enum webhook_event e, const struct webhook_job *job);
/* The request body for a webhook: webhook_payload(), or webhook_payload_slack() when slack,
 * as compact JSON text; caller frees. */
char *webhook_body(enum webhook_event e, const struct webhook_job *job, bool slack, int64_t now_ns);

#define WEBHOOK_ID_LEN 29 /* "msg_" + 24 characters + NUL */
/* A fresh message id; keep it for every retry of the same message. */
void webhook_new_id(char out[WEBHOOK_ID_LEN]);

/* The request headers, "Name: value" each, NULL-terminated: ready for httpc_do(). */
struct webhook_headers {
    char *lines[5];
};
void webhook_headers_release(struct webhook_headers *h);

/* Signs body for this attempt (ts = now, Unix seconds) with secret ("whsec_<base64>"):
 * webhook-id, webhook-timestamp, webhook-signature and Content-Type. ERR_INVALID when the
 * secret is malformed. Release out with webhook_headers_release(). */
int webhook_sign(const char *secret, const char *msg_id, int64_t ts, const char *body, size_t len,
                 struct webhook_headers *out, struct err *err);

enum webhook_verdict {
    WEBHOOK_DELIVERED, /* 2xx */
    WEBHOOK_RETRY,     /* anything else, or no response */
    WEBHOOK_GONE,      /* 410: the receiver asks us to stop; disable the webhook */
};
/* status 0 means no response arrived (timeout, refused, TLS). */
enum webhook_verdict webhook_classify(long status);

struct webhook_retry {
    int64_t base_ms;  /* delay after the first failure; 0: 5 s */
    int64_t max_ms;   /* cap on one delay; 0: 1 h */
    int max_attempts; /* attempts in all, the first included; 0: 12 (about 6 h) */
};

/* Delay before the next attempt after `failed` attempts have failed (failed >= 1), or -1 to
 * give up. Exponential (base * 2^(failed-1), capped) with "equal jitter": half fixed, half
 * drawn from rnd, so retries of many messages spread out but never come sooner than half the
 * step. A Retry-After (retry_after_ms >= 0) is honoured when it asks for longer. Pure. */
int64_t webhook_retry_delay(const struct webhook_retry *p, int failed, uint32_t rnd,
                            int64_t retry_after_ms);

#endif
