/*
 * jobs: the job routes, and jobs_submission_*() (api/jobs.h), the one path that creates jobs.
 * Handlers validate and record; they never start, stop or wait for processes or pods:
 * api->daemon.job_changed() wakes the daemon's reconcile loop, which does. Job creation is
 * group-committed: the handler defers, the store writer commits a batch of submissions at once
 * and completes each request after COMMIT; the body is built on an HTTP thread (res->finish).
 */
#include "api/jobs.h"
#include "api/policy.h"

#include "api/handlers.h"
#include "api/apimetrics.h"
#include "api/job_json.h"
#include "api/manifest.h"
#include "api/manifest_submit.h"
#include "job/secretenv.h"
#include "api/usage.h"
#include "job/spec.h"
#include "core/clock.h"
#include "core/crypto.h"
#include "core/jsonx.h"
#include "core/parse.h"
#include "api/sortid.h"
#include "core/xalloc.h"
#include "store/findings.h"
#include "store/tokens.h"

/* A submission waiting for its commit. Owns everything job_new points to. */
struct submission {
    struct api *api;
    json_t *doc;        /* the spec as submitted and checked; the views below point into it */
    json_t *labels_doc; /* doc's labels object, or NULL */
    char *spec_text;    /* canonical */
    char id[SORTID_LEN + 1];
    char hash[SHA256_HEX_LEN];
    char *idem_key, *idem_hash, *owner, *owner_id, *request_id;
    struct label *labels;
    struct job_new jn;
    struct job_inserted out;
    jobs_done_fn done;
    void *ctx;
};

void jobs_submission_free(struct submission *s)
{
    if (!s)
        return;
    json_decref(s->doc);
    free(s->spec_text);
    free(s->idem_key);
    free(s->idem_hash);
    free(s->owner);
    free(s->owner_id);
    free(s->request_id);
    free(s->labels);
    free(s);
}

static void notify_changed(struct api *api, int64_t pk)
{
    if (api->daemon.job_changed)
        api->daemon.job_changed(api->daemon.ctx, pk);
}

/* The response for a new job, built from what was just committed (no read back). */
void jobs_submission_write(struct buf *out, const struct submission *s)
{
    struct job j = { .pk = s->out.pk,
                     .id = (char *)s->id,
                     .name = (char *)s->jn.name,
                     .executor = (char *)s->jn.executor,
                     .state = JOB_QUEUED,
                     .reason = s->jn.hold ? "Suspended" : "Submitted",
                     .message = "",
                     .priority = s->jn.priority,
                     .queue = (char *)s->jn.queue,
                     .nranks = s->jn.nranks,
                     .spec = s->spec_text,
                     .owner = (char *)s->jn.owner,
                     .owner_id = (char *)s->jn.owner_id,
                     .desired = s->jn.hold ? "hold" : "run",
                     .created_at = s->jn.now,
                     .updated_at = s->jn.now };
    struct rank *ranks = xcalloc((size_t)s->jn.nranks, sizeof(*ranks));
    for (int r = 0; r < s->jn.nranks; r++) {
        ranks[r].rank = r;
        ranks[r].state = RANK_PENDING;
        ranks[r].exit_code = -1;
    }
    struct job_view v = { .labels = s->labels_doc, .ranks = ranks, .nranks = (size_t)s->jn.nranks };
    job_json_write(out, &j, &v);
    free(ranks);
}

/* Whether req sees the job's secret values (job/secretenv.h): its owner and admins do, other
 * readers do not. */
static bool hides_secrets(const struct request *req, const struct job *j)
{
    bool owner = j->owner_id[0] && strcmp(j->owner_id, req->who.token_id) == 0;
    return req->who.scope != SCOPE_ADMIN && !owner;
}

