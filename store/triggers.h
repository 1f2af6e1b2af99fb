/*
 * store/triggers: S3 triggers and what their hook receives: the delivery log, the dedupe of
 * delivery ids and of object versions, the pending job submissions, and SNS subscriptions.
 *
 * A delivery is recorded in one write: the log row, the delivery id (transport dedupe), one
 * trigger_objects row per matched object version (unique per trigger: the object dedupe, and the
 * durable "job to submit"), and an SNS confirmation to make. So whatever the hook answered 2xx
 * for survives kill -9, and the trigger loop finds it again at start.
 *
 * Readers get heap copies (free functions below) or new JSON references.
 */
#ifndef TY_STORE_TRIGGERS_H
#define TY_STORE_TRIGGERS_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/err.h"
#include "store/store.h"

struct trigger_def {
    int64_t pk;
    char *id; /* trg_...: the hook URL's last path segment */
    char *name;
    char *template_name;
    char *values;  /* JSON object text: template values */
    char *rule;    /* JSON object text */
    char *sender;  /* auto, s3, sns, eventbridge, minio */
    char *auth;    /* JSON object text without secrets: mode, header, topic_arns, tolerance_s */
    char *secrets; /* JSON array text: sha256 digests, or whsec_ secrets for hmac */
    bool enabled;
    char *created_by;
    int64_t created_at, updated_at;
};

/* A new or changed trigger; pointers are borrowed for the call. */
struct trigger_put {
    const char *id;
    const char *name;
    const char *template_name;
    const char *values;
    const char *rule;
    const char *sender;
    const char *auth;
    const char *secrets; /* update: NULL keeps the stored ones */
    bool enabled;
    const char *actor;      /* created_by, audit */
    const char *request_id; /* audit */
    int64_t now;
};

/* Inserts; ERR_CONFLICT when the name is taken, ERR_VALIDATION (/template) when the template
 * does not exist. Audits "trigger.create" in the same write. */
int store_trigger_insert(struct store *st, const struct trigger_put *t, struct err *err);
/* Replaces everything but id, name and (when t->secrets is NULL) the secrets, by t->id.
 * ERR_NOT_FOUND, or ERR_VALIDATION for an unknown template. Audits "trigger.update". */
int store_trigger_update(struct store *st, const struct trigger_put *t, struct err *err);
/* Deletes a trigger and everything it received. Audits "trigger.delete". */
int store_trigger_delete(struct store *st, const char *id, const char *actor,
                         const char *request_id, struct err *err);

/* By id or name; caller frees with trigger_def_free; NULL with ERR_NOT_FOUND. */
struct trigger_def *store_trigger_get(struct store *st, const char *id_or_name, struct err *err);
/* By name; caller frees with trigger_defs_free. */
int store_trigger_list(struct store *st, struct trigger_def ***out, size_t *n, struct err *err);
void trigger_def_free(struct trigger_def *t);
void trigger_defs_free(struct trigger_def **t, size_t n);

/* A matched upload event of a delivery. */
struct delivery_object {
    const char *dedupe_key; /* triggerrule_dedupe_key() */
    const char *event;      /* the event as JSON text (rendered into the template later) */
    bool is_new;            /* out: first sight of this object version: a job will follow */
};

/* One hook request as received; pointers are borrowed until the write is done. */
struct delivery_new {
    int64_t trigger_pk;
    int64_t received_at;
    const char *sender;
    const char *delivery_id; /* NULL or "": none */
    const char *outcome;     /* trigger_outcome_name(), or "ignored" for a disabled trigger */
    const char *summary;
    const char *error;
    const char *events; /* JSON array text for the log */
    const char *request_id;
    int status;
    bool verified;
    bool dedupe; /* authentic: check and remember delivery_id, store the objects */
    struct delivery_object *objects;
    size_t nobjects;
    const char *sns_topic;         /* with one of the two below */
    const char *sns_subscribe_url; /* a verified SubscriptionConfirmation: confirm it */
    bool sns_unsubscribed;         /* a verified UnsubscribeConfirmation */
};

struct delivery_recorded {
    int64_t pk;
    bool duplicate; /* delivery id seen before, or every object already known */
    size_t nnew;    /* objects stored as pending submissions */
    char outcome[16];
};

/* Records d (see the top). done(ctx, rc, err) runs on the writer thread after COMMIT; d and out
 * must stay valid until then. */
void store_delivery_record_async(struct store *st, const struct delivery_new *d,
                                 struct delivery_recorded *out, store_done_fn done, void *ctx);
int store_delivery_record(struct store *st, const struct delivery_new *d,
                          struct delivery_recorded *out, struct err *err);

/* A trigger's deliveries newest first (pk < before when before > 0), each with its events and,
 * for matched ones, the object's state and job. JSON array, new reference. */
json_t *store_delivery_list(struct store *st, int64_t trigger_pk, int64_t before, int limit,
                            struct err *err);

/* A pending job submission. */
struct trigger_object {
    int64_t pk;
    int64_t trigger_pk;
    char *trigger_id;
    char *trigger_name;
    char *dedupe_key;
    char *event; /* JSON text */
    int attempts;
};

/* Pending submissions due at now, oldest first; caller frees with trigger_objects_free. */
int store_trigger_objects_due(struct store *st, int64_t now, int limit,
                              struct trigger_object ***out, size_t *n, struct err *err);
void trigger_objects_free(struct trigger_object **o, size_t n);

/* The outcome of a submission: state "submitted" with job_id, "failed" with error, or
 * "pending" with error and next_at (a temporary failure, tried again then). */
struct trigger_object_result {
    int64_t pk;
    const char *state;
    const char *job_id;
    const char *error;
    int64_t next_at;
    int64_t now;
};
int store_trigger_objects_done(struct store *st, const struct trigger_object_result *r, size_t n,
                               struct err *err);
/* Pending submissions in all (metrics, tests). */
int store_trigger_objects_pending(struct store *st, int64_t *count, struct err *err);

/* An SNS subscription waiting for its SubscribeURL to be fetched. */
struct sns_pending {
    int64_t trigger_pk;
    char *topic_arn;
    char *subscribe_url;
    int attempts;
};
int store_sns_due(struct store *st, int64_t now, int limit, struct sns_pending ***out, size_t *n,
                  struct err *err);
void sns_pendings_free(struct sns_pending **p, size_t n);
/* state "confirmed" (subscription_arn), "failed" (error) or "pending" (error, next_at). */
int store_sns_result(struct store *st, int64_t trigger_pk, const char *topic_arn, const char *state,
                     const char *subscription_arn, const char *error, int64_t next_at, int64_t now,
                     struct err *err);
/* A trigger's SNS subscriptions as a JSON array (new reference). */
json_t *store_sns_list(struct store *st, int64_t trigger_pk, struct err *err);

/* Forgets delivery ids first seen before seen_before and log rows received before
 * log_before (object rows are kept: they are the dedupe). */
int store_triggers_prune(struct store *st, int64_t seen_before, int64_t log_before,
                         struct err *err);

#endif
