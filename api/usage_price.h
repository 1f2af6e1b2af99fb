/*
 * usage_price: the price table an admin sets (PUT /v1/usage/prices), so that usage shows a cost:
 *
 *   {"currency": "USD",
 *    "local": {"instance_type": "g5.48xlarge", "capacity_type": "on-demand"},
 *    "prices": [{"instance_type": "p4d.24xlarge", "capacity_type": "spot", "gpu_hour": 1.31},
 *               {"instance_type": "p4d.24xlarge", "gpu_hour": 4.10},
 *               {"instance_type": "*", "gpu_hour": 2.50}]}
 *
 * A run is priced by its instance type and capacity type (the node's on Kubernetes, else the
 * spec's placement; "local" says what the local executor's machine is). The first of these
 * entries that exists prices it: the type with that capacity type, the type with none given,
 * "*" with that capacity type, "*" with none. A run with no capacity type counts as on-demand.
 * Runs no entry prices have no cost and are reported apart (unpriced GPU-seconds).
 *
 * Pure; a struct prices is read-only once made, so any thread may look up.
 */
#ifndef TY_USAGE_PRICE_H
#define TY_USAGE_PRICE_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "core/err.h"

#define PRICES_MAX 1000

struct price {
    char instance_type[64]; /* "*": any */
    char capacity_type[16]; /* "": any */
    double gpu_hour;
};

struct prices {
    char currency[8];
    char local_instance_type[64]; /* "": not said */
    char local_capacity_type[16];
    struct price *p; /* sorted by instance type, then capacity type */
    size_t n;
};

/* Checks doc completely (every bad member by JSON pointer, ERR_VALIDATION) and returns its
 * canonical form (new reference: members in this order, the currency filled in), or NULL. */
json_t *prices_check(const json_t *doc, struct err *err);
/* Fills out from a document prices_check() accepted (NULL: no table, nothing is priced).
 * Release with prices_release(). */
void prices_init(struct prices *out, const json_t *doc);
void prices_release(struct prices *p);
/* dst: a copy of src (its own array); release it with prices_release(). */
void prices_copy(struct prices *dst, const struct prices *src);

/* The price per GPU-hour of a run of executor on instance_type/capacity_type ("" unknown); false
 * when nothing prices it. */
bool prices_lookup(const struct prices *p, const char *executor, const char *instance_type,
                   const char *capacity_type, double *gpu_hour);

#endif
