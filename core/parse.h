/*
 * parse: strict conversions of text from flags, query strings and config into numbers. Each
 * returns 0, or -1 when the whole text is not a value in range (no silent truncation).
 */
#ifndef TY_PARSE_H
#define TY_PARSE_H

#include <stdbool.h>
#include <stdint.h>

int parse_int64(const char *text, int64_t min, int64_t max, int64_t *out);
int parse_int(const char *text, int min, int max, int *out);
/* "true"/"false"/"1"/"0"/"yes"/"no"/"on"/"off". */
int parse_bool(const char *text, bool *out);
/* A duration: "250ms", "30s", "5m", "2h", "7d", or a bare number of seconds. Out in ns. */
int parse_duration(const char *text, int64_t *ns);
/* A byte size: "512", "64Ki", "64Mi", "1Gi", "1G", "10MB". */
int parse_bytes(const char *text, int64_t *bytes);
/* A Kubernetes resource quantity ("500m", "2", "16Gi", "1e3", "1.5"), in thousandths of a unit,
 * so CPU "500m" is 500 and memory "1Ki" is 1024000. */
int parse_quantity(const char *text, int64_t *milli);
/* A list of integers and ranges, "0,3-5": calls add(lo, hi, ctx) per item. */
int parse_ranges(const char *text, int64_t min, int64_t max,
                 int (*add)(int64_t lo, int64_t hi, void *ctx), void *ctx);

#endif
