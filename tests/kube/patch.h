/*
 * patch: the PATCH formats of the API server on JSON values: JSON merge patch (RFC 7386),
 * JSON patch (RFC 6902), and the approximations used for strategic merge patch and server-side
 * apply on built-in types (both applied as merge patches: lists are replaced, not merged by key).
 */
#ifndef KS_PATCH_H
#define KS_PATCH_H

#include <jansson.h>

#include "core/err.h"

/* Applies patch to *target (a private copy, modified in place or replaced). */
void patch_merge(json_t **target, const json_t *patch);
/* Applies the operations; ERR_INVALID (reason BadRequest) or ERR_VALIDATION for a failed
 * "test", with *target untouched on error. */
int patch_json(json_t **target, const json_t *ops, struct err *err);

#endif
