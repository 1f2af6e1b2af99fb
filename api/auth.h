/*
 * auth: bearer tokens and scopes. Secrets look like "ty_<40 chars>"; only their SHA-256 is
 * stored. Every route has a scope (api/routes.c); auth_check() decides before any handler runs,
 * so a 401/403 never depends on whether the object named in the path exists.
 */
#ifndef TY_AUTH_H
#define TY_AUTH_H

#include <stdint.h>

#include "api/api.h"
#include "api/routes.h"

#define TOKEN_SECRET_MAX 64

/* Fills req->who for the route, or returns -1 with ERR_UNAUTHORIZED / ERR_FORBIDDEN. */
int auth_check(struct request *req, const struct route *route, struct err *err);

/* Creates a token and writes its secret (shown once) into secret. job_pk binds a worker token to
 * one job. expires_at 0: never. id_out gets the token's public id (32 bytes). */
int auth_token_create(struct store *st, const char *name, enum scope scope, int64_t job_pk,
                      int64_t expires_at, const char *created_by, char secret[TOKEN_SECRET_MAX],
                      char id_out[32], struct err *err);

/* Ensures a token with exactly this secret exists with admin scope (for TRAINYARD_ADMIN_TOKEN /
 * --admin-token-file); created under name if missing, revoking the token an earlier start made
 * under that name from another secret (the file was rotated). A secret that was revoked stays
 * revoked: ERR_CONFLICT. */
int auth_token_ensure(struct store *st, const char *name, const char *secret, struct err *err);

#endif
