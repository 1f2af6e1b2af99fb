/*
 * patterns: what trainyard knows about failures of distributed GPU training, as data. Four
 * tables, all in patterns.c and nowhere else:
 *   - kinds: every failure kind with its API name, job reason, retry class and priority;
 *   - log patterns: literal anchors (plus an optional second literal) that classify a log line,
 *     with a one-line summary template and an example line the unit test checks;
 *   - GPU Xid codes, Kubernetes/executor reasons and Python exception types.
 * Adding a failure signature means adding a row here (and its example); no code changes.
 *
 * Summary templates: {who} ("rank 5", "the job"), {node}, {detail}, {num}, {text} are
 * replaced; a [bracketed] part is dropped when a placeholder inside it is empty.
 *
 * Everything here is constant; safe from any thread.
 */
#ifndef TY_DIAG_PATTERNS_H
#define TY_DIAG_PATTERNS_H

#include <stdbool.h>
#include <stddef.h>

enum diag_kind {
    DIAG_KIND_NONE,
    DIAG_CUDA_OOM,
    DIAG_HOST_OOM,
    DIAG_NCCL_ERROR,
    DIAG_NCCL_TIMEOUT,
    DIAG_XID,
    DIAG_ECC,
    DIAG_CUDA_ERROR,
    DIAG_PYTHON_EXCEPTION,
    DIAG_ASSERTION,
    DIAG_SEGFAULT,
    DIAG_BUS_ERROR,
    DIAG_NAN_LOSS,
    DIAG_DISK_FULL,
    DIAG_RENDEZVOUS,
    DIAG_PREEMPTION,
    DIAG_EVICTION,
    DIAG_NODE_LOST,
    DIAG_IMAGE_PULL,
    DIAG_SCHEDULING,
    DIAG_LAUNCH_ERROR,
    DIAG_DEADLINE,
    DIAG_HANG,
    DIAG_KILLED,
    DIAG_TERMINATED,
    DIAG_EXIT,
    DIAG_KIND_COUNT
};

/* How a finding bears on "why did the job fail". The first failure is chosen among causes,
 * then symptoms, then consequences (see diag.c). */
enum diag_role {
    DIAG_CAUSE,       /* explains a failure by itself: OOM, Xid, exception in user code */
    DIAG_SYMPTOM,     /* a rank failed, but not why: exit code 1, SIGKILL, torchrun summary */
    DIAG_CONSEQUENCE, /* typically follows another rank's failure: NCCL errors, SIGTERM */
    DIAG_INFO,        /* context only, never a failure: NCCL WARN in a healthy job */
};

enum diag_retry {
    DIAG_RETRY_KIND,    /* in a pattern or reason row: take the kind's class */
    DIAG_RETRYABLE,     /* the same job may well succeed again: preemption, node fault */
    DIAG_DETERMINISTIC, /* will fail again the same way: CUDA OOM, a bug in user code */
    DIAG_RETRY_UNKNOWN,
};

struct diag_kind_info {
    const char *name;   /* API name: "cuda_oom" */
    const char *reason; /* the job's `reason` when this is the cause: "CudaOutOfMemory" */
    enum diag_retry retry;
    int priority;        /* among one rank's causes in one burst, the higher explains more */
    bool node_fault;     /* the node itself is suspect: avoid it on restart */
    bool infra;          /* the platform ended the rank (preemption...); outranks app errors */
    const char *summary; /* template for findings without a pattern (endings, events) */
};

/* Pattern flags. */
#define PAT_NOCASE    0x01u /* anchor (and `also`) compared without ASCII case */
#define PAT_WHOLE     0x02u /* the whole line (blanks trimmed) must equal the anchor */
#define PAT_TRACEBACK 0x04u /* starts a Python traceback (traceback.c) */
#define PAT_TORCHRUN  0x08u /* starts a torchrun ChildFailedError report (traceback.c) */
#define PAT_XID       0x10u /* num is an NVIDIA Xid code: role and retry from the Xid table */
#define PAT_RANKMARK  0x20u /* the line names its process rank as "Rank N]" (NCCL watchdog) */
#define PAT_EXITCODE  0x40u /* num is an exit code; negative means killed by signal -num */

struct diag_pattern {
    const char *id; /* stable, shown in findings as "pattern" */
    enum diag_kind kind;
    enum diag_role role;
    enum diag_retry retry; /* DIAG_RETRY_KIND: the kind's */
    unsigned flags;
    const char *anchor; /* literal the prefilter finds; at least 4 bytes */
    const char *also;   /* NULL, or a literal that must occur anywhere in the line too */
    const char *after;  /* NULL, or detail = text after this literal ... */
    const char *until;  /* ... up to the first of these "|"-separated literals (or 120 bytes) */
    const char *num;    /* NULL, or a literal followed by an integer: Xid code, SeqNum */
    long code;          /* num when `num` is NULL (0 = none) */
    bool node_fault;    /* this signature implicates the node even if its kind does not */
    const char *summary;
    const char *example; /* a line this pattern (and no earlier one) must match */
};

struct diag_xid {
    int code;
    enum diag_role role;
    enum diag_retry retry;
    bool node_fault;
    const char *text;
};

/* Reasons from the executors: container/pod status reasons and Kubernetes event reasons. */
struct diag_reason {
    const char *reason;
    enum diag_kind kind;
    enum diag_role role;
    const char *text;
};

/* Python exception types, matched on the last dotted component ("torch.OutOfMemoryError"). */
struct diag_exception {
    const char *type;
    enum diag_kind kind;
    enum diag_role role;
};

const struct diag_kind_info *patterns_kind(enum diag_kind kind);
/* Kind by API name, or DIAG_KIND_NONE. */
enum diag_kind patterns_kind_parse(const char *name);
const char *patterns_role_name(enum diag_role role);
const char *patterns_retry_name(enum diag_retry retry);
/* Resolves DIAG_RETRY_KIND to the kind's class. */
enum diag_retry patterns_retry_of(enum diag_kind kind, enum diag_retry retry);

/* The log pattern table, in precedence order (a lower index wins when several match). */
const struct diag_pattern *patterns_table(size_t *count);
/* The Xid row for code; unknown codes get a generic row with code -1. Never NULL. */
const struct diag_xid *patterns_xid(long code);
/* The row for an executor reason (exact match), or NULL when the reason means nothing here. */
const struct diag_reason *patterns_reason(const char *reason);
/* The row for an exception type ("torch.distributed.DistBackendError"), or NULL. */
const struct diag_exception *patterns_exception(const char *type, size_t len);
/* "SIGKILL" for 9, NULL when unknown. */
const char *patterns_signal_name(int sig);

#endif
