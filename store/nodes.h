/*
 * store/nodes: marks on nodes that jobs should avoid. A mark is `suspect` (a failed preflight,
 * a hardware finding such as an Xid or ECC error: placement avoids the node while others are
 * free) or `bad` (an admin's verdict: never place there). Automatic sources never downgrade a
 * `bad` mark to `suspect`; an admin removes marks.
 *
 * Executors read marks when they place ranks (store_node_marks_list, store_node_mark_get);
 * the daemon writes them from preflight reports and diagnoses; admins through the API.
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
