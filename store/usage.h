/*
 * store/usage: GPU-seconds and rank-seconds, kept after the jobs they came from are deleted.
 *
 * What is counted is each run of a rank (a process locally, a container on Kubernetes) from
 * the executor's own start and end times, times the GPUs the rank held. A run is recorded in the
 * transaction that records the rank's end (struct job_update's `usage`), so a rank's end and its
 * usage are on disk together or not at all; recording the same run again (the same job,
 * attempt, rank and start) replaces what it counted, so a report seen twice counts once and a
 * corrected end time corrects the figures.
 *
 * Tables (store/migrations.c, 10): the groups usage is summed by (owner, queue, executor,
 * instance type, capacity type), each run split by UTC day, each day's sums per group and per
 * group and label, the same per class (a group without owner and queue), and running totals
 * for /metrics. A query over a long range reads the daily
 * sums; the days at its edges and runs still going are read run by run, so figures are exact to
 * the nanosecond for any range.
 *
 * Threads: any thread; reads on the caller's connection (in one snapshot), writes on the store's
 * writer. Everything handed out is the caller's or borrowed for the length of a callback.
 */
#ifndef TY_STORE_USAGE_H
#define TY_STORE_USAGE_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/err.h"
#include "job/spec.h"
#include "store/store.h"

#define USAGE_NS_PER_DAY (86400LL * 1000000000LL)
/* A run longer than this (a clock that jumped, a start time of 1970) is counted from this long
 * before its end, so that one bad report cannot write years of rows. */
#define USAGE_MAX_RUN_NS (400 * USAGE_NS_PER_DAY)

/* One run of one rank, recorded with the rank's end. Strings borrowed for the call; NULL or ""
 * when unknown. */
struct usage_run {
    int attempt;
    int rank;
    int64_t started_at;  /* the run's start; 0: the stored rank's started_at */
    int64_t finished_at; /* the run's end */
    double gpus;         /* GPUs the rank held (usage_rank_gpus) */
    const char *node;
    const char *instance_type; /* the node's, else the spec's placement */
    const char *capacity_type; /* on-demand, spot, reserved */
};

/* GPUs one rank of the spec holds: resources.gpus per rank for the local executor (each rank
 * is handed its own); on Kubernetes resources.gpus is the pod's limit and a pod runs
 * procs_per_node ranks, so each counts its share. 0 without resources.gpus. */
double usage_rank_gpus(const struct spec_view *v);

/* Fills run for rank's run that ended at finished_at, from the spec and what the executor knew
 * (started_at 0, instance_type/capacity_type NULL when it did not); pointers borrowed from
 * the arguments. */
void usage_run_init(struct usage_run *run, const struct spec_view *v, int attempt, int rank,
                    int64_t started_at, int64_t finished_at, const char *node,
                    const char *instance_type, const char *capacity_type);

/* What usage is grouped by; strings borrowed (from the store's read or the caller). */
struct usage_group {
    const char *owner;
    const char *queue; /* "" for the default queue */
    const char *executor;
    const char *instance_type; /* "" unknown */
    const char *capacity_type; /* "" unknown */
};

struct usage_figures {
    double gpu_seconds;
    double rank_seconds;
    int64_t runs; /* rank runs that ended in the range */
    int64_t jobs; /* jobs whose first recorded run ended in the range */
};

/* One part of a query's answer: a group's figures on one UTC day. label is the value of the
 * query's label key for those jobs (NULL: they do not have it; always NULL without a key).
 * running: the part of runs still going (counted up to now). Borrowed for the call. */
struct usage_row {
    int64_t day; /* days since 1970-01-01 UTC */
    const struct usage_group *group;
    const char *label;
    bool running;
    struct usage_figures f;
};
/* 0 to go on, -1 with err to stop the scan. */
typedef int (*usage_row_fn)(void *ctx, const struct usage_row *row, struct err *err);

struct usage_scan {
    int64_t from, to;      /* [from, to), ns */
    int64_t now;           /* runs still going count up to min(now, to) */
    const char *label_key; /* NULL: rows carry no label */
    /* Only rows of jobs with label_key = label_value are needed (others may come too); NULL:
     * every row. */
    const char *label_value;
    /* Neither owner nor queue is asked for: rows may come per class (executor, instance type,
     * capacity type: owner and queue "") instead of per group. */
    bool by_class;
};

/* Calls fn with every row of usage in [from, to): daily sums for whole days, runs for the
 * edge days and those still going. One snapshot. -1 with err (fn's or the store's). */
int store_usage_scan(struct store *st, const struct usage_scan *q, usage_row_fn fn, void *ctx,
                     struct err *err);

/* One run of one job as recorded (or going on now: running, finished_at = now). */
struct usage_job_run {
    int attempt, rank;
    int64_t started_at, finished_at;
    int64_t counted_ns; /* what was counted (less than the run for one over USAGE_MAX_RUN_NS) */
    double gpus;
    bool running;
    char node[254];
    char instance_type[64];
    char capacity_type[16];
};
/* The runs of job id (deleted or not), by attempt, rank and start, then the ranks running now
 * while the job is stored. executor (32 bytes) gets the job's executor; when it already names
 * it (a job the caller holds), a job with no runs is not looked up. *runs: caller frees.
 * ERR_NOT_FOUND when the job is neither stored nor has usage. */
int store_usage_job(struct store *st, const char *id, int64_t now, struct usage_job_run **runs,
                    size_t *n, char executor[32], struct err *err);

/* Running totals since the database was made (they never decrease but for a run recorded
 * again with an earlier end), for /metrics: fn once per queue, executor, instance type and
 * capacity type (owner ""). */
typedef void (*usage_total_fn)(void *ctx, const struct usage_group *g,
                               const struct usage_figures *f);
int store_usage_totals(struct store *st, usage_total_fn fn, void *ctx, struct err *err);

/* When the price table was last set (0: never, or removed): a reader keeps its parsed table
 * while this stays the same. 0 with err on failure. */
int64_t store_usage_prices_stamp(struct store *st, struct err *err);
/* The price table (an admin's JSON document, checked by the API) or NULL when none was set
 * (err unset); new reference. */
json_t *store_usage_prices_get(struct store *st, struct err *err);
/* Replaces it (doc NULL: removes it), audited as "prices.update" by actor. */
int store_usage_prices_set(struct store *st, const json_t *doc, const char *actor,
                           const char *request_id, struct err *err);

#endif
