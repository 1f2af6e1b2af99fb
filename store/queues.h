/*
 * store/queues: the named queues an admin configures (priority, GPU quota), and what the
 * scheduler reads of waiting jobs. A job names its queue in its spec (`queue`); a queue that is
 * not configured is the default one (priority 0, no quota). Returned structs are heap copies
 * owned by the caller.
 */
#ifndef TY_STORE_QUEUES_H
#define TY_STORE_QUEUES_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "core/err.h"
#include "store/store.h"

struct queue_def {
    char *name;
    int priority;
    int64_t gpu_quota; /* -1: none */
    char *description;
    char *updated_by;
    int64_t created_at, updated_at;
};

/* Creates or replaces the queue (audited). */
int store_queue_put(struct store *st, const struct queue_def *q, const char *actor,
                    const char *request_id, struct err *err);
/* Deletes it (audited); ERR_NOT_FOUND when absent. Its jobs then wait in the default queue. */
int store_queue_delete(struct store *st, const char *name, const char *actor,
                       const char *request_id, struct err *err);
/* Every queue by name (caller frees with queues_free). */
int store_queues_list(struct store *st, struct queue_def **out, size_t *n, struct err *err);
void queues_free(struct queue_def *q, size_t n);

/* Per queue name ("default" for jobs that name none): {running_jobs, gpus_used, waiting_jobs}
 * (new reference), or NULL with err. */
json_t *store_queue_usage(struct store *st, struct err *err);

/* What the scheduler reads of a job waiting to start (queued, not suspended). */
struct waiting_job {
    int64_t pk;
    char id[32];
    char executor[16];
    char queue[64];
    int priority;
    int nranks;
    int gpus_per_rank;
    int64_t deadline_seconds; /* 0: none */
    int64_t created_at;
};
/* Every waiting job (caller frees the array). */
int store_jobs_waiting(struct store *st, struct waiting_job **out, size_t *n, struct err *err);

#endif