int jobs_write_stored(struct buf *out, struct request *req, const struct job *j,
                      const struct rank *ranks, size_t n, bool spec_size, struct err *err)
{
    struct api *api = req->api;
    json_t *labels = store_job_labels(api->store, j->pk, err);
    if (!labels)
        return -1;
    /* The spec as stored, unless secrets are hidden from the reader and it has some. */
    struct buf clean = BUF_INIT;
    struct job shown;
    if (!spec_size && hides_secrets(req, j) && secretenv_redact(j->spec, &clean)) {
        shown = *j;
        shown.spec = clean.data;
        j = &shown;
    }
    struct job_view v = { .labels = labels, .ranks = ranks, .nranks = n, .spec_size = spec_size };
    struct job_wait_view wait;
    if (job_wait_get(api, j, &wait))
        v.wait = &wait;
    json_t *progress = NULL, *diag = NULL;
    store_diag_progress(api->store, j->pk, &progress, &v.stalled, NULL);
    v.progress = progress;
    if (v.stalled && j->state == JOB_RUNNING) { /* rare: the stall's own words */
        diag = store_diag_get(api->store, j->pk, -1, NULL);
        v.stall_summary = jsonx_str(json_object_get(diag, "stall"), "summary");
    }
    /* usage: one job's, with its ranks (not on list items) */
    struct buf usage = BUF_INIT;
    if (ranks && usage_job_write(api, &usage, j->id, j->executor, clock_now_ns(), false, NULL) == 0)
        v.usage = buf_cstr(&usage);
    job_json_write(out, j, &v);
    buf_release(&usage);
    json_decref(diag);
    json_decref(progress);
    json_decref(labels);
    buf_release(&clean);
    return 0;
}

static void respond_job(struct request *req, struct response *res, int status, const char *id)
{
    struct err err;
    err_init(&err);
    struct store *st = req->api->store;
    bool snap = store_snapshot_begin(st, &err) == 0; /* the job, ranks, labels as one */
    struct job *j = snap ? store_job_get(st, id, &err) : NULL;
    struct rank *ranks = NULL;
    size_t n = 0;
    if (j && store_ranks_get(st, j->pk, &ranks, &n, &err) == 0 &&
        jobs_write_stored(response_json_body(res, status), req, j, ranks, n, false, &err) == 0)
        buf_putc(&res->body, '\n');
    else
        problem_respond(req, res, &err); /* replaces whatever was written */
    if (snap)
        store_snapshot_end(st);
    ranks_free(ranks, n);
    job_free(j);
    err_release(&err);
}

/* Runs on the store writer thread after COMMIT (or rollback): wake, hand over. */
static void inserted(void *ctx, int rc, struct err *err)
{
    struct submission *s = ctx;
    struct jobs_submitted r = {
        .rc = rc, .err = err, .pk = s->out.pk, .id = s->id, .replayed = rc == 0 && s->out.replayed
    };
    if (r.replayed) {
        r.id = s->out.replayed_id;
    } else if (rc == 0) {
        apimetrics_submission(); /* from the API and from triggers alike */
        notify_changed(s->api, s->out.pk);
    }
    s->done(s->ctx, s, &r);
}

void jobs_submission_start(struct submission *s, jobs_done_fn done, void *ctx)
{
    s->done = done;
    s->ctx = ctx;
    store_job_insert_async(s->api->store, &s->jn, &s->out, inserted, s);
}

static struct spec_options spec_options(struct api *api)
{
    return (struct spec_options){ .limits = &api->limits.spec,
                                  .default_executor = api->default_executor,
                                  .local_enabled = api->local_enabled,
                                  .kubernetes_enabled = api->kubernetes_enabled,
                                  .local_slots = api->local_slots,
                                  .local_gpus = api->local_gpus };
}

static char *dup_or_null(const char *s)
{
    return s ? xstrdup(s) : NULL;
}

