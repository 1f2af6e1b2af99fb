/*
 * api: trainyard's HTTP API without HTTP. server/http/http.c turns each libmicrohttpd request into
 * a struct request, calls api_handle(), and sends back the struct response; everything in between
 * (routing, authentication, scopes, limits, handlers, problem+json) lives here and is tested
 * without a socket.
 *
 * A handler fills the response and returns. Two kinds of responses need the HTTP layer's help:
 *  - deferred: the handler sets res->deferred; the HTTP layer suspends the connection, then
 *    calls deferred(req, res); whoever finishes the work (e.g. the store writer after COMMIT)
 *    calls request_complete(req), from any thread; the body is built either before that or,
 *    better, in res->finish(), which the HTTP layer calls on its own thread.
 *  - streamed: the handler sets res->stream; the HTTP layer pulls bytes with stream->read()
 *    and, when it returns 0 (nothing yet), waits until stream_wake() is called.
 *
 * Ownership: the request and response live in the HTTP layer's per-request storage and are
 * released by it after the response is sent (response_release()).
 */
#ifndef TY_API_H
#define TY_API_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "core/buf.h"
#include "core/err.h"
#include "job/spec.h"

struct store;
struct wakeups;
struct sns_verifier;

enum http_method {
    HTTP_GET,
    HTTP_HEAD,
    HTTP_POST,
    HTTP_PUT,
    HTTP_PATCH,
    HTTP_DELETE,
    HTTP_OPTIONS,
    HTTP_METHOD_COUNT
};

/* Who may call a route. Scopes nest: admin > submit > read. worker tokens are bound to one job
 * and only reach routes of that job marked SCOPE_WORKER; hooks authenticate with their own
 * per-trigger secret inside the handler. */
enum scope { SCOPE_PUBLIC, SCOPE_READ, SCOPE_SUBMIT, SCOPE_ADMIN, SCOPE_WORKER, SCOPE_HOOK };

const char *scope_name(enum scope s);
int scope_parse(const char *name, enum scope *s);

struct principal {
    char name[128];   /* token name, or "anonymous" with --auth=off */
    enum scope scope; /* what the token grants */
    char token_id[32];
    char job_id[32]; /* worker tokens: the job they are bound to */
};

/* Limits on what a client may send; see server/daemon/config.c for the defaults and config keys. */
struct api_limits {
    struct spec_limits spec; /* what one job spec may hold */
    size_t max_body_bytes;
    int max_json_depth;
    size_t max_spec_bytes;  /* a job's canonical spec, as stored */
    size_t max_url_bytes;   /* a request target (path and query) as sent */
    int max_query_params;   /* query parameters of one request */
    int max_selector_terms; /* terms of a label selector */
    size_t max_page_bytes;  /* a page of GET /v1/jobs ends early past this */
    int max_list_limit;
    int max_log_limit;
    int max_followers_per_client;
    int rate_per_second; /* per token; 0 = unlimited */
    int rate_burst;
};

/* Calls from the API into the daemon, set by server/daemon/main.c. Each may be NULL. */
struct api_daemon {
    void *ctx;
    void (*job_changed)(void *ctx, int64_t job_pk); /* a job was created, cancelled, resumed */
    /* Renders the executor object a spec would create (dry run); new reference or NULL+err. */
    json_t *(*dry_run)(void *ctx, const json_t *spec, const char *job_id, struct err *err);
    /* The cluster's nodes for GET /v1/nodes (new reference), or NULL with err. */
    json_t *(*nodes)(void *ctx, struct err *err);
    /* Why a queued job waits (the scheduler's last pass): reason, message, place in its queue.
     * False when not known (just submitted, suspended). Any thread; must not block long. */
    bool (*queue_status)(void *ctx, int64_t job_pk, char *reason, size_t rlen, char *message,
                         size_t mlen, int *position);
    /* A finished job was deleted: remove what it left outside the database (log files). */
    void (*job_deleted)(void *ctx, const char *job_id);
    /* Adds Prometheus text for daemon-level metrics (executors, ingest, HTTP). */
    void (*metrics)(void *ctx, struct buf *out);
    /* A hook delivery stored work for the trigger loop (jobs to submit, SNS confirmations). */
    void (*triggers_pending)(void *ctx);
    /* A webhook message was queued (POST /v1/webhooks/{id}/test). */
    void (*webhooks_pending)(void *ctx);
    /* A rank reported in: kind "heartbeat" or "preflight", body borrowed for the call. The
     * daemon records it; a failed preflight fails the rank. Must not block. */
    void (*rank_report)(void *ctx, int64_t job_pk, int attempt, int rank, const char *kind,
                        const json_t *body);
};

/* The daemon's place in the cluster, for the cluster policy (api/policy.h): where jobs naming
 * no namespace run, and what is the daemon's own, which no non-admin job may use. */
struct api_cluster {
    const char *jobs_namespace;   /* the executor's default; NULL: unknown (a job must name one) */
    const char *namespace;        /* the daemon's own; NULL or "": none known */
    const char *service_accounts; /* the daemon's own identities, comma-separated */
    const char *volume_claims;    /* the daemon's own volumes (its database), comma-separated */
};

