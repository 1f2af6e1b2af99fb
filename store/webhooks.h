/*
 * store/webhooks: outbound webhooks and their outbox. Every message is written to the outbox
 * before it is sent and stays there with its attempts, so a message survives kill -9 and the
 * delivery log is the outbox itself. Messages of one job to one webhook go out in outbox order:
 * store_outbox_due() returns only the oldest pending message of each (webhook, job).
 *
 * Job events become messages once: webhook_cursors keeps, per job, the last event sequence
 * number turned into messages, and is moved in the same write that adds them.
 *
 * Readers get heap copies (free functions below) or new JSON references.
 */
#ifndef TY_STORE_WEBHOOKS_H
#define TY_STORE_WEBHOOKS_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/err.h"
#include "store/store.h"

struct webhook_def {
    int64_t pk;
    char *id; /* whk_... */
    char *name;
    char *url;
    char *events; /* JSON array text of event names */
    char *secret; /* whsec_...; needed to sign, so stored as is */
    char *format; /* standard | slack */
    bool enabled;
    char *disabled_reason;
    char *created_by;
    int64_t created_at, updated_at;
};

/* Pointers are borrowed for the call. */
struct webhook_put {
    const char *id;
    const char *name;
    const char *url;
    const char *events;
    const char *secret; /* update: NULL keeps the stored one */
    const char *format;
    bool enabled;
    const char *actor;
    const char *request_id;
    int64_t now;
};

/* Each audits webhook.create / update / delete in the same write. ERR_NOT_FOUND by id. */
int store_webhook_insert(struct store *st, const struct webhook_put *w, struct err *err);
int store_webhook_update(struct store *st, const struct webhook_put *w, struct err *err);
int store_webhook_delete(struct store *st, const char *id, const char *actor,
                         const char *request_id, struct err *err);
/* By id or name; caller frees with webhook_def_free; NULL with ERR_NOT_FOUND. */
struct webhook_def *store_webhook_get(struct store *st, const char *id_or_name, struct err *err);
/* Newest first; only enabled ones when enabled_only. Caller frees with webhook_defs_free. */
int store_webhook_list(struct store *st, bool enabled_only, struct webhook_def ***out, size_t *n,
                       struct err *err);
void webhook_def_free(struct webhook_def *w);
void webhook_defs_free(struct webhook_def **w, size_t n);

/* A message to queue; pointers are borrowed for the call. */
struct outbox_new {
    int64_t webhook_pk;
    const char *msg_id;
    const char *event;
    const char *job_id; /* "" for messages of no job (tests) */
    const char *body;
};
/* Queues n messages (due now) and, when job_pk > 0, moves the job's cursor to seq; one write. */
int store_outbox_add(struct store *st, const struct outbox_new *m, size_t n, int64_t job_pk,
                     int64_t seq, int64_t now, struct err *err);
/* The job's cursor (0 when none). */
int store_webhook_cursor(struct store *st, int64_t job_pk, int64_t *seq, struct err *err);
/* Jobs with events past their cursor, changed since `since` or still running (a restart's
 * catch-up). *pks is malloc'd; caller frees. */
int store_webhook_behind(struct store *st, int64_t since, int64_t **pks, size_t *n,
                         struct err *err);

/* A message ready to send, with what sending needs. */
struct outbox_msg {
    int64_t pk;
    int64_t webhook_pk;
    char *url;
    char *secret;
    char *msg_id;
    char *event;
    char *job_id;
    char *body;
    int attempts; /* failed so far */
};
/* The oldest pending message of each (enabled webhook, job) due at now, at most limit, soonest
 * first. Caller frees with outbox_msgs_free. */
int store_outbox_due(struct store *st, int64_t now, int limit, struct outbox_msg ***out, size_t *n,
                     struct err *err);
void outbox_msgs_free(struct outbox_msg **m, size_t n); /* NULL entries are skipped */
void outbox_msg_free(struct outbox_msg *m);

/* When the next message becomes due (0: none pending). */
int store_outbox_next_at(struct store *st, int64_t *next_at, struct err *err);

/* One attempt's outcome. state: "delivered", "failed" (gave up or gone) or "pending" (retry at
 * next_at). disable: also disable the webhook with reason (410 Gone). */
struct outbox_result {
    int64_t pk;
    int64_t webhook_pk;
    int attempt; /* 1 for the first */
    const char *state;
    long status; /* 0: no response */
    const char *error;
    int64_t duration_ms;
    int64_t next_at;
    int64_t now;
    bool disable;
    const char *reason;
};
int store_outbox_result(struct store *st, const struct outbox_result *r, struct err *err);

/* A webhook's messages newest first (pk < before when before > 0), each with its attempts.
 * JSON array, new reference. */
json_t *store_outbox_list(struct store *st, int64_t webhook_pk, int64_t before, int limit,
                          struct err *err);

/* Drops delivered and failed messages finished before `before`. */
int store_outbox_prune(struct store *st, int64_t before, struct err *err);

#endif