struct submission *jobs_submission_new(struct api *api, const json_t *doc,
                                       const struct jobs_submit_opts *o, struct err *err)
{
    struct spec_options opts = spec_options(api);
    struct buf text = BUF_INIT;
    struct spec_view v;
    struct policy_request who = { .scope = o->scope,
                                  .token_id = o->token_id,
                                  .manifest_at = o->manifest_at };
    if (spec_check(doc, &opts, &text, &v, err) < 0 || policy_check(api, &who, &v, err) < 0) {
        buf_release(&text);
        return NULL;
    }
    size_t max = api->limits.max_spec_bytes;
    if (max && text.len > max) { /* every later read of the job carries it */
        err_set(err, ERR_TOO_LARGE, "the job's spec is %zu bytes once expanded, over %zu", text.len,
                max);
        if (err)
            snprintf(err->reason, sizeof(err->reason), "max_spec");
        buf_release(&text);
        return NULL;
    }
    struct submission *s = XNEW(struct submission);
    s->api = api;
    s->doc = json_incref((json_t *)doc);
    s->labels_doc = v.labels;
    s->spec_text = buf_detach(&text, NULL);
    sortid_new(s->id);
    if (o->idempotency_key && !o->idempotency_hash) /* the hash only matters with a key */
        crypto_sha256_hex(s->spec_text, strlen(s->spec_text), s->hash);
    s->idem_key = dup_or_null(o->idempotency_key);
    s->idem_hash = dup_or_null(o->idempotency_hash);
    s->owner = xstrdup(o->owner ? o->owner : "");
    s->owner_id = xstrdup(o->owner_id ? o->owner_id : "");
    s->request_id = xstrdup(o->request_id ? o->request_id : "");
    size_t nlabels = v.labels ? json_object_size(v.labels) : 0;
    s->labels = xcalloc(nlabels ? nlabels : 1, sizeof(*s->labels));
    const char *k;
    json_t *val;
    size_t i = 0;
    json_object_foreach(v.labels, k, val)
    {
        s->labels[i].key = k;
        s->labels[i++].value = json_string_value(val);
    }
    s->jn = (struct job_new){ .id = s->id,
                              .name = v.name,
                              .executor = v.executor,
                              .spec = s->spec_text,
                              .nranks = v.nranks,
                              .gpus_per_rank = (int)jsonx_int(v.resources, "gpus", 0),
                              .deadline_seconds = v.deadline_seconds,
                              .priority = v.priority,
                              .queue = v.queue,
                              .owner = s->owner,
                              .owner_id = s->owner_id,
                              .hold = v.suspend,
                              .labels = s->labels,
                              .nlabels = nlabels,
                              .idempotency_key = s->idem_key,
                              .body_hash = s->idem_hash ? s->idem_hash : s->hash,
                              .request_id = s->request_id,
                              .now = clock_now_ns() };
    return s;
}

static const char *idempotency_key(struct request *req, struct response *res, bool *bad)
{
    const char *key = request_header(req, "Idempotency-Key");
    *bad = false;
    if (!key)
        return NULL;
    size_t n = strlen(key);
    bool ok = n > 0 && n <= 255;
    for (size_t i = 0; ok && i < n; i++)
        ok = key[i] > 0x20 && key[i] < 0x7f;
    if (!ok) {
        problem(req, res, ERR_INVALID, "Idempotency-Key must be 1 to 255 visible ASCII characters");
        *bad = true;
        return NULL;
    }
    return key;
}

static void dry_run(struct request *req, struct response *res, const json_t *doc,
                    const char *manifest_at)
{
    struct err err;
    err_init(&err);
    struct spec_options opts = spec_options(req->api);
    json_t *spec = spec_validate(doc, &opts, &err);
    struct spec_view v;
    if (spec) /* a dry run answers what the submission would: the policy too */
        spec_view(spec, &v);
    struct policy_request who = { .scope = req->who.scope,
                                  .token_id = req->who.token_id,
                                  .manifest_at = manifest_at };
    if (spec && policy_check(req->api, &who, &v, &err) < 0) {
        json_decref(spec);
        spec = NULL;
    }
    json_t *out = spec ? json_pack("{s:O}", "spec", spec) : NULL;
    if (spec && req->api->daemon.dry_run) {
        json_t *obj = req->api->daemon.dry_run(req->api->daemon.ctx, spec, "dry-run", &err);
        if (obj)
            json_object_set_new(out, "object", obj);
    }
    if (err_is_set(&err))
        problem_respond(req, res, &err);
    else
        response_json_new(res, 200, json_incref(out));
    json_decref(out);
    json_decref(spec);
    err_release(&err);
}

