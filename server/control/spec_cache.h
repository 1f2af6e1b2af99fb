/*
 * spec_cache: the parsed specs of the jobs in flight, so that the controller parses a job's spec
 * once while it runs instead of on every pass (with 1,000 running jobs that was most of a pass:
 * a spec is ~30 us to parse, a pass runs every 100 ms or sooner). Specs never change, so an entry
 * is right for as long as its job is in flight. Controller thread only.
 */
#ifndef TY_SPEC_CACHE_H
#define TY_SPEC_CACHE_H

#include <jansson.h>
#include <stdint.h>

struct spec_cache;

struct spec_cache *spec_cache_new(void);
void spec_cache_free(struct spec_cache *c);
/* The parsed spec of job pk, whose canonical text is text: borrowed until the next sweep that
 * finds it unused. NULL when text is not JSON. */
json_t *spec_cache_get(struct spec_cache *c, int64_t pk, const char *text);
/* Drops the specs not asked for since the last sweep (jobs no longer in flight). */
void spec_cache_sweep(struct spec_cache *c);

#endif
