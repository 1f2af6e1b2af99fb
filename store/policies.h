/*
 * store/policies: cluster policies (api/policy.h): each a name, its grants as JSON text (the API
 * checks them before they get here) and the API tokens it governs. A token is governed by one
 * policy at most; the policy named "default" governs every other non-admin token.
 * Readers get heap copies that they free with policy_def_free() / policy_defs_free().
 */
#ifndef TY_STORE_POLICIES_H
#define TY_STORE_POLICIES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/err.h"
#include "store/store.h"

struct policy_def {
    char *name;
    char *grants;  /* a JSON object's text */
    char **tokens; /* the ids of the tokens it governs, sorted */
    size_t ntokens;
    char *created_by;
    int64_t created_at, updated_at;
};

/* A new or replaced policy; pointers are borrowed for the call. */
struct policy_put {
    const char *name;
    const char *grants;
    const char *const *tokens; /* token ids */
    size_t ntokens;
    const char *actor;      /* for created_by and the audit trail */
    const char *request_id; /* for the audit trail */
    int64_t now;
    bool created; /* out: there was no policy of that name */
};

/* Creates or replaces the policy and the set of tokens it governs, in one write audited as
 * "policy.create" or "policy.update". ERR_VALIDATION naming /tokens/N when that id is no API
 * token's (worker tokens are not); ERR_CONFLICT when another policy governs it. */
int store_policy_put(struct store *st, struct policy_put *p, struct err *err);
/* Deletes it (its tokens fall back to "default"); ERR_NOT_FOUND. Audits "policy.delete". */
int store_policy_delete(struct store *st, const char *name, const char *actor,
                        const char *request_id, struct err *err);

/* The policy (caller frees with policy_def_free) or NULL with ERR_NOT_FOUND. */
struct policy_def *store_policy_get(struct store *st, const char *name, struct err *err);
/* Every policy by name; caller frees with policy_defs_free. */
int store_policy_list(struct store *st, struct policy_def ***out, size_t *n, struct err *err);
/* The policy that governs token_id: the one that names it, else "default" (name and grants
 * only; caller frees). NULL without an error when neither exists, NULL with err on failure. */
struct policy_def *store_policy_for_token(struct store *st, const char *token_id, struct err *err);
void policy_def_free(struct policy_def *p);
void policy_defs_free(struct policy_def **p, size_t n);

#endif
