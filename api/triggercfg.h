/*
 * triggercfg: a stored trigger (store/triggers.h) as the library's struct trigger
 * (trigger/trigger.h), and back: the JSON shapes of a trigger's rule and auth in the
 * API and in the store are the same, so one parser serves the hook path and saving.
 *
 *   rule: {"bucket": "datasets", "prefix": "incoming/", "suffix": ".tar",
 *          "events": ["s3:ObjectCreated:*"], "min_size": 1}
 *   auth: {"mode": "bearer|header|basic|hmac|sns", "header": "x-api-key",
 *          "topic_arns": ["arn:aws:sns:..."], "tolerance_s": 300}
 *   secrets (stored apart): ["sha256:...", "sha256-token:...", "whsec_..."]
 */
#ifndef TY_TRIGGERCFG_H
#define TY_TRIGGERCFG_H

#include <jansson.h>

#include "core/err.h"
#include "trigger/trigger.h"
#include "store/triggers.h"

/* Owns the JSON and arrays that t points into. */
struct triggercfg {
    struct trigger t;
    json_t *rule, *auth, *secrets;
    const char **events, **secret_list, **topics;
};

/* Parses rule, auth and secrets (JSON texts) into c->t. ERR_VALIDATION with a field per problem
 * (/rule/..., /auth/...), checked by triggerrule_validate and hookauth_validate. Release c with
 * triggercfg_release() whatever the result. */
int triggercfg_load(struct triggercfg *c, const char *rule, const char *auth, const char *secrets,
                    const char *sender, struct err *err);
void triggercfg_release(struct triggercfg *c);

/* An upload event as stored with its pending submission: {"bucket", "key", "size", "etag",
 * "version_id", "sequencer", "event_name", "event_time", "source", "event_id"}. New reference. */
json_t *triggercfg_event_json(const struct s3event *e);
/* The reverse; e's strings are borrowed from j. -1 when j lacks bucket or key. */
int triggercfg_event_from_json(const json_t *j, struct s3event *e);

#endif
