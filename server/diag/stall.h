/*
 * stall: hang and straggler detection as pure functions over per-rank progress timelines
 * (progress_timelines() builds them from the logs; any other source works too).
 *
 *   stalled:   the step counter of a running job has not advanced for longer than
 *              max(floor, k x p-th percentile of its own recent step-to-step intervals);
 *              until enough intervals are known (and for jobs that print no step at all, where
 *              log output is what must keep moving) the startup limit applies.
 *   straggler: a rank whose time per step (reported durations, else derived from its step
 *              timeline) is above factor x the median of all ranks over the recent window.
 *
 * Pure; thread-safe. Inputs are borrowed for the call.
 */
#ifndef TY_DIAG_STALL_H
#define TY_DIAG_STALL_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct stall_rank {
    int rank;
    const int64_t *steps; /* step counter after each advance, oldest first */
    const int64_t *times; /* when each advance was seen (ns) */
    size_t n;
    const double *durations; /* reported seconds per step, oldest first; may be NULL */
    size_t ndurations;
    int64_t last_line_ns; /* 0: the rank never printed */
    int64_t last_seq;
    const char *last_line; /* may be NULL; any bytes (cleaned for JSON) */
    size_t last_len;
};

struct stall_options {
    int64_t floor_ns;           /* the limit is never below this (default 5 min) */
    int64_t startup_ns;         /* limit before min_intervals are known (default 30 min) */
    double k;                   /* multiple of the interval percentile (default 5) */
    double percentile;          /* of recent intervals (default 0.9) */
    size_t window;              /* recent intervals per rank considered (default 20) */
    size_t min_intervals;       /* (default 3) */
    double straggler_factor;    /* (default 1.5) */
    size_t straggler_min_ranks; /* ranks with timing needed to compare (default 3) */
};

enum stall_basis {
    STALL_BASIS_NONE,   /* nothing printed yet: nothing to judge */
    STALL_BASIS_STEPS,  /* the step counter */
    STALL_BASIS_OUTPUT, /* log output (the job prints no steps) */
};

struct stall_result {
    bool stalled;
    enum stall_basis basis;
    int64_t limit_ns;
    int64_t idle_ns;          /* since the last advance (or line) */
    int64_t last_progress_ns; /* time of the last advance (or line) */
    int64_t last_step;        /* -1: none */
    int64_t interval_pct_ns;  /* the percentile used, 0 when too few intervals */
    size_t intervals;
};

struct stall_straggler {
    int rank;
    double step_s;   /* its seconds per step */
    double median_s; /* median over ranks */
    double ratio;
};

void stall_options_default(struct stall_options *o);

void stall_check(const struct stall_rank *ranks, size_t n, int64_t now_ns,
                 const struct stall_options *o, struct stall_result *out);

/* Writes up to max stragglers, slowest first; returns how many were found (<= max). */
size_t stall_stragglers(const struct stall_rank *ranks, size_t n, const struct stall_options *o,
                        struct stall_straggler *out, size_t max);

#define STALL_QUIET_MAX 64

/* The ranks to look at in a stall, into out (up to max); returns how many. A rank is quiet when
 * its last line is half the limit older than another rank's (the printers are alive: NCCL
 * retries, heartbeats). When none is: the ranks whose step is behind the others'. None:
 * nothing tells them apart. */
size_t stall_quiet(const struct stall_result *r, const struct stall_rank *ranks, size_t n, int *out,
                   size_t max);
/* One line for the job's message: which rank went quiet, its last line and when, and since
 * when no step advanced ("rank 3 went quiet: its last line, at 12:03:20Z, was \"...\"; no
 * training step since 12:03:18Z (step 1200, limit 300 s)"). Absolute times: it stays true. */
void stall_summary(const struct stall_result *r, const struct stall_rank *ranks, size_t n,
                   const int *quiet, size_t nquiet, char *out, size_t cap);

/* {"stalled", "basis", "limit_seconds", "idle_seconds", "last_progress", "last_step",
 *  "interval_seconds", "ranks": [{"rank", "last_line_time", "last_seq", "last_line"}],
 *  "stragglers": [{"rank", "step_seconds", "median_seconds", "ratio"}], "quiet": [rank...],
 *  "summary": stall_summary or null when not stalled}. New reference. */
json_t *stall_json(const struct stall_result *r, const struct stall_rank *ranks, size_t n,
                   const struct stall_straggler *s, size_t ns);

#endif
