/*
 * store/findings: what the diagnosis of each job attempt found, kept after the daemon forgets
 * the job: the summary (first failure), every finding, the training progress, the stall
 * verdict, per-rank health and the restart decision. Rows are keyed by (job, attempt); a
 * finding by a stable key (pattern, kind, rank, first evidence line), so saving the same
 * diagnosis again, or a partial one after a daemon restart, updates rows instead of losing or
 * duplicating them.
 *
 * Everything crosses this interface as JSON (the shapes of docs/diagnosis.md): the store does
 * not know the diagnosis library.
 */
#ifndef TY_STORE_FINDINGS_H
#define TY_STORE_FINDINGS_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "core/err.h"
#include "store/store.h"

/* What to save for one attempt. A NULL member (or stalled < 0) keeps what is stored. All
 * pointers are borrowed for the call: store_diag_save() serialises them before returning. */
struct diag_save {
    int64_t job_pk;
    int attempt;
    const json_t *diagnosis; /* {"summary", "findings": [...], "findings_dropped"} */
    const json_t *progress;
    int stalled; /* 0, 1, or -1: keep */
    const json_t *stall;
    const json_t *health;
    const json_t *decision;
    int64_t now; /* 0: now */
};

/* Saves on the writer thread; waits for COMMIT when wait is true. Without waiting, errors are
 * dropped (the next save repeats the state). */
int store_diag_save(struct store *st, const struct diag_save *s, bool wait, struct err *err);

/* One attempt (-1: the latest): {"attempt", "summary", "findings", "findings_dropped",
 * "progress", "stalled", "stall", "health", "decision", "updated_at"}. ERR_NOT_FOUND when
 * nothing was saved. New reference. */
json_t *store_diag_get(struct store *st, int64_t job_pk, int attempt, struct err *err);

/* Every attempt, oldest first: [{"attempt", "summary", "decision"}]. New reference. */
json_t *store_diag_attempts(struct store *st, int64_t job_pk, struct err *err);

/* The latest attempt's progress (new reference, or NULL when none) and stalled flag. */
int store_diag_progress(struct store *st, int64_t job_pk, json_t **progress, bool *stalled,
                        struct err *err);

/* Findings that name node since `since` (ns), newest first, at most limit:
 * [{"job_id", "attempt", "kind", "time", "summary"}]. New reference. */
json_t *store_findings_on_node(struct store *st, const char *node, int64_t since, int limit,
                               struct err *err);

#endif
