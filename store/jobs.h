/*
 * store/jobs: jobs, their ranks, their event timeline, labels and idempotency keys.
 *
 * A job is inserted once (store_job_insert) and then only changed through store_job_update(),
 * which applies a state transition, rank changes and events in one transaction after checking
 * the transition against job/jobstate. Readers get heap copies (struct job, struct rank)
 * that they free with job_free() / ranks_free().
 */
#ifndef TY_STORE_JOBS_H
#define TY_STORE_JOBS_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/err.h"
#include "job/jobstate.h"
#include "store/store.h"

struct job {
    int64_t pk;
    char *id;
    char *name;
    char *executor;
    enum job_state state;
    char *reason;
    char *message;
    int priority;
    char *queue;
    int nranks;
    char *spec;          /* canonical JSON text */
    char *owner;         /* name of the token that submitted it, "trigger/<name>": shown */
    char *owner_id;      /* id of that token, which owns the job; "" when no token did */
    int attempt;         /* restarts of the whole job so far */
    char *desired;       /* "run", "cancel" or "hold" */
    char *first_failure; /* JSON text or NULL */
    char *exec_state;    /* executor-private JSON text */
    int64_t created_at, started_at, finished_at, updated_at;
};

struct rank {
    int rank;
    enum rank_state state;
    int pid;
    char *node;
    char *pod;
    int exit_code; /* -1: none */
    int signal;    /* 0: none */
    int restarts;
    char *reason;
    char *message;
    int64_t started_at, finished_at;
};

struct label {
    const char *key;
    const char *value;
};

/* A new job. All pointers are borrowed for the duration of the call. */
struct job_new {
    const char *id;
    const char *name;
    const char *executor;
    const char *spec; /* canonical JSON */
    int nranks;
    int gpus_per_rank;        /* resources.gpus: what the scheduler reads (store/queues.h) */
    int64_t deadline_seconds; /* deadline_seconds, the bound on its run; 0: none */
    int priority;
    const char *queue;
    const char *owner;    /* shown: the token's name, "trigger/<name>" */
    const char *owner_id; /* the token's id: who may change the job; NULL or "": none */
    bool hold;            /* suspend: stays queued until resumed */
    const struct label *labels;
    size_t nlabels;
    const char *idempotency_key; /* NULL: none */
    const char *body_hash;       /* SHA-256 hex of the request body, with idempotency_key */
    const char *request_id;      /* for the audit trail */
    int64_t now;
};

/* Outcome of an insert: a new job, or the job an earlier request with the same key created. */
struct job_inserted {
    int64_t pk;
    bool replayed;        /* idempotency key seen before with the same body */
    char replayed_id[32]; /* the earlier job's id when replayed */
};

/* Inserts the job with its pending ranks, labels, "accepted" event and idempotency key.
 * ERR_CONFLICT when the key was used with a different body. */
int store_job_insert(struct store *st, const struct job_new *jn, struct job_inserted *out,
                     struct err *err);
/* The same on the writer thread without waiting; jn and out must stay valid until done(). */
void store_job_insert_async(struct store *st, const struct job_new *jn, struct job_inserted *out,
                            store_done_fn done, void *ctx);

/* Returns the job (caller frees with job_free) or NULL with ERR_NOT_FOUND. */
struct job *store_job_get(struct store *st, const char *id, struct err *err);
struct job *store_job_get_pk(struct store *st, int64_t pk, struct err *err);
void job_free(struct job *job);

/* Ranks of a job in rank order; caller frees with ranks_free. */
int store_ranks_get(struct store *st, int64_t pk, struct rank **out, size_t *n, struct err *err);
void ranks_free(struct rank *ranks, size_t n);

/* Labels as a JSON object (new reference). */
json_t *store_job_labels(struct store *st, int64_t pk, struct err *err);

enum label_op { LABEL_EQ, LABEL_NE, LABEL_IN, LABEL_NOTIN, LABEL_EXISTS, LABEL_ABSENT };
struct label_req {
    enum label_op op;
    char *key;
    char **values; /* for EQ/NE one value; IN/NOTIN a set */
    size_t nvalues;
};

