/*
 * progress: a job's training progress from its log lines. Each line goes through progparse;
 * progress lines become metric samples (name, step, value, rank, time) for the caller to
 * store, and update the job's state: current step, total steps, loss, throughput, seconds per
 * step and ETA. Per rank it keeps a short timeline of step advances, reported step durations
 * and the last line, which is what stall.h judges.
 *
 * Which bar is training: tqdm bars that describe themselves as something else (Map, Loading,
 * eval, ...) are ignored, and per rank a bar with a smaller total than the largest seen so far
 * (an evaluation loop inside training) does not move the step. Hugging Face dict lines carry no
 * step; their samples get the rank's current step (from its tqdm bar), or -1.
 *
 * Ownership: progress_new/progress_free. Not thread-safe: one per job, fed by one thread (or
 * under the job's lock).
 */
#ifndef TY_DIAG_PROGRESS_H
#define TY_DIAG_PROGRESS_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "server/diag/progparse.h"
#include "server/diag/stall.h"

#define PROGRESS_RING      64  /* step advances and durations kept per rank */
#define PROGRESS_LAST_LINE 240 /* bytes of the last line kept per rank */
#define PROGRESS_MAX_RANKS 65536

struct progress_sample {
    char name[PROGPARSE_NAME_MAX];
    int64_t step; /* -1: unknown */
    double value;
    int rank;
    int64_t time_ns;
    int64_t seq;
};

struct progress_state {
    int64_t step;  /* -1: unknown */
    int64_t total; /* -1: unknown */
    bool has_loss;
    double loss;
    bool has_throughput;
    double throughput;
    const char *throughput_unit; /* static: "tokens/s", "samples/s", "it/s" */
    double step_seconds;         /* recent seconds per step, -1: unknown */
    int64_t eta_ns;              /* -1: unknown */
    int64_t updated_ns;          /* time of the last progress line, 0: none */
    bool finished;               /* the framework printed its end-of-training summary */
    bool has_epoch;
    double epoch;                 /* the last "epoch" printed (Hugging Face: fractional) */
    enum progparse_format format; /* the framework's, once one printed (a tqdm bar beside
                                     Hugging Face dicts does not make it "tqdm") */
};

struct progress;

/* Caller frees with progress_free(). */
struct progress *progress_new(void);
void progress_free(struct progress *p);

/* Feeds one line of rank. Writes up to max samples into out (out may be NULL when max is 0)
 * and returns how many were written. Ranks outside [0, PROGRESS_MAX_RANKS) are ignored. */
size_t progress_feed(struct progress *p, int rank, int64_t seq, int64_t time_ns, const char *text,
                     size_t len, struct progress_sample *out, size_t max);

void progress_state(const struct progress *p, struct progress_state *out);
/* {"step", "total_steps", "epoch", "loss", "throughput", "throughput_unit", "step_seconds",
 *  "eta_seconds", "updated", "finished", "format"}; unknowns are null. New reference. */
json_t *progress_state_json(const struct progress_state *s);

/* Fills out[] (up to max) with each seen rank's timeline for stall.h; returns the count.
 * The arrays are borrowed from p until its next progress_feed() or progress_timelines(). */
size_t progress_timelines(struct progress *p, struct stall_rank *out, size_t max);
/* Ranks seen so far (highest rank + 1). */
size_t progress_nranks(const struct progress *p);

/* True for a sample that means the loss went bad: a non-finite loss, or Megatron's count of
 * NaN iterations above zero. */
bool progress_bad_loss(const struct progress_sample *s);

#endif