/* A deferred HTTP submission: the outcome, kept from the writer thread for res->finish. */
struct reply {
    struct request *req;
    struct submission *s;
    int rc;
    struct err err;
    bool replayed;
    char id[32];
};

/* Runs on the store writer thread: record, hand back to the HTTP layer. */
static void http_done(void *ctx, struct submission *s, const struct jobs_submitted *r)
{
    (void)s;
    struct reply *rp = ctx;
    rp->rc = r->rc;
    if (r->rc < 0 && r->err)
        err_move(&rp->err, r->err);
    rp->replayed = r->replayed;
    snprintf(rp->id, sizeof(rp->id), "%s", r->id);
    request_complete(rp->req);
}

/* Runs on an HTTP thread once the commit is done: the response body. */
static void finish_insert(struct request *req, struct response *res)
{
    struct reply *rp = res->deferred_ctx;
    if (rp->rc < 0) {
        problem_respond(req, res, &rp->err);
    } else if (rp->replayed) {
        respond_job(req, res, 200, rp->id);
    } else {
        struct buf *out = response_json_body(res, 201);
        jobs_submission_write(out, rp->s);
        buf_putc(out, '\n');
        char location[64];
        snprintf(location, sizeof(location), "/v1/jobs/%s", rp->id);
        response_header(res, "Location", location);
    }
    res->deferred_ctx = NULL;
    jobs_submission_free(rp->s);
    err_release(&rp->err);
    free(rp);
}

static void start_insert(struct request *req, struct response *res)
{
    (void)req;
    struct reply *rp = res->deferred_ctx;
    jobs_submission_start(rp->s, http_done, rp);
}

/* jobs_submit_request(), for a doc whose manifest (if any) the client sent at manifest_at. */
static void submit(struct request *req, struct response *res, const json_t *doc,
                   const char *manifest_at)
{
    bool bad_key, is_dry = false;
    const char *key = idempotency_key(req, res, &bad_key);
    if (bad_key)
        return;
    const char *dry = request_query(req, "dry_run");
    if (dry && parse_bool(dry, &is_dry) < 0) {
        problem(req, res, ERR_INVALID, "dry_run must be true or false");
        return;
    }
    if (is_dry) {
        dry_run(req, res, doc, manifest_at);
        return;
    }
    struct jobs_submit_opts o = { .owner = req->who.name,
                                  .owner_id = req->who.token_id,
                                  .scope = req->who.scope,
                                  .token_id = req->who.token_id,
                                  .manifest_at = manifest_at,
                                  .idempotency_key = key,
                                  .request_id = req->request_id };
    struct err err;
    err_init(&err);
    struct submission *s = jobs_submission_new(req->api, doc, &o, &err);
    if (!s) {
        if (strcmp(err.reason, "max_spec") == 0)
            problem_respond_limit(req, res, &err, "max-spec",
                                  (long long)req->api->limits.max_spec_bytes);
        else
            problem_respond(req, res, &err);
        err_release(&err);
        return;
    }
    struct reply *rp = XNEW(struct reply);
    rp->req = req;
    rp->s = s;
    err_init(&rp->err);
    res->deferred = start_insert;
    res->finish = finish_insert;
    res->deferred_ctx = rp;
}

void jobs_submit_request(struct request *req, struct response *res, const json_t *doc)
{
    submit(req, res, doc, NULL);
}

void jobs_create(struct request *req, struct response *res)
{
    json_t *doc = request_body_doc(req, res);
    if (!doc)
        return;
    const char *manifest_at = NULL;
    if (manifest_detect(doc)) {
        json_t *wrapped = manifest_submit_doc(req, res, doc);
        json_decref(doc);
        if (!wrapped)
            return;
        doc = wrapped;
        manifest_at = ""; /* refusals point into the manifest the client sent */
    }
    submit(req, res, doc, manifest_at);
    json_decref(doc);
}