struct job_filter {
    const enum job_state *states; /* NULL: any */
    size_t nstates;
    const char *name; /* exact name, NULL: any */
    const struct label_req *labels;
    size_t nlabels;
    const char *executor; /* NULL: any */
    int64_t before_pk;    /* cursor: jobs older than this; 0 = from the newest */
    int limit;
    /* true: each job's spec member holds only its size, {"nodes","procs_per_node",
     * "resources"}, extracted by SQLite (a page then never holds whole specs in memory). */
    bool spec_size_only;
};

/* Lists jobs newest first. *out holds n jobs (caller frees each with job_free and the array with
 * free()); *next_pk is the cursor for the next page or 0 when this was the last. */
int store_job_list(struct store *st, const struct job_filter *f, struct job ***out, size_t *n,
                   int64_t *next_pk, struct err *err);

/* Fields of a rank to change: set the bit of each field given. */
enum rank_field {
    RC_STATE = 1 << 0,
    RC_PID = 1 << 1,
    RC_NODE = 1 << 2,
    RC_POD = 1 << 3,
    RC_EXIT = 1 << 4, /* exit_code and signal together */
    RC_RESTARTS = 1 << 5,
    RC_REASON = 1 << 6, /* reason and message together */
    RC_STARTED = 1 << 7,
    RC_FINISHED = 1 << 8,
};

struct rank_change {
    int rank; /* -1: every rank of the job */
    unsigned fields;
    enum rank_state state;
    int pid;
    const char *node;
    const char *pod;
    int exit_code;
    int signal;
    int restarts;
    const char *reason;
    const char *message;
    int64_t started_at;
    int64_t finished_at;
};

struct usage_run;

struct job_event {
    const char *type; /* "accepted", "running", "rank_exited", a Kubernetes reason, ... */
    const char *reason;
    const char *message;
    int rank;           /* -1: the job as a whole */
    const char *source; /* NULL: "trainyard" */
    int64_t time;       /* 0: now */
    const char *ext_id; /* an outside identity (a Kubernetes Event uid): stored once; or NULL */
};

/* One transactional change of a job. Pointers are borrowed for the call. */
struct job_update {
    int64_t pk;
    bool set_state; /* transition to state (checked with jobstate_can); adds a state event;
                     * the state it is already in: only reason and message change, no event */
    enum job_state state;
    const char *reason;
    const char *message;
    bool only_if_state; /* apply only when the current state is if_state, else ERR_CONFLICT */
    enum job_state if_state;
    bool set_attempt;
    int attempt;
    const char *desired;       /* NULL: unchanged */
    const char *first_failure; /* JSON; kept only if none is recorded yet */
    const char *exec_state;    /* JSON; NULL: unchanged */
    const struct rank_change *ranks;
    size_t nranks;
    const struct job_event *events;
    size_t nevents;
    /* usage: a rank's run that ended with this change, recorded in the same transaction
     * (store/usage.h); NULL: none. */
    const struct usage_run *usage;
    int64_t now;
};

/* Applies u atomically. ERR_NOT_FOUND for an unknown job, ERR_CONFLICT when the transition is
 * not allowed from the current state (nothing is applied then). */
int store_job_update(struct store *st, const struct job_update *u, struct err *err);

/* Events with seq > after, oldest first, at most limit, as a JSON array (new reference). */
json_t *store_events_list(struct store *st, int64_t pk, int64_t after, int limit, struct err *err);

/* Deletes a job in a terminal state and everything it owns. ERR_CONFLICT when not terminal. */
int store_job_delete(struct store *st, int64_t pk, struct err *err);

/* Jobs that may have live ranks (starting, running, restarting, cancelling), oldest first. */
int store_jobs_in_flight(struct store *st, struct job ***out, size_t *n, struct err *err);

/* Attempts of the job that ended because it was suspended or requeued (they spend none of
 * its restarts); 0 when unknown. */
int store_job_suspensions(struct store *st, int64_t pk);

/* Counts of jobs by state (index = enum job_state), for /metrics. */
int store_jobs_count_by_state(struct store *st, int64_t counts[JOB_STATE_COUNT], struct err *err);

/* Frees an array of jobs from store_job_list/store_jobs_active. */
void jobs_free(struct job **jobs, size_t n);

#endif
