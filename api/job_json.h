/*
 * job_json: a job as the API shows it (GET /v1/jobs/{id}, list items, webhook payloads).
 */
#ifndef TY_JOB_JSON_H
#define TY_JOB_JSON_H

#include <jansson.h>
#include <stdbool.h>

#include "api/api.h"
#include "store/jobs.h"

/* The job as the API shows it, all but its spec (job_json_write adds the stored text): labels
 * borrowed (NULL: none), one entry per rank when ranks is not NULL. New reference. */
json_t *job_json_base(const struct job *job, json_t *labels, const struct rank *ranks,
                      size_t nranks);
json_t *rank_json(const struct rank *r);
/* Writes job_json_base's document as JSON text with "spec" set to spec_text, the stored
 * canonical text: copied, never parsed and dumped again. */
void job_json_write(struct buf *out, const json_t *job, const char *spec_text);
/* Sets the job's "progress" (steals progress; NULL: null) and "stalled". */
void job_json_progress(json_t *job, json_t *progress, bool stalled);

/* The job named by the path's first parameter (caller frees with job_free); NULL with the
 * response set (problem+json) when there is none. */
struct job *job_from_path(struct request *req, struct response *res);

#endif
