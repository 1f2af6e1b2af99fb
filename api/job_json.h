/*
 * job_json: a job as the API shows it (201, GET /v1/jobs/{id}, list items).
 */
#ifndef TY_JOB_JSON_H
#define TY_JOB_JSON_H

#include <jansson.h>
#include <stdbool.h>

#include "api/api.h"
#include "store/jobs.h"

/* What a job's JSON shows besides its row. */
struct job_view {
    const json_t *labels;     /* NULL: none */
    const struct rank *ranks; /* NULL: no "ranks" member (list items) */
    size_t nranks;
    const json_t *progress; /* from the diagnosis; NULL: null */
    bool stalled;
    const char *stall_summary; /* a stalled running job's reason is "Stalled" and its message
                                  this (which rank went quiet, its last line); NULL: none */
    bool spec_size;            /* the job's spec member holds only its size: shown as "spec_size" */
    /* A queued job: why it waits, from the scheduler (NULL: the stored reason and message). */
    const struct job_wait_view *wait;
    const char *usage; /* JSON text (api/usage.h); NULL: no "usage" member (list items) */
};

struct job_wait_view {
    char reason[32];
    char message[256];
    int position; /* in its queue, 1-based */
};

/* Fills w for a queued job the scheduler saw wait; false otherwise (w then unused). */
bool job_wait_get(struct api *api, const struct job *j, struct job_wait_view *w);
/* Writes the job as the API shows it; "spec" is the stored canonical text, copied, never parsed
 * and dumped again. What the stored row says is corrected where the job's state says more: a
 * stalled job's reason, a resumed job's "Suspended", the progress of a job that ended (no ETA;
 * finished once it succeeded). */
void job_json_write(struct buf *out, const struct job *job, const struct job_view *view);

/* The job named by the path's first parameter (caller frees with job_free); NULL with the
 * response set (problem+json) when there is none. */
struct job *job_from_path(struct request *req, struct response *res);

#endif
