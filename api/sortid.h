/*
 * sortid: job identifiers that sort by creation time. Twelve characters: a letter and seven
 * base-36 digits of the millisecond since 2020-01-01 UTC (good until 2084), then four of a
 * counter that starts at random each millisecond and counts up within it. Sorted ids put new
 * rows at the end of every index keyed by them, instead of on a random page each: a burst of
 * submissions then rewrites a few pages per commit, not one page per job. They are valid
 * Kubernetes names (DNS-1035 labels). Unique within a process (ids strictly increase); across
 * restarts, unless the clock went back and a counter repeated. Thread-safe.
 */
#ifndef TY_SORTID_H
#define TY_SORTID_H

#include <stdint.h>

#define SORTID_LEN 12

/* Writes a new id and its terminating NUL into out. */
void sortid_new(char out[SORTID_LEN + 1]);
/* The creation time (Unix ms) an id encodes, or -1 when text is not a sortid. */
int64_t sortid_time_ms(const char *text);

#endif
