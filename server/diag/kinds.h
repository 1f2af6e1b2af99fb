/*
 * kinds: the failure kinds trainyard diagnoses, what each means for a retry, and the tables
 * that classify signals other than log lines: NVIDIA Xid codes, executor and Kubernetes
 * reasons, Python exception types, signal names. The log patterns are in patterns.h.
 *
 * Everything here is constant; safe from any thread.
 */
#ifndef TY_DIAG_KINDS_H
#define TY_DIAG_KINDS_H

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
    DIAG_PREFLIGHT,         /* the node failed trainyard-worker's preflight checks */
    DIAG_COMMAND_NOT_FOUND, /* the command is missing or not executable (exit 127, 126) */
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
    const char *summary; /* template (syntax in patterns.h) for findings without their own */
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

const struct diag_kind_info *kinds_info(enum diag_kind kind);
/* Kind by API name, or DIAG_KIND_NONE. */
enum diag_kind kinds_parse(const char *name);
const char *kinds_role_name(enum diag_role role);
const char *kinds_retry_name(enum diag_retry retry);
/* Resolves DIAG_RETRY_KIND to the kind's class. */
enum diag_retry kinds_retry_of(enum diag_kind kind, enum diag_retry retry);
/* The Xid row for code; unknown codes get a generic row with code -1. Never NULL. */
const struct diag_xid *kinds_xid(long code);
/* The row for an executor reason (exact match), or NULL when the reason means nothing here. */
const struct diag_reason *kinds_reason(const char *reason);
/* The row for an exception type ("torch.distributed.DistBackendError"), or NULL. */
const struct diag_exception *kinds_exception(const char *type, size_t len);
/* "SIGKILL" for 9, NULL when unknown. */
const char *kinds_signal_name(int sig);

#endif
