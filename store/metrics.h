/*
 * store/metrics: training metrics as time series per job, metric name and rank: the samples the
 * progress parser takes from log lines (loss, learning rate, throughput...) and those workers
 * report in heartbeats. A point is (time, step, value). Each append stores one packed block per
 * series, so the ingest path pays a few row inserts per flush, not one per sample. A point that
 * comes back (the same line fed again after a restart, a heartbeat retried) is shown once. Long
 * ranges are downsampled on read into buckets of equal time (mean, min, max, count, last step).
 */
#ifndef TY_STORE_METRICS_H
#define TY_STORE_METRICS_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "core/err.h"
#include "store/store.h"

#define METRIC_NAME_MAX 64

struct metric_point {
    const char *name; /* at most METRIC_NAME_MAX - 1 bytes are kept */
    int rank;
    int64_t step; /* -1: unknown */
    double value; /* NaN and infinities are kept */
    int64_t time; /* ns */
    int64_t seq;  /* the log line it came from, 0 when reported */
};

/* Appends points (copied before returning) on the writer thread without waiting. */
void store_metrics_append_async(struct store *st, int64_t job_pk, const struct metric_point *p,
                                size_t n);
/* The same, waiting for COMMIT. */
int store_metrics_append(struct store *st, int64_t job_pk, const struct metric_point *p, size_t n,
                         struct err *err);

struct metric_query {
    const char *name; /* NULL: every metric */
    int rank;         /* -1: every rank */
    int64_t since;    /* time >= since; 0: no bound */
    int64_t until;    /* time < until; 0: no bound */
    int max_points;   /* per series; longer series are downsampled to this many buckets */
};

/* {"series": [{"name", "rank", "count", "downsampled", "points": [{"time", "step", "value"}
 * (downsampled: plus "min", "max", "count")]}]}, series by name then rank, points oldest first.
 * A series with more than max_points stored points in the range is downsampled (then a point
 * stored twice counts twice in its bucket). Non-finite values are the strings "nan", "inf",
 * "-inf"; a bucket's mean, min and max leave NaN out. New reference. */
json_t *store_metrics_query(struct store *st, int64_t job_pk, const struct metric_query *q,
                            struct err *err);

/* Log lines stored and dropped by retention, over every job (for /metrics). */
int store_log_totals(struct store *st, int64_t *lines, int64_t *dropped, struct err *err);

#endif
