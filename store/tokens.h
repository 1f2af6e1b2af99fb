/*
 * store/tokens: API tokens (only their SHA-256 is stored) and the audit trail.
 */
#ifndef TY_STORE_TOKENS_H
#define TY_STORE_TOKENS_H

#include <jansson.h>
#include <stdint.h>

#include "core/err.h"
#include "store/store.h"

struct token {
    int64_t pk;
    char *id;
    char *name;
    char *scope;
    char *job_id; /* worker tokens: the job's public id; else NULL */
    char *created_by;
    int64_t created_at, expires_at, revoked_at, last_used_at;
};

struct token_new {
    const char *id;
    const char *name;
    const char *hash; /* SHA-256 hex of the secret */
    const char *scope;
    int64_t job_pk; /* 0: not a worker token */
    int64_t expires_at;
    const char *created_by;
    int64_t now;
    /* The token given to the daemon at start (--admin-token-file, TRAINYARD_ADMIN_TOKEN) has
     * changed: the active token of that name that the daemon made ("bootstrap") is revoked in
     * the same transaction, so that rotating the file rotates the token. */
    bool replaces_bootstrap;
};

/* ERR_CONFLICT when an active token already has that name (one made by the daemon's start
 * when replaces_bootstrap: that one is revoked instead). */
int store_token_insert(struct store *st, const struct token_new *t, struct err *err);
/* The token with that hash (revoked or not), or NULL with ERR_NOT_FOUND. Caller frees. */
struct token *store_token_by_hash(struct store *st, const char *hash, struct err *err);
/* Tokens that are not worker tokens, newest first; caller frees with tokens_free. */
int store_token_list(struct store *st, struct token ***out, size_t *n, struct err *err);
/* Changes whenever this process commits a write that can end a token; caches of lookups
 * compare it (a change made by another process is not counted). */
uint64_t store_tokens_generation(struct store *st);
/* Revokes by id or name. ERR_NOT_FOUND when no active token matches. */
int store_token_revoke(struct store *st, const char *id_or_name, int64_t now, struct err *err);
/* Number of active (unrevoked, unexpired) tokens of any kind but worker. */
int store_token_count_active(struct store *st, int64_t now, int64_t *count, struct err *err);
/* Revokes every worker token bound to a job (when the job ends). */
int store_tokens_revoke_job(struct store *st, int64_t job_pk, int64_t now, struct err *err);
/* Records a use in memory; store_tokens_flush() writes the latest times in one transaction. */
void store_token_touch(struct store *st, int64_t pk, int64_t now);
int store_tokens_flush(struct store *st, struct err *err);
void token_free(struct token *t);
void tokens_free(struct token **t, size_t n);

/* Audit trail: who did what to which object, when. */
struct audit_entry {
    const char *actor;
    const char *action; /* "job.create", "job.cancel", "token.revoke", ... */
    const char *target; /* "job/<id>", "token/<id>" */
    const char *detail; /* JSON object text, or NULL */
    const char *request_id;
    int64_t time;
};
int store_audit_add(struct store *st, const struct audit_entry *e, struct err *err);
/* Entries newest first, optionally only for one target; JSON array (new reference). */
json_t *store_audit_list(struct store *st, const char *target, int64_t before, int limit,
                         struct err *err);

#endif
