/*
 * job_json: a job as the API shows it (GET /v1/jobs/{id}, list items, webhook payloads).
 */
#ifndef TY_JOB_JSON_H
#define TY_JOB_JSON_H

#include <jansson.h>
#include <stdbool.h>

#include "api/api.h"
#include "store/jobs.h"

/* The job with its spec and, when ranks is not NULL, one entry per rank. New reference. */
json_t *job_json(const struct job *job, const struct rank *ranks, size_t nranks);
/* The same with the job's spec already parsed (borrowed; job->spec is not read). */
json_t *job_json_spec(const struct job *job, json_t *spec, const struct rank *ranks, size_t nranks);
json_t *rank_json(const struct rank *r);
/* Writes a job document as JSON text with its "spec" member replaced by spec_text, the stored
 * canonical text, so that the largest part is copied rather than dumped again. Removes "spec"
 * from job. */
void job_json_write(struct buf *out, json_t *job, const char *spec_text);
/* Sets the job's "progress" (steals progress; NULL: null) and "stalled". */
void job_json_progress(json_t *job, json_t *progress, bool stalled);

/* The job named by the path's first parameter (caller frees with job_free); NULL with the
 * response set (problem+json) when there is none. */
struct job *job_from_path(struct request *req, struct response *res);

#endif
