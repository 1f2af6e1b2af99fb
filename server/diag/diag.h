/*
 * diag: the per-job failure analysis. It takes every log line of every rank (diag_feed), how
 * each rank ended (diag_ending), platform events (diag_event) and stall verdicts (diag_stall),
 * keeps findings (deduplicated per rank and signature, with the sequence numbers of their
 * evidence lines), and answers "which rank failed first and why" (diag_summarize, diag_json).
 *
 * First failure: findings are causes, symptoms, consequences or context (kinds.h). The
 * answer is the earliest cause; within a short burst of the same rank the most specific cause
 * (an OOM beats the NCCL error it triggered); a platform cause (preemption, eviction, node
 * lost, deadline) within the cascade window beats application errors it provoked; causes
 * logged long before the first rank ended (history_ns) are left out. Without any cause: the
 * earliest symptom (torchrun's own "Root Cause" first), else the consequences: for
 * NCCL timeouts, the ranks that did not report the timeout (or lag in collective number) are
 * named as the likely hung ranks.
 *
 * Lines prefixed by torchrun ("[rank5]: ...", "[default5]:...") are attributed to that
 * process rank, and each (rank, process rank) pair gets its own traceback state.
 *
 * Typical use on the ingest path (one struct diag per job, created when the job starts):
 *     struct progress_sample s[16];
 *     size_t n = diag_feed(d, &(struct diag_line){ rank, seq, time_ns, text, len }, s, 16);
 *     ... store the n samples ...
 * then diag_ending() per rank as executors report exits, and diag_json() for the API.
 *
 * Ownership: diag_new/diag_free. Not thread-safe: feed one job from one thread or under the
 * job's lock. The pattern tables behind it are shared and immutable.
 */
#ifndef TY_DIAG_DIAG_H
#define TY_DIAG_DIAG_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "server/diag/ending.h"
#include "server/diag/patterns.h"
#include "server/diag/progress.h"
#include "server/diag/stall.h"

#define DIAG_EVIDENCE_MAX 8
#define DIAG_RANKS_MAX    64

struct diag_options {
    int world_size;      /* process ranks in the job when known; 0: judge from what is seen */
    int64_t cascade_ns;  /* after the first cause, how long other failures count as its cascade
                            (default 120 s: Kubernetes' grace period plus clock skew) */
    int64_t burst_ns;    /* one rank's findings this close belong to one failure (default 30 s) */
    int64_t history_ns;  /* a cause this long before the first rank ended is history (a handled
                            exception), not the failure (default 1 h, above NCCL timeouts) */
    size_t max_findings; /* kept per job (default 256); later ones are counted as dropped */
};

struct diag_line {
    int rank;    /* trainyard rank (process or pod) */
    int64_t seq; /* the job's line sequence number */
    int64_t time_ns;
    const char *text; /* need not be NUL-terminated */
    size_t len;
};

struct diag_summary {
    bool found; /* false: nothing went wrong (so far) */
    enum diag_kind kind;
    enum diag_role role;
    enum diag_retry retry; /* resolved: never DIAG_RETRY_KIND */
    bool node_fault;
    int rank;         /* the rank a person means: process rank when known, -1: the job */
    int log_rank;     /* trainyard rank whose log holds the evidence, -1: none */
    const char *node; /* borrowed until the next call on the diag; may be NULL */
    const char *pod;
    int64_t time_ns;
    const char *pattern; /* pattern id, or the source: "exit", "event", "progress", "stall" */
    int64_t evidence[DIAG_EVIDENCE_MAX];
    size_t nevidence;
    bool has_exit;
    int exit_code, signal;
    int ranks[DIAG_RANKS_MAX]; /* ranks that failed with the same kind, ascending */
    size_t nranks;
    int suspects[DIAG_RANKS_MAX]; /* NCCL timeouts: the ranks that probably hung */
    size_t nsuspects;
    bool every_rank; /* NCCL: every rank reported it alike, so the logs blame none (rank -1) */
    char text[512];  /* the one-line summary */
};

struct diag;

void diag_options_default(struct diag_options *o);

/* opts NULL: defaults. Caller frees with diag_free(). */
struct diag *diag_new(const struct diag_options *opts);
void diag_free(struct diag *d);

/* Where a rank runs; findings name this node and pod unless their evidence names another. */
void diag_rank_info(struct diag *d, int rank, const char *pod, const char *node);

/* One log line. Writes up to max progress samples to out (NULL if max is 0); returns their
 * number. */
size_t diag_feed(struct diag *d, const struct diag_line *line, struct progress_sample *out,
                 size_t max);
void diag_ending(struct diag *d, const struct ending *e);
void diag_event(struct diag *d, const struct ending_event *ev);
/* Records a stall verdict (from stall_check) as a finding when r->stalled. */
void diag_stall(struct diag *d, const struct stall_result *r);

void diag_summarize(struct diag *d, struct diag_summary *out);
/* {"summary": {...} or null, "findings": [...], "findings_dropped": N}. New reference. */
json_t *diag_json(struct diag *d);
json_t *diag_summary_json(const struct diag_summary *s);

/* The job's progress tracker (state, timelines for stall.h); owned by d. */
struct progress *diag_progress(struct diag *d);
size_t diag_nfindings(const struct diag *d);

#endif
