/*
 * trigger: orchestration of hook.c, hookauth.c, sns.c and triggerrule.c for one request. It
 * keeps no state between requests; the store does the dedupe and the delivery log. Thread-safe
 * (the SNS verifier has its own lock).
 */
#include "trigger/trigger.h"

#include "core/xalloc.h"

const char *trigger_outcome_name(enum trigger_outcome o)
{
    static const char *const names[] = { "accepted",     "ignored",  "subscribe",
                                         "unsubscribed", "rejected", "retry" };
    return (unsigned)o < sizeof(names) / sizeof(names[0]) ? names[o] : "unknown";
}

void trigger_result_init(struct trigger_result *r)
{
    memset(r, 0, sizeof(*r));
    hook_init(&r->hook);
    err_init(&r->err);
}

void trigger_result_release(struct trigger_result *r)
{
    hook_release(&r->hook);
    free(r->matches);
    err_release(&r->err);
    trigger_result_init(r);
}

static int rejected_status(enum hook_sender sender, enum err_code code)
{
    switch (code) {
    case ERR_UNAUTHORIZED:
    case ERR_FORBIDDEN:
        /* SNS and MinIO: 403 (MinIO logs "check your auth token" on 403); EventBridge: 401
         * refreshes its OAuth token; anyone else: 401. */
        return sender == HOOK_SENDER_SNS || sender == HOOK_SENDER_MINIO ? 403 : 401;
    case ERR_TOO_LARGE:
        return 413;
    case ERR_INVALID:
    case ERR_VALIDATION:
        return sender == HOOK_SENDER_MINIO ? 200 : 400;
    case ERR_UPSTREAM:
    case ERR_TIMEOUT:
    case ERR_UNAVAILABLE:
    case ERR_IO:
        return 503;
    default:
        return 500;
    }
}

int trigger_status(enum hook_sender sender, enum trigger_outcome outcome, enum err_code code)
{
    switch (outcome) {
    case TRIGGER_ACCEPTED:
    case TRIGGER_IGNORED:
    case TRIGGER_SUBSCRIBE:
    case TRIGGER_UNSUBSCRIBED:
        return 200;
    case TRIGGER_RETRY:
        return 503;
    case TRIGGER_REJECTED:
        return rejected_status(sender, code);
    }
    return 500;
}

static void fail(const struct trigger *t, struct trigger_result *r)
{
    bool temporary =
        r->err.code == ERR_UPSTREAM || r->err.code == ERR_TIMEOUT || r->err.code == ERR_UNAVAILABLE;
    r->outcome = temporary ? TRIGGER_RETRY : TRIGGER_REJECTED;
    r->status = trigger_status(r->sender, r->outcome, r->err.code);
    /* Basic auth is challenged so that SNS, which sends credentials only when asked, retries
     * with them. */
    if (t->auth.mode == HOOKAUTH_BASIC && r->err.code == ERR_UNAUTHORIZED) {
        r->status = 401;
        r->challenge = true;
    }
    snprintf(r->summary, sizeof(r->summary), "%s: %s", trigger_outcome_name(r->outcome),
             r->err.msg);
}

static void match_events(const struct trigger *t, struct trigger_result *r)
{
    const struct s3event_list *l = &r->hook.events;
    const char *first_why = NULL;
    r->matches = xcalloc(l->n ? l->n : 1, sizeof(*r->matches));
    for (size_t i = 0; i < l->n; i++) {
        struct trigger_match *m = &r->matches[i];
        m->event = &l->items[i];
        m->matched = triggerrule_match(&t->rule, m->event, m->why, sizeof(m->why));
        triggerrule_dedupe_key(m->event, m->dedupe_key);
        if (m->matched)
            r->nmatched++;
        else if (!first_why)
            first_why = m->why;
    }
    r->outcome = r->nmatched ? TRIGGER_ACCEPTED : TRIGGER_IGNORED;
    if (r->nmatched)
        snprintf(r->summary, sizeof(r->summary), "accepted: %zu of %zu events matched", r->nmatched,
                 l->n);
    else
        snprintf(r->summary, sizeof(r->summary), "ignored: no event matched (%s)", first_why);
}

static void classify(const struct trigger *t, struct trigger_result *r)
{
    switch (r->hook.kind) {
    case HOOK_EVENTS:
        match_events(t, r);
        break;
    case HOOK_IGNORED:
        r->outcome = TRIGGER_IGNORED;
        snprintf(r->summary, sizeof(r->summary), "ignored: %s", r->hook.reason);
        break;
    case HOOK_SNS_SUBSCRIBE:
        r->outcome = TRIGGER_SUBSCRIBE;
        r->subscribe_url = r->hook.sns.subscribe_url;
        snprintf(r->summary, sizeof(r->summary), "subscribe: %s", r->hook.reason);
        break;
    case HOOK_SNS_UNSUBSCRIBE:
        r->outcome = TRIGGER_UNSUBSCRIBED;
        snprintf(r->summary, sizeof(r->summary), "unsubscribed: %s", r->hook.reason);
        break;
    }
    r->status = trigger_status(r->sender, r->outcome, ERR_NONE);
}

void trigger_receive(const struct trigger *t, const struct hook_request *req,
                     struct sns_verifier *v, int64_t now_ns, struct trigger_result *r)
{
    struct err *err = &r->err;
    size_t max_body = t->limits.max_body ? t->limits.max_body : 1024 * 1024;
    r->sender = t->sender != HOOK_SENDER_AUTO ? t->sender : hook_sender_guess(req);
    if (req->len > max_body) {
        err_set(err, ERR_TOO_LARGE, "body: %zu bytes is over the limit of %zu", req->len, max_body);
        goto fail;
    }
    /* Shared secrets are checked on the raw bytes before any parsing. */
    if (t->auth.mode != HOOKAUTH_SNS && hookauth_check(&t->auth, req, NULL, v, now_ns, err) < 0)
        goto fail;
    if (hook_parse(req, &t->limits, &r->hook, err) < 0)
        goto fail;
    if (t->sender == HOOK_SENDER_AUTO)
        r->sender = r->hook.sender;
    if (t->auth.mode == HOOKAUTH_SNS) {
        if (hookauth_check(&t->auth, req, &r->hook, v, now_ns, err) < 0)
            goto fail;
    } else if (r->hook.sns.doc) {
        /* Another auth mode let an SNS envelope through: its SubscribeURL is fetched and its
         * Message trusted only once the signature is verified too. */
        if (!v) {
            err_set(err, ERR_UNAUTHORIZED, "SNS message but no SNS verifier");
            goto fail;
        }
        if (sns_verify(v, &r->hook.sns, now_ns, err) < 0)
            goto fail;
    }
    classify(t, r);
    return;
fail:
    fail(t, r);
}
