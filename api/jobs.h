/*
 * jobs: the one path every new job takes, whoever asks: POST /v1/jobs, POST
 * /v1/templates/{name}/jobs and jobs started by S3 triggers. The spec is validated completely,
 * stored with its idempotency key (group-committed by the store writer), and the controller is
 * woken once the job is committed.
 */
#ifndef TY_API_JOBS_H
#define TY_API_JOBS_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "api/api.h"
#include "store/jobs.h"

struct jobs_submit_opts {
    const char *owner;            /* who submits: a token's name, "trigger/<name>" */
    const char *owner_id;         /* the token's id, which owns the job; NULL: none */
    enum scope scope;             /* what the submitter may run (api/policy.h) */
    const char *token_id;         /* the submitter's token, whose cluster policy applies; NULL:
                                     none (triggers run as admin) */
    const char *manifest_at;      /* where kubernetes.manifest was in what the client sent, for
                                     the pointers of a refusal: "" when the manifest was the
                                     body; NULL: "/kubernetes/manifest" */
    const char *idempotency_key;  /* NULL: none */
    const char *idempotency_hash; /* what a reuse of the key must match; NULL: the SHA-256 of
                                     the canonical spec */
    const char *request_id;       /* for the audit trail */
};

/* The outcome, handed to done(); valid during the call only. */
struct jobs_submitted {
    int rc; /* 0, or -1 with err set */
    struct err *err;
    int64_t pk;
    const char *id; /* the new job, or the earlier one when replayed */
    bool replayed;  /* the idempotency key was used before with the same content */
};

struct submission;
typedef void (*jobs_done_fn)(void *ctx, struct submission *s, const struct jobs_submitted *r);

/* Validates doc as a job spec and prepares its insertion (opts' strings are copied; doc is
 * kept by reference, as the labels and name point into it, so its owner must not change it).
 * NULL with ERR_VALIDATION listing every bad field. Start it with jobs_submission_start(). */
struct submission *jobs_submission_new(struct api *api, const json_t *doc,
                                       const struct jobs_submit_opts *opts, struct err *err);
/* Stores s without waiting; after COMMIT (or failure) on the store writer thread it wakes the
 * controller for a new job, then calls done(ctx, s, result), which must return quickly. s stays
 * the caller's: free it with jobs_submission_free() (any thread) once done has run. */
void jobs_submission_start(struct submission *s, jobs_done_fn done, void *ctx);
/* A committed new job as GET shows it, written as JSON text into out, built from memory (the
 * spec is copied from its canonical text, not dumped again). */
void jobs_submission_write(struct buf *out, const struct submission *s);
void jobs_submission_free(struct submission *s); /* NULL is a no-op */

/* The HTTP flavour, shared by jobs_create and templates_jobs_create: doc is the job spec
 * (borrowed); Idempotency-Key and ?dry_run come from req. Answers 201 with the job and
 * Location, 200 for a replay or a dry run, or a problem. */
void jobs_submit_request(struct request *req, struct response *res, const json_t *doc);

/* A stored job as the API shows it to req's token (GET /v1/jobs/{id}, list items), with its
 * labels, progress and stall from the store (one snapshot is the caller's), its secret values
 * hidden unless the token is the owner's or an admin's; ranks NULL: none shown; spec_size: the
 * job's spec member holds only its size (struct job_filter's spec_size_only). 0, or -1 with
 * err. */
int jobs_write_stored(struct buf *out, struct request *req, const struct job *j,
                      const struct rank *ranks, size_t n, bool spec_size, struct err *err);
/* ?limit= within [1, max]; def when absent. -1 with a 400 response when bad. */
int jobs_query_limit(struct request *req, struct response *res, int def, int max, int *out);

#endif