/* ?limit= within [1, max]; def when absent. -1 with a 400 response when bad. */
int jobs_query_limit(struct request *req, struct response *res, int def, int max, int *out)
{
    const char *text = request_query(req, "limit");
    *out = def;
    if (text && parse_int(text, 1, max, out) < 0) {
        problem(req, res, ERR_INVALID, "limit must be an integer from 1 to %d", max);
        return -1;
    }
    return 0;
}

void jobs_get(struct request *req, struct response *res)
{
    respond_job(req, res, 200, req->params[0]);
}

/* submit-scope tokens act only on their own jobs, by token id (a new token given a revoked
 * one's name is someone else); admin on every job. */
static bool may_change(struct request *req, struct response *res, const struct job *j)
{
    if (req->who.scope == SCOPE_ADMIN ||
        (j->owner_id[0] && strcmp(j->owner_id, req->who.token_id) == 0))
        return true;
    problem(req, res, ERR_FORBIDDEN,
            "only the token that submitted a job (or an admin) may "
            "change it");
    return false;
}

static void audit(struct request *req, const char *action, const char *id)
{
    char target[64];
    snprintf(target, sizeof(target), "job/%s", id);
    struct audit_entry e = {
        .actor = req->who.name, .action = action, .target = target, .request_id = req->request_id
    };
    struct err err;
    err_init(&err);
    store_audit_add(req->api->store, &e, &err);
    err_release(&err);
}

/* One attempt at cancelling j given its state: the update to apply. */
static int cancel_once(struct request *req, const struct job *j, struct err *err)
{
    char msg[192];
    snprintf(msg, sizeof(msg), "cancelled by %s", req->who.name);
    struct job_update u = { .pk = j->pk,
                            .only_if_state = true,
                            .if_state = j->state,
                            .set_state = true,
                            .reason = "Cancelled",
                            .message = msg };
    if (jobstate_terminal(j->state))
        return err_set(err, ERR_CONFLICT, "the job already ended (%s)", jobstate_name(j->state));
    if (j->state == JOB_CANCELLING)
        return 0;
    if (j->state == JOB_QUEUED) {
        u.state = JOB_CANCELLED;
    } else {
        u.state = JOB_CANCELLING;
        u.desired = "cancel";
    }
    return store_job_update(req->api->store, &u, err);
}

typedef int (*job_change_fn)(struct request *req, const struct job *j, struct err *err);

/* Applies change to j (taken), retried from the new state after a concurrent change (the job
 * just started or ended), and answers 202 with the job or the problem. */
static void change_job(struct request *req, struct response *res, struct job *j,
                       job_change_fn change, const char *action)
{
    struct err err;
    err_init(&err);
    int rc = -1;
    for (int attempt = 0; attempt < 5; attempt++) {
        err_release(&err);
        rc = change(req, j, &err);
        if (rc == 0 || err.code != ERR_CONFLICT || jobstate_terminal(j->state))
            break;
        int64_t pk = j->pk;
        job_free(j);
        j = store_job_get_pk(req->api->store, pk, NULL);
        if (!j)
            break;
    }
    if (rc == 0) {
        audit(req, action, req->params[0]);
        notify_changed(req->api, j->pk);
        respond_job(req, res, 202, req->params[0]);
    } else {
        problem_respond(req, res, &err);
    }
    err_release(&err);
    job_free(j);
}

void jobs_cancel(struct request *req, struct response *res)
{
    struct job *j = job_from_path(req, res);
    if (!j || !may_change(req, res, j)) {
        job_free(j);
        return;
    }
    change_job(req, res, j, cancel_once, "job.cancel");
}

