/*
 * store/nodes: marks on nodes that jobs should avoid. A mark is `suspect` (a failed preflight,
 * a hardware finding such as an Xid or ECC error: placement avoids the node while others are
 * free) or `bad` (an admin's verdict: never place there). Automatic sources never downgrade a
 * `bad` mark to `suspect`; an admin removes marks.
 *
 * Executors read marks when they place ranks (store_node_marks_list, store_node_mark_get).
 * A mark changes where every job runs, so it comes from a sensor (DCGM, Kubernetes node
 * conditions) or an admin. What a job says about its node (an Xid line in its log, its exit, a
 * failed preflight report from the worker inside it) is the job's own output: a submitter can
 * print a fake `NVRM: Xid 79` line. Such a finding is evidence (store_node_evidence): it marks
 * the node only when the job's owner is an admin, or once jobs of NODE_EVIDENCE_OWNERS
 * different owners (token ids) found fault with the node within NODE_EVIDENCE_WINDOW_NS.
 */
#ifndef TY_STORE_NODES_H
#define TY_STORE_NODES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/err.h"
#include "store/store.h"

struct node_mark {
    char *name;
    char *state; /* "suspect" or "bad" */
    char *reason;
    char *message;
    char *source; /* "admin", "preflight", "diagnosis", "dcgm" */
    char *job_id; /* the job whose finding caused it, "" for admins */
    char *created_by;
    int64_t created_at, updated_at;
};

/* Borrowed for the call. */
struct node_mark_new {
    const char *name;
    const char *state;
    const char *reason;
    const char *message;
    const char *source;
    const char *job_id;
    const char *created_by;
    int64_t now; /* 0: now */
};

/* Jobs of this many owners must blame a node before their evidence marks it. */
#define NODE_EVIDENCE_OWNERS 2
/* Evidence older than this no longer counts (and is deleted). */
#define NODE_EVIDENCE_WINDOW_NS (24 * 3600 * 1000000000ll)

/* A job's finding against a node; borrowed for the call. */
struct node_evidence {
    const char *node;
    const char *job_id;
    const char *owner_id; /* the job's owner: its token id; "" when no token (auth off, trigger) */
    const char *owner;    /* its name: "anonymous" with auth off, "trigger/<name>" */
    const char *reason;   /* "GPUXidError", "PreflightFailed", ... */
    const char *message;
    const char *source; /* "diagnosis" or "preflight" */
    int64_t now;        /* 0: now */
};

/* Records the evidence and, when it is enough (see the top), marks the node `suspect` with
 * source "evidence" (or e->source for an admin's job), unless the node has a mark already.
 * Jobs submitted while auth was off count as the admin's: every client was. *marked (may be
 * NULL) tells whether this call marked the node. */
int store_node_evidence(struct store *st, const struct node_evidence *e, bool *marked,
                        struct err *err);

/* Creates or updates the mark; a `bad` mark stays `bad` unless source is "admin". */
int store_node_mark(struct store *st, const struct node_mark_new *m, struct err *err);
/* Removes it; ERR_NOT_FOUND when the node has no mark. */
int store_node_unmark(struct store *st, const char *name, struct err *err);
/* The mark (caller frees with node_mark_free), or NULL with ERR_NOT_FOUND. */
struct node_mark *store_node_mark_get(struct store *st, const char *name, struct err *err);
/* Every mark by name; caller frees with node_marks_free. */
int store_node_marks_list(struct store *st, struct node_mark ***out, size_t *n, struct err *err);
void node_mark_free(struct node_mark *m);
void node_marks_free(struct node_mark **m, size_t n);

#endif
