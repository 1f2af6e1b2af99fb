/*
 * traceback: the per-stream state machine that follows a multi-line report across log lines:
 *   - a Python traceback: "Traceback (most recent call last):", frames ("  File ..., line N,
 *     in f" + code line), then the exception line "pkg.SomeError: message";
 *   - torchrun's ChildFailedError report: the "Failures:" and "Root Cause (first observed
 *     failure):" entries with time, host, rank, exitcode and the failing rank's traceback.
 * The caller feeds the lines of one stream (one process) in order and learns when a report is
 * complete. Lines that do not belong to an open report (output of another process interleaved
 * into the same stream) are handed back.
 *
 * Ownership: struct traceback is heap (traceback_new/traceback_free) because it is large and
 * only needed while a report is open. Not thread-safe; one per stream.
 */
#ifndef TY_DIAG_TRACEBACK_H
#define TY_DIAG_TRACEBACK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "server/diag/classify.h"

#define TRACEBACK_HEAD     3 /* first frames kept (the user's entry point) */
#define TRACEBACK_TAIL     8 /* last frames kept (where it failed) */
#define TRACEBACK_FRAMES   (TRACEBACK_HEAD + TRACEBACK_TAIL)
#define TRACEBACK_FAILURES 16

struct traceback_frame {
    char file[160]; /* the path's tail when longer */
    int line;
    char func[64];
    char code[160];
};

struct traceback_exc {
    char type[96]; /* "torch.OutOfMemoryError" */
    char message[320];
    /* A re-raise wrapper's own message ("Caught KeyError in DataLoader worker process 3."):
     * type and message are then the original exception's, and the frames run from the
     * wrapper's outermost to the original's innermost. "" when there was none. */
    char context[160];
    struct traceback_frame frames[TRACEBACK_FRAMES]; /* in call order, outermost first */
    size_t nframes;
    size_t omitted;              /* frames dropped between the head and the tail */
    int64_t first_seq, last_seq; /* the "Traceback" line and the exception line */
};

/* One entry of a torchrun ChildFailedError report. */
struct traceback_failure {
    bool root;      /* under "Root Cause (first observed failure)" */
    int rank;       /* global rank, -1 unknown */
    int local_rank; /* -1 unknown */
    bool has_exit;
    int exitcode; /* negative: killed by signal -exitcode */
    char host[128];
    char time[40];
    /* The most specific pattern found in the entry's own traceback text, if any. */
    const struct diag_pattern *pat;
    char detail[CLASSIFY_DETAIL_MAX];
    int64_t seq; /* the entry's "[N]:" line */
};

struct traceback_report {
    struct traceback_failure failures[TRACEBACK_FAILURES];
    size_t n;
    int64_t first_seq, last_seq;
};

enum traceback_event {
    TRACEBACK_NOT_MINE,         /* the line is not part of the open report: classify it normally */
    TRACEBACK_CONSUMED,         /* the line belonged to the report, which is still open */
    TRACEBACK_EXCEPTION,        /* the exception line closed a traceback: see traceback_exc() */
    TRACEBACK_TORCHRUN,         /* a torchrun report is complete: see traceback_report() */
    TRACEBACK_EXCEPTION_BEFORE, /* the line before closed a traceback (see traceback_exc());
                                   this one is not part of it: classify it normally too */
};

struct traceback;

/* Caller frees with traceback_free(). */
struct traceback *traceback_new(void);
void traceback_free(struct traceback *tb);

/* Opens a Python traceback at the "Traceback (most recent call last):" line. */
void traceback_start(struct traceback *tb, int64_t seq);
/* Opens a torchrun report at its "...ChildFailedError" line. */
void traceback_start_torchrun(struct traceback *tb, int64_t seq);
bool traceback_active(const struct traceback *tb);

/* Feeds the next line of the stream (prefix such as "[rank3]: " already removed). */
enum traceback_event traceback_feed(struct traceback *tb, int64_t seq, const char *text,
                                    size_t len);

/* Valid after TRACEBACK_EXCEPTION / TRACEBACK_TORCHRUN until the next call; borrowed. */
const struct traceback_exc *traceback_exc(const struct traceback *tb);
const struct traceback_report *traceback_report(const struct traceback *tb);

/* Splits "pkg.Error: message" into type and message lengths; false if the line does not look
 * like a Python exception line. */
bool traceback_parse_exception(const char *text, size_t len, size_t *type_len, size_t *msg_off);

#endif
