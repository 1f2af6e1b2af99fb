/*
 * spec: the job spec, one for every executor. spec_check() checks a submitted document
 * completely (every bad field is reported by JSON pointer, not just the first) and writes its
 * canonical form: known fields only, in schema order, defaults filled in. That canonical JSON is
 * what the store keeps and what executors read through spec_view().
 */
#ifndef TY_SPEC_H
#define TY_SPEC_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "core/buf.h"
#include "core/err.h"

/* Limits on one spec; the daemon's come from its configuration (server/daemon/config.c). */
struct spec_limits {
    size_t max_string_bytes;
    int max_ranks;
    int max_nodes;
    int max_procs_per_node;
    int max_env;
    int max_labels;
    int max_args;
};

struct spec_options {
    const struct spec_limits *limits;
    const char *default_executor;
    bool local_enabled;
    bool kubernetes_enabled;
    int local_slots; /* a local job needing more ranks could never start */
    int local_gpus;  /* ... or more GPUs (resources.gpus x ranks) */
};

/* Borrowed views into a spec (canonical, or an input spec_check() accepted); valid while the
 * json_t lives. Absent fields read as their defaults. */
struct spec_view {
    const char *name;
    const char *image; /* NULL when absent */
    const char *executor;
    json_t *command; /* array of strings, or NULL */
    json_t *args;    /* array of strings, or NULL */
    json_t *env;     /* object, or NULL */
    int nodes;
    int procs_per_node;
    int nranks;
    json_t *resources;          /* object, or NULL */
    json_t *placement;          /* object, or NULL */
    const char *restart_policy; /* "never", "on_failure", "exit_code" */
    int max_restarts;
    json_t *restart_exit_codes;  /* array of integers, or NULL */
    json_t *restart_on;          /* failure categories that restart (array of strings), or NULL */
    int max_preemptions;         /* restarts after preemption, counted apart (default 10) */
    bool avoid_failed_nodes;     /* restarts avoid the node a failure blamed (default true) */
    int64_t backoff_seconds;     /* wait before the first restart, doubling; -1: the daemon's */
    int64_t max_backoff_seconds; /* the longest wait; -1: the daemon's */
    const char *on_stall;        /* "none", "cancel", "restart" */
    int64_t stall_after_seconds; /* floor of the stall limit; 0: the daemon's */
    int64_t startup_seconds;     /* stall limit before the step cadence is known; 0: default */
    int64_t deadline_seconds;    /* 0: none */
    const char *queue;           /* NULL when absent */
    int priority;
    json_t *checkpoint; /* object, or NULL */
    json_t *labels;     /* object, or NULL */
    bool suspend;
    json_t *kubernetes; /* object, or NULL */
};
void spec_view(const json_t *spec, struct spec_view *v);

/* Checks input completely. On success appends the canonical spec's JSON text to out, fills
 * *view from input (its pointers borrow input's values) and returns 0; otherwise returns -1
 * with ERR_VALIDATION listing each bad field (err may be NULL), and out as it was. The one
 * walker of the schema: the text is written while checking, with no canonical document between. */
int spec_check(const json_t *input, const struct spec_options *opts, struct buf *out,
               struct spec_view *view, struct err *err);

/* The canonical spec as a document (new reference; spec_check()'s text, parsed) or NULL. */
json_t *spec_validate(const json_t *input, const struct spec_options *opts, struct err *err);

#endif
