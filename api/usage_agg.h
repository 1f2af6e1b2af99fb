/*
 * usage_agg: GET /v1/usage's answer from the store's rows (store_usage_scan): the rows of each
 * group asked for (owner, queue, executor, instance type, capacity type, UTC day, one label)
 * summed, filtered, priced (usage_price.h) and totalled. Pure: no store, no HTTP, so that the
 * arithmetic is tested on its own (tests/unit/test_usage.c).
 *
 * Ownership: struct usage_query borrows its filter strings; a struct usage_agg is the
 * caller's (usage_agg_free) and borrows the query and the prices while it lives.
 */
#ifndef TY_USAGE_AGG_H
#define TY_USAGE_AGG_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "api/usage_price.h"
#include "core/err.h"
#include "store/usage.h"

#define USAGE_MAX_DIMS  4
#define USAGE_MAX_RANGE (3660LL * USAGE_NS_PER_DAY) /* ten years */

enum usage_dim {
    USAGE_BY_OWNER,
    USAGE_BY_QUEUE,
    USAGE_BY_EXECUTOR,
    USAGE_BY_INSTANCE_TYPE,
    USAGE_BY_CAPACITY_TYPE,
    USAGE_BY_DAY,
    USAGE_BY_LABEL,
};

struct usage_query {
    int64_t from, to; /* [from, to) */
    enum usage_dim dims[USAGE_MAX_DIMS];
    size_t ndims;
    /* The one label key of the query: grouped by (USAGE_BY_LABEL) or filtered on. "": none. */
    char label_key[64];
    const char *label_value; /* filter: only jobs with label_key = label_value; NULL: none */
    const char *owner, *queue, *executor; /* filters; NULL: any ("default": the default queue) */
    size_t limit;                         /* groups in the answer, the biggest first */
};

/* group_by: "owner,label:team,day" (at most USAGE_MAX_DIMS, no repeats). ERR_INVALID. */
int usage_query_group_by(struct usage_query *q, const char *group_by, struct err *err);
/* label: "KEY=VALUE" (value borrowed from text); a second label key than group_by's is refused
 * (the daily sums are kept per label, not per combination). ERR_INVALID. */
int usage_query_label(struct usage_query *q, const char *label, struct err *err);
/* Whether the query needs neither owner nor queue (not grouped, not filtered by them): the
 * store may then read its sums per class (store/usage.h's by_class). */
bool usage_query_by_class(const struct usage_query *q);
/* A point in time: RFC 3339, a date (YYYY-MM-DD, its midnight UTC), "now", or a duration
 * before now ("7d", "-7d", "36h", "90m"). -1 when it is none of these. */
int usage_time_parse(const char *text, int64_t now, int64_t *ns);

struct usage_agg;
struct usage_agg *usage_agg_new(const struct usage_query *q, const struct prices *p);
void usage_agg_free(struct usage_agg *a);
/* Adds one row of the scan; a usage_row_fn (ctx is the struct usage_agg). */
int usage_agg_add(void *agg, const struct usage_row *row, struct err *err);
/* {"from", "to", "group_by", "currency", "groups": [...], "total", "truncated"}: new
 * reference. Groups by day come in day order, others the most GPU-seconds first. */
json_t *usage_agg_json(struct usage_agg *a);

/* The figures of one group or total as JSON members of o ("gpu_seconds", "gpu_hours",
 * "rank_seconds", "runs", "jobs", "cost", "unpriced_gpu_seconds"); cost null without prices.
 * Shared with the job's usage (api/usage.c). */
struct usage_sum {
    double gpu_seconds, rank_seconds, cost, unpriced_gpu_seconds;
    int64_t runs, jobs;
};
void usage_sum_add(struct usage_sum *s, const struct prices *p, const char *executor,
                   const char *instance_type, const char *capacity_type,
                   const struct usage_figures *f);
void usage_sum_json(json_t *o, const struct usage_sum *s, const struct prices *p);

#endif