void jobs_resume(struct request *req, struct response *res)
{
    struct job *j = job_from_path(req, res);
    if (!j || !may_change(req, res, j)) {
        job_free(j);
        return;
    }
    struct err err;
    err_init(&err);
    if (j->state != JOB_QUEUED || strcmp(j->desired, "hold") != 0) {
        problem(req, res, ERR_CONFLICT,
                j->state == JOB_RESTARTING && strcmp(j->desired, "hold") == 0
                    ? "the job is still being suspended (its ranks are stopping); resume it once "
                      "it is queued"
                    : "only a suspended, queued job can be resumed");
        goto out;
    }
    struct job_event e = {
        .type = "resumed", .reason = "Resumed", .message = req->who.name, .rank = -1
    };
    struct job_update u = { .pk = j->pk,
                            .only_if_state = true,
                            .if_state = JOB_QUEUED,
                            .desired = "run",
                            .events = &e,
                            .nevents = 1 };
    if (store_job_update(req->api->store, &u, &err) < 0) {
        problem_respond(req, res, &err);
        goto out;
    }
    audit(req, "job.resume", req->params[0]);
    notify_changed(req->api, j->pk);
    respond_job(req, res, 200, req->params[0]);
out:
    err_release(&err);
    job_free(j);
}

/* One attempt at suspending j given its state: a queued job is held where it is; a starting or
 * running one goes to restarting with desired "hold", and the controller stops its ranks (SIGTERM
 * and the grace period to checkpoint) and queues it held once they have ended. */
static int suspend_once(struct request *req, const struct job *j, struct err *err)
{
    char msg[192];
    snprintf(msg, sizeof(msg), "suspended by %s", req->who.name);
    struct job_event e = { .type = "suspend", .reason = "Suspending", .message = msg, .rank = -1 };
    struct job_update u = { .pk = j->pk,
                            .only_if_state = true,
                            .if_state = j->state,
                            .desired = "hold",
                            .events = &e,
                            .nevents = 1 };
    if (strcmp(j->desired, "hold") == 0)
        return 0; /* suspended, or being suspended, already */
    if (j->state == JOB_QUEUED) {
        e.reason = "Suspended";
    } else if (j->state == JOB_STARTING || j->state == JOB_RUNNING || j->state == JOB_RESTARTING) {
        u.set_state = true; /* the state's own event says it */
        u.state = JOB_RESTARTING;
        u.reason = "Suspending";
        u.message = msg;
        u.nevents = 0;
    } else {
        return err_set(err, ERR_CONFLICT, "a %s job cannot be suspended", jobstate_name(j->state));
    }
    return store_job_update(req->api->store, &u, err);
}

void jobs_suspend(struct request *req, struct response *res)
{
    struct job *j = job_from_path(req, res);
    if (!j || !may_change(req, res, j)) {
        job_free(j);
        return;
    }
    change_job(req, res, j, suspend_once, "job.suspend");
}

void jobs_delete(struct request *req, struct response *res)
{
    struct job *j = job_from_path(req, res);
    if (!j || !may_change(req, res, j)) {
        job_free(j);
        return;
    }
    struct err err;
    err_init(&err);
    if (store_job_delete(req->api->store, j->pk, &err) < 0) {
        problem_respond(req, res, &err);
    } else {
        audit(req, "job.delete", j->id);
        if (req->api->daemon.job_deleted)
            req->api->daemon.job_deleted(req->api->daemon.ctx, j->id);
        res->status = 204;
    }
    err_release(&err);
    job_free(j);
}

void jobs_events(struct request *req, struct response *res)
{
    struct job *j = job_from_path(req, res);
    if (!j)
        return;
    int limit;
    int64_t after = 0;
    const char *after_text = request_query(req, "after");
    if (jobs_query_limit(req, res, 1000, 10000, &limit) < 0)
        goto out;
    if (after_text && parse_int64(after_text, 0, INT64_MAX, &after) < 0) {
        problem(req, res, ERR_INVALID, "after must be a non-negative event sequence number");
        goto out;
    }
    struct err err;
    err_init(&err);
    json_t *items = store_events_list(req->api->store, j->pk, after, limit, &err);
    if (items)
        response_json_new(res, 200, json_pack("{s:o}", "items", items));
    else
        problem_respond(req, res, &err);
    err_release(&err);
out:
    job_free(j);
}
