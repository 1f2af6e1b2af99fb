/*
 * metrics_block: the packed block of metric points, encoded by metrics.c and decoded by
 * metrics_read.c. Only store/ uses it. Pure functions; thread-safe.
 */
#ifndef TY_METRICS_BLOCK_H
#define TY_METRICS_BLOCK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define BLOCK_V1  1
#define POINT_MAX 38 /* three 10-byte varints and a double */

/* A point as stored (its series is its block's). */
struct mpoint {
    int64_t step, time, seq;
    double value;
};

/* Appends p after prev (the previous point, zeros for the first) at b, which has room for
 * POINT_MAX bytes; returns the bytes written. */
size_t metrics_block_encode(unsigned char *b, const struct mpoint *p, const struct mpoint *prev);
/* Reads the point after p (the previous point, zeros for the first) at *off into p; false at
 * the end or on damage. */
bool metrics_block_decode(const unsigned char *b, size_t len, size_t *off, struct mpoint *p);
/* qsort order of points in a block: by time, then seq. */
int metrics_by_time(const void *a, const void *b);

#endif
