/*
 * jobs_list: GET /v1/jobs, a page of jobs newest first, filtered by state, name, executor and a
 * label selector (api/selector.c). Every bound a client could stretch is a setting: the page's
 * size (--max-list, and --max-page-bytes, past which it ends early with a cursor), the
 * selector's terms (--max-selector-terms); items carry the job's size, not its spec, unless
 * ?include=spec asks (a page of whole specs was a gigabyte for a read token). Reads one store
 * snapshot; runs on HTTP threads.
 */
#include "api/handlers.h"
#include "api/jobs.h"
#include "api/selector.h"
#include "core/parse.h"
#include "core/xalloc.h"

/* Parses ?state=a,b into states; -1 with a 400 response when a name is unknown. */
static int parse_states(struct request *req, struct response *res, enum job_state *states,
                        size_t *n)
{
    const char *text = request_query(req, "state");
    *n = 0;
    if (!text)
        return 0;
    char *copy = xstrdup(text), *p = copy;
    int rc = 0;
    while (p && rc == 0) {
        char *comma = strchr(p, ',');
        if (comma)
            *comma = '\0';
        if (*n >= JOB_STATE_COUNT || jobstate_parse(p, &states[*n]) < 0) {
            problem(req, res, ERR_INVALID,
                    "state '%s' is unknown; use queued, starting, running, restarting, "
                    "cancelling, succeeded, failed, cancelled or preempted",
                    p);
            rc = -1;
        }
        (*n)++;
        p = comma ? comma + 1 : NULL;
    }
    free(copy);
    return rc;
}

static int parse_cursor(struct request *req, struct response *res, int64_t *pk)
{
    const char *text = request_query(req, "cursor");
    *pk = 0;
    if (text && (text[0] != 'c' || parse_int64(text + 1, 1, INT64_MAX, pk) < 0)) {
        problem(req, res, ERR_INVALID, "cursor is not one this API returned");
        return -1;
    }
    return 0;
}

/* ?include=spec: list items carry whole specs (else only their size, spec_size). */
static int parse_include(struct request *req, struct response *res, bool *size_only)
{
    const char *text = request_query(req, "include");
    *size_only = !text || strcmp(text, "spec") != 0;
    if (text && *size_only) {
        problem(req, res, ERR_INVALID, "include must be 'spec' (or absent)");
        return -1;
    }
    return 0;
}

/* ?selector=, within --max-selector-terms; -1 with the response set when bad. */
static int parse_selector(struct request *req, struct response *res, struct job_filter *f,
                          struct label_req **labels)
{
    const char *text = request_query(req, "selector");
    int max = req->api->limits.max_selector_terms;
    struct err err;
    err_init(&err);
    int rc = text ? selector_parse(text, max > 0 ? (size_t)max : 32, labels, &f->nlabels, &err) : 0;
    if (rc < 0 && strcmp(err.reason, "max_terms") == 0)
        problem_respond_limit(req, res, &err, "max-selector-terms", max);
    else if (rc < 0)
        problem_respond(req, res, &err);
    f->labels = *labels;
    err_release(&err);
    return rc;
}

/* Writes the page's items; a page ends early, at an item's end, once it holds --max-page-bytes
 * (*next becomes the cursor after the last item written). */
static int write_page(struct buf *out, struct request *req, struct job **jobs, size_t n,
                      bool spec_size, int64_t *next, struct err *err)
{
    struct api *api = req->api;
    size_t max = api->limits.max_page_bytes;
    for (size_t i = 0; i < n; i++) {
        if (i)
            buf_putc(out, ',');
        if (jobs_write_stored(out, req, jobs[i], NULL, 0, spec_size, err) < 0)
            return -1;
        if (max && out->len >= max && i + 1 < n) {
            *next = jobs[i]->pk;
            break;
        }
    }
    return 0;
}

void jobs_list(struct request *req, struct response *res)
{
    enum job_state states[JOB_STATE_COUNT];
    struct job_filter f = { .states = states };
    struct label_req *labels = NULL;
    if (parse_states(req, res, states, &f.nstates) < 0 ||
        jobs_query_limit(req, res, 50, req->api->limits.max_list_limit, &f.limit) < 0 ||
        parse_cursor(req, res, &f.before_pk) < 0 ||
        parse_include(req, res, &f.spec_size_only) < 0 || parse_selector(req, res, &f, &labels) < 0)
        return;
    f.name = request_query(req, "name");
    f.executor = request_query(req, "executor");
    struct err err;
    err_init(&err);
    struct job **jobs = NULL;
    size_t n = 0;
    int64_t next = 0;
    /* One snapshot for the page and each item's labels and progress. */
    if (store_snapshot_begin(req->api->store, &err) < 0)
        goto fail;
    if (store_job_list(req->api->store, &f, &jobs, &n, &next, &err) < 0) {
        store_snapshot_end(req->api->store);
        goto fail;
    }
    struct buf *out = response_json_body(res, 200);
    buf_puts(out, "{\"items\":[");
    write_page(out, req, jobs, n, f.spec_size_only, &next, &err);
    store_snapshot_end(req->api->store);
    jobs_free(jobs, n);
    if (err_is_set(&err))
        goto fail;
    buf_puts(out, "],\"next_cursor\":");
    if (next)
        buf_printf(out, "\"c%lld\"}\n", (long long)next);
    else
        buf_puts(out, "null}\n");
    selector_free(labels, f.nlabels);
    return;
fail:
    problem_respond(req, res, &err);
    err_release(&err);
    selector_free(labels, f.nlabels);
}
