/*
 * ratelimit: a token bucket per API token (or per client address for anonymous calls), so one
 * runaway CI loop cannot starve everyone else. Over the limit: 429 with Retry-After.
 */
#ifndef TY_RATELIMIT_H
#define TY_RATELIMIT_H

#include "api/api.h"

/* Creates the limiter state for api (rate and burst from api->limits). */
void ratelimit_init(struct api *api);
void ratelimit_release(struct api *api);
/* Takes one request from the caller's bucket; -1 with ERR_RATE_LIMITED when empty. */
int ratelimit_take(struct request *req, struct err *err);

#endif
