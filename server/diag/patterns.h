/*
 * patterns: the log signatures of failures in distributed GPU training, as ONE table
 * (patterns.c): per row a stable id, the failure kind, its role (cause, symptom, consequence,
 * context), its retry class, a literal anchor (plus an optional second literal) that the
 * classifier finds, what to extract (detail text, a number such as an Xid code), a one-line
 * summary template, and an example line that the unit test checks is classified by that row.
 * Adding a failure signature means adding a row (and its example); no code changes. The kinds
 * themselves and the non-log tables (Xid codes, Kubernetes reasons, exception types) are in
 * kinds.h.
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

#include "server/diag/kinds.h"

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

/* The log pattern table, in precedence order (a lower index wins when several match). */
const struct diag_pattern *patterns_table(size_t *count);

#endif
