/*
 * http_target: the request target ("/v1/jobs/ID/logs?rank=0&q=loss") as the client sent it,
 * split into a decoded path and decoded query parameters, with bounds. The HTTP layer parses it
 * itself rather than take libmicrohttpd's view: MHD 0.9.75 decodes the path in place, so "%00"
 * ends it early ("/v1/jobs/ID%00/cancel" was served as "/v1/jobs/ID"), and it keeps query
 * parameters in its per-connection pool, whose exhaustion (~450 parameters) left a request with
 * no answer at all.
 *
 * Decoding follows MHD's: "%XX" is the byte, an invalid escape stays as it is, '+' is a space in
 * the query (not in the path); a parameter without '=' has no value (NULL). A path may not hold a
 * NUL or control character once decoded; a query value may not hold a NUL.
 *
 * Pure and thread-safe. Ownership: the target owns every string it points to
 * (http_target_release frees them).
 */
#ifndef TY_HTTP_TARGET_H
#define TY_HTTP_TARGET_H

#include <stddef.h>

#include "core/err.h"

struct http_target {
    char *path;    /* decoded, NUL-terminated */
    char **keys;   /* nparams decoded keys */
    char **values; /* their values; NULL for a parameter without '=' */
    size_t nparams;
    char *storage; /* the strings above point into it */
};

struct http_target_limits {
    size_t max_bytes;  /* of the target as sent */
    size_t max_params; /* query parameters */
};

/* Parses len bytes of a target into t (which must be zeroed or released). 0, or -1 with
 * ERR_INVALID and err->reason naming the limit passed ("max_bytes", "max_params") or the
 * problem ("control", "nul"). t is left empty on failure. */
int http_target_parse(struct http_target *t, const char *raw, size_t len,
                      const struct http_target_limits *lim, struct err *err);
/* The value of the first parameter named key; NULL when absent or without a value. */
const char *http_target_query(const struct http_target *t, const char *key);
void http_target_release(struct http_target *t);

#endif