struct api {
    struct store *store;
    struct wakeups *wakeups; /* wakes log followers when lines arrive */
    struct api_limits limits;
    struct api_daemon daemon; /* calls into the daemon */
    bool auth_enabled;
    const char *default_executor;
    bool local_enabled;
    /* NULL when local ranks run sandboxed; else why not, and whether non-admin local jobs are
     * refused for it (--local-sandbox=auto) or the admin accepted the risk (off). */
    const char *local_sandbox_why;
    bool local_unsandboxed_refused;
    const char *local_checkpoint_roots; /* comma-separated; non-admins' checkpoint.path */
    const char *data_dir;               /* never a job's checkpoint path */
    bool kubernetes_enabled;
    struct api_cluster cluster;
    int local_slots;          /* ranks the local executor can run at once */
    int local_gpus;           /* GPUs it hands out */
    const char *public_url;   /* base URL for links (webhooks, Location), may be NULL */
    bool webhook_allow_local; /* webhook URLs may name loopback/link-local/metadata addresses */
    int64_t started_at;
    void *ratelimit;          /* api/ratelimit.c state */
    void *rendezvous;         /* api/rendezvous.c state: requests waiting for keys and barriers */
    void *extra;              /* per-feature state (triggers, webhooks) */
    struct sns_verifier *sns; /* checks SNS signatures of hook deliveries; NULL: SNS refused */
    size_t hook_max_body;     /* hook bodies over this are rejected and recorded; 0: 1 MiB */
};

struct request;
struct response;

/* A streamed body. read() returns bytes written into buf (at most max), 0 when nothing is ready
 * (the HTTP layer then waits for stream_wake()), STREAM_END at the end, STREAM_ERROR to abort. */
#define STREAM_END   ((ssize_t)-1)
#define STREAM_ERROR ((ssize_t)-2)
struct stream {
    ssize_t (*read)(struct stream *s, char *buf, size_t max);
    void (*free)(struct stream *s);
    /* Set by the HTTP layer: wakes a waiting read. Safe from any thread, any time. */
    void (*wake)(void *http_ctx);
    void *http_ctx;
};
void stream_wake(struct stream *s);

#define RESPONSE_MAX_HEADERS 8
struct response {
    int status;
    const char *content_type; /* static string */
    struct buf body;
    struct {
        char *name;
        char *value;
    } headers[RESPONSE_MAX_HEADERS];
    size_t nheaders;
    const unsigned char *static_body; /* served without copying (embedded assets) */
    size_t static_len;
    struct stream *stream;
    void (*deferred)(struct request *req, struct response *res);
    void *deferred_ctx; /* for deferred() and finish() */
    /* Optional: after request_complete(), the HTTP layer calls finish() on its own thread to
     * build the body, so that the completing thread (the store writer) stays free. */
    void (*finish)(struct request *req, struct response *res);
};

struct request {
    struct api *api;
    enum http_method method;
    const char *path;
    const char *params[4]; /* path parameters in pattern order, e.g. {id} */
    size_t nparams;
    const char *body;
    size_t body_len;
    struct principal who;
    char request_id[16];
    const void *route; /* the matched struct route */
    /* Set by the HTTP layer: */
    const char *(*header)(struct request *req, const char *name);
    const char *(*query)(struct request *req, const char *name);
    /* Calls fn(ctx, key, value) for each query parameter (for unknown-parameter checks). */
    void (*query_each)(struct request *req, void (*fn)(void *ctx, const char *k, const char *v),
                       void *ctx);
    void (*complete)(struct request *req); /* for deferred responses */
    void *http_ctx;
    const char *client_addr; /* "127.0.0.1" */
};

/* Routes, authenticates and runs the handler. Always fills res (problem+json on error). */
void api_handle(struct request *req, struct response *res);
/* api_handle() in two steps, for an HTTP layer that reads the body only after the first:
 * api_admit() needs only the method, path, headers and query (it routes, authenticates and
 * takes the rate limit); false with res holding the refusal. api_run() runs the admitted
 * request's handler once its body is there. */
bool api_admit(struct request *req, struct response *res);
/* Gives the request its id (for X-Request-Id and the logs) if it has none yet. */
void api_request_begin(struct request *req);
void api_run(struct request *req, struct response *res);
/* True when an admitted request's sender is known only after its body is read: a hook
 * delivery, which signs its body. The HTTP layer bounds what such bodies hold at once. */
bool api_anonymous_body(const struct request *req);

/* Helpers for handlers. */
const char *request_header(struct request *req, const char *name);
const char *request_query(struct request *req, const char *name);
void request_complete(struct request *req);

void response_json(struct response *res, int status, const json_t *body);
/* Steals body. */
void response_json_new(struct response *res, int status, json_t *body);
/* A JSON response whose body the caller writes into the returned (empty) buffer. */
struct buf *response_json_body(struct response *res, int status);
/* Adds a header (copied). */
void response_header(struct response *res, const char *name, const char *value);
void response_release(struct response *res);

/* problem+json from err (status from the one code table); field problems listed by pointer. */
void problem_respond(struct request *req, struct response *res, const struct err *err);
/* problem_respond() with extra members merged into the problem object (steals extra). */
void problem_respond_extra(struct request *req, struct response *res, const struct err *err,
                           json_t *extra);
/* A request past one of the daemon's limits: problem+json whose "limit" member names the setting
 * (e.g. "max-body", as the flag is spelt) and "max" its value, besides err's message. */
void problem_respond_limit(struct request *req, struct response *res, const struct err *err,
                           const char *limit, long long max);
/* Shorthand: problem_respond_limit with a fresh error. */
void problem_limit(struct request *req, struct response *res, enum err_code code, const char *limit,
                   long long max, const char *fmt, ...) __attribute__((format(printf, 6, 7)));
/* Shorthand: problem_respond with a fresh error. */
void problem(struct request *req, struct response *res, enum err_code code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
int err_http_status(enum err_code code);

/* Parses a JSON or YAML body by Content-Type into a new reference; NULL with the response set to
 * 415/400/413 problem. */
json_t *request_body_doc(struct request *req, struct response *res);

#endif
