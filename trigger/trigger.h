/*
 * trigger: the whole inbound path of POST /v1/hooks/s3/{trigger} in one call, in the order the
 * reference asks for (section 5.4): size cap, authentication on the raw bytes, parsing, SNS
 * signature, rule matching and dedupe keys, and the HTTP status this sender needs to hear.
 *
 * It does no I/O of its own except fetching an SNS signing certificate (cached) through the
 * verifier. The caller persists the delivery and the matched events (deduplicated by
 * dedupe_key), answers `status`, and submits jobs in the background.
 */
#ifndef TY_TRIGGER_H
#define TY_TRIGGER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/err.h"
#include "trigger/hook.h"
#include "trigger/hookauth.h"
#include "trigger/sns.h"
#include "trigger/triggerrule.h"

/* A trigger's inbound configuration; pointers are borrowed from the caller's config. */
struct trigger {
    enum hook_sender sender; /* expected sender; HOOK_SENDER_AUTO recognises it per request */
    struct hookauth auth;
    struct triggerrule rule;
    struct hook_limits limits;
};

enum trigger_outcome {
    TRIGGER_ACCEPTED,     /* nmatched >= 1: persist, dedupe, then submit */
    TRIGGER_IGNORED,      /* authentic, nothing to do: TestEvent, not an upload, no rule match */
    TRIGGER_SUBSCRIBE,    /* verified SNS SubscriptionConfirmation: GET subscribe_url */
    TRIGGER_UNSUBSCRIBED, /* verified SNS UnsubscribeConfirmation: record it */
    TRIGGER_REJECTED,     /* bad credentials or signature, malformed, too large: see err */
    TRIGGER_RETRY,        /* temporary failure on our side (certificate fetch): see err */
};

struct trigger_match {
    const struct s3event *event; /* borrowed from result.hook.events */
    bool matched;
    char why[160]; /* when not matched */
    char dedupe_key[TRIGGERRULE_DEDUPE_LEN];
};

struct trigger_result {
    enum trigger_outcome outcome;
    enum hook_sender sender; /* as configured, else as recognised */
    int status;              /* HTTP status to answer */
    bool challenge;          /* add `WWW-Authenticate: Basic realm="trainyard"` (basic mode) */
    struct hook hook;        /* the parsed request: events, delivery id, SNS envelope */
    struct trigger_match *matches; /* one per hook.events item */
    size_t nmatched;
    const char *subscribe_url; /* TRIGGER_SUBSCRIBE: borrowed from hook.sns */
    char summary[256];         /* one line for the delivery log */
    struct err err;            /* set for REJECTED and RETRY */
};

void trigger_result_init(struct trigger_result *r);
void trigger_result_release(struct trigger_result *r);

/* Runs the inbound path for req against t at wall-clock time now_ns. Always fills res (it has
 * no failure of its own: failures are outcomes). v verifies SNS signatures; it is required for
 * SNS messages (every non-raw SNS envelope is verified, whatever the auth mode). */
void trigger_receive(const struct trigger *t, const struct hook_request *req,
                     struct sns_verifier *v, int64_t now_ns, struct trigger_result *res);

/* The status for an outcome, per sender (reference section 5.5): 2xx for everything we accept
 * or choose to ignore; 503 for our temporary trouble (every sender retries it); for
 * rejections, what stops a pointless retry: SNS treats any 4xx as delivered, EventBridge
 * refreshes OAuth on 401 and does not retry other 4xx, and MinIO's queue retries any non-2xx
 * forever, so an authenticated but malformed MinIO body is answered 200 (and logged as
 * rejected) instead of blocking the queue. */
int trigger_status(enum hook_sender sender, enum trigger_outcome outcome, enum err_code code);

const char *trigger_outcome_name(enum trigger_outcome o);

#endif
