/*
 * rendezvous: how a job's ranks find each other through the daemon (trainyard-worker's
 * contract, docs/worker.md): keys set and read (optionally waiting until set), and barriers
 * that answer once every rank arrived or name the ranks that did not. Scoped to the job's
 * current attempt. Callers are worker tokens bound to the job.
 *
 * Waiting never holds an HTTP thread: the request is deferred and parked in a list; a set or an
 * arrival re-checks the parked requests of its job, and a timer thread ends those whose time is
 * up. `lock` guards the list; completing a request (request_complete) may happen on the thread
 * of a set, an arrival, or the timer.
 */
#include "api/rendezvous.h"

#include <pthread.h>

#include "api/handlers.h"
#include "api/job_json.h"
#include "core/clock.h"
#include "core/jsonx.h"
#include "core/parse.h"
#include "core/xalloc.h"
#include "store/jobs.h"
#include "store/rendezvous.h"

#define MAX_WAIT_S 300
#define MAX_VALUE  (64 * 1024)
#define MAX_WORLD  65536

struct wait {
    struct request *req;
    struct response *res;
    int64_t pk;
    int attempt;
    bool barrier;
    char name[160];
    int world;
    int64_t deadline; /* clock_mono_ns */
    struct wait *next;
};

struct rendezvous {
    struct api *api;
    pthread_mutex_t lock;
    pthread_cond_t cond;
    pthread_t timer;
    bool stopping;
    struct wait *waits;
};

/* Keys and barrier names: what fits in a URL segment without escaping. */
static bool good_name(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > 128)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!(s[i] >= 'a' && s[i] <= 'z') && !(s[i] >= 'A' && s[i] <= 'Z') &&
            !(s[i] >= '0' && s[i] <= '9') && !strchr("._-", s[i]))
            return false;
    return true;
}

/* Fills the answer of a satisfied wait; returns false when it is not satisfied yet. */
static bool try_answer(struct rendezvous *rz, struct wait *w)
{
    struct err err;
    err_init(&err);
    bool done = false;
    if (!w->barrier) {
        char *v = store_rdzv_get(rz->api->store, w->pk, w->attempt, w->name, &err);
        if (v)
            response_json_new(
                w->res, 200,
                json_pack("{s:s,s:s,s:i}", "key", w->name, "value", v, "attempt", w->attempt));
        done = v != NULL;
        free(v);
    } else {
        int *ranks = xcalloc((size_t)w->world, sizeof(int));
        int n =
            store_rdzv_arrived(rz->api->store, w->pk, w->attempt, w->name, ranks, w->world, &err);
        if (n >= w->world) {
            json_t *arrived = json_array();
            for (int i = 0; i < n; i++)
                json_array_append_new(arrived, json_integer(ranks[i]));
            response_json_new(w->res, 200,
                              json_pack("{s:s,s:o,s:i,s:i}", "barrier", w->name, "arrived", arrived,
                                        "world_size", w->world, "attempt", w->attempt));
            done = true;
        }
        free(ranks);
    }
    err_release(&err);
    return done;
}

/* The answer when time is up: 404 for a key, 504 naming the missing ranks for a barrier. */
static void answer_timeout(struct rendezvous *rz, struct wait *w)
{
    struct err err;
    err_init(&err);
    if (!w->barrier) {
        err_set(&err, ERR_NOT_FOUND, "rendezvous key '%s' was not set in time", w->name);
        problem_respond(w->req, w->res, &err);
    } else {
        int *ranks = xcalloc((size_t)w->world, sizeof(int));
        int n =
            store_rdzv_arrived(rz->api->store, w->pk, w->attempt, w->name, ranks, w->world, NULL);
        json_t *missing = json_array();
        for (int r = 0, k = 0; r < w->world; r++) {
            if (k < n && ranks[k] == r)
                k++;
            else
                json_array_append_new(missing, json_integer(r));
        }
        free(ranks);
        err_set(&err, ERR_TIMEOUT, "barrier '%s': %zu of %d ranks did not arrive in time", w->name,
                json_array_size(missing), w->world);
        problem_respond_extra(w->req, w->res, &err, json_pack("{s:o}", "missing_ranks", missing));
    }
    err_release(&err);
}

static void finish(struct wait *w)
{
    struct request *req = w->req;
    free(w);
    request_complete(req);
}

static void unlink_wait(struct rendezvous *rz, struct wait *w)
{
    for (struct wait **p = &rz->waits; *p; p = &(*p)->next) {
        if (*p == w) {
            *p = w->next;
            return;
        }
    }
}

/* Re-checks the parked requests of a job after a set or an arrival. */
static void kick(struct rendezvous *rz, int64_t pk)
{
    pthread_mutex_lock(&rz->lock);
    struct wait *w = rz->waits, *next;
    for (; w; w = next) {
        next = w->next;
        if (w->pk == pk && try_answer(rz, w)) {
            unlink_wait(rz, w);
            finish(w);
        }
    }
    pthread_mutex_unlock(&rz->lock);
}

static void *timer_main(void *arg)
{
    pthread_setname_np(pthread_self(), "ty-rendezvous");
    struct rendezvous *rz = arg;
    pthread_mutex_lock(&rz->lock);
    while (!rz->stopping) {
        int64_t now = clock_mono_ns(), next = now + NS_PER_SEC;
        struct wait *w = rz->waits, *after;
        for (; w; w = after) {
            after = w->next;
            if (w->deadline <= now) {
                unlink_wait(rz, w);
                answer_timeout(rz, w);
                finish(w);
            } else if (w->deadline < next) {
                next = w->deadline;
            }
        }
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        int64_t wake = (int64_t)ts.tv_sec * NS_PER_SEC + ts.tv_nsec + (next - now);
        ts.tv_sec = wake / NS_PER_SEC;
        ts.tv_nsec = wake % NS_PER_SEC;
        pthread_cond_timedwait(&rz->cond, &rz->lock, &ts);
    }
    pthread_mutex_unlock(&rz->lock);
    return NULL;
}

/* Runs once the HTTP layer suspended the request: park it, then check once more, since the
 * key may have been set between the handler's check and now. */
static void park(struct request *req, struct response *res)
{
    struct rendezvous *rz = req->api->rendezvous;
    struct wait *w = res->deferred_ctx;
    res->deferred_ctx = NULL;
    pthread_mutex_lock(&rz->lock);
    if (rz->stopping || try_answer(rz, w)) {
        if (rz->stopping)
            problem(req, res, ERR_UNAVAILABLE, "the daemon is stopping; try again");
        pthread_mutex_unlock(&rz->lock);
        finish(w);
        return;
    }
    w->next = rz->waits;
    rz->waits = w;
    pthread_cond_signal(&rz->cond);
    pthread_mutex_unlock(&rz->lock);
}

static void defer(struct request *req, struct response *res, struct wait *w)
{
    w->req = req;
    w->res = res;
    res->deferred = park;
    res->deferred_ctx = w;
}

void rendezvous_init(struct api *api)
{
    struct rendezvous *rz = XNEW(struct rendezvous);
    rz->api = api;
    pthread_mutex_init(&rz->lock, NULL);
    pthread_condattr_t attr;
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&rz->cond, &attr);
    pthread_condattr_destroy(&attr);
    pthread_create(&rz->timer, NULL, timer_main, rz);
    api->rendezvous = rz;
}

void rendezvous_release(struct api *api)
{
    struct rendezvous *rz = api->rendezvous;
    if (!rz)
        return;
    pthread_mutex_lock(&rz->lock);
    rz->stopping = true;
    while (rz->waits) {
        struct wait *w = rz->waits;
        rz->waits = w->next;
        problem(w->req, w->res, ERR_UNAVAILABLE, "the daemon is stopping; try again");
        finish(w);
    }
    pthread_cond_signal(&rz->cond);
    pthread_mutex_unlock(&rz->lock);
    pthread_join(rz->timer, NULL);
    pthread_cond_destroy(&rz->cond);
    pthread_mutex_destroy(&rz->lock);
    free(rz);
    api->rendezvous = NULL;
}

/* The job in the path and its current attempt; NULL with the response set. */
static struct job *job_for(struct request *req, struct response *res)
{
    struct job *j = job_from_path(req, res);
    if (j && !good_name(req->params[1])) {
        problem(req, res, ERR_INVALID,
                "'%s' is not a valid name: 1 to 128 letters, digits, '.', '_' or '-'",
                req->params[1]);
        job_free(j);
        j = NULL;
    }
    return j;
}

void rendezvous_set(struct request *req, struct response *res)
{
    struct job *j = job_for(req, res);
    if (!j)
        return;
    json_t *doc = request_body_doc(req, res);
    const char *value = doc ? jsonx_str(doc, "value") : NULL;
    struct err err;
    err_init(&err);
    bool created = false;
    if (doc && (!value || strlen(value) > MAX_VALUE))
        problem(req, res, ERR_VALIDATION, "the body must be {\"value\": \"...\"}, at most 64 KiB");
    else if (doc && store_rdzv_set(req->api->store, j->pk, j->attempt, req->params[1], value,
                                   &created, &err) < 0)
        problem_respond(req, res, &err);
    else if (doc) {
        response_json_new(res, created ? 201 : 200,
                          json_pack("{s:s,s:s,s:i}", "key", req->params[1], "value", value,
                                    "attempt", j->attempt));
        kick(req->api->rendezvous, j->pk);
    }
    err_release(&err);
    json_decref(doc);
    job_free(j);
}

void rendezvous_get(struct request *req, struct response *res)
{
    struct job *j = job_for(req, res);
    if (!j)
        return;
    int wait_s = 0;
    const char *wait = request_query(req, "wait");
    if (wait && parse_int(wait, 0, MAX_WAIT_S, &wait_s) < 0) {
        problem(req, res, ERR_INVALID, "parameter 'wait' must be 0 to %d seconds", MAX_WAIT_S);
        job_free(j);
        return;
    }
    struct wait *w = XNEW(struct wait);
    *w = (struct wait){ .req = req,
                        .res = res,
                        .pk = j->pk,
                        .attempt = j->attempt,
                        .deadline = clock_mono_ns() + wait_s * NS_PER_SEC };
    snprintf(w->name, sizeof(w->name), "%s", req->params[1]);
    if (try_answer(req->api->rendezvous, w)) {
        free(w);
    } else if (wait_s == 0) {
        answer_timeout(req->api->rendezvous, w);
        free(w);
    } else {
        defer(req, res, w);
    }
    job_free(j);
}

void rendezvous_barrier(struct request *req, struct response *res)
{
    struct job *j = job_for(req, res);
    if (!j)
        return;
    json_t *doc = request_body_doc(req, res);
    int64_t rank = jsonx_int(doc, "rank", -1), world = jsonx_int(doc, "world_size", -1);
    int64_t timeout = jsonx_int(doc, "timeout_seconds", 60);
    struct err err;
    err_init(&err);
    if (doc && (world < 1 || world > MAX_WORLD))
        err_field(&err, "/world_size", "must be from 1 to %d", MAX_WORLD);
    if (doc && (rank < 0 || rank >= world))
        err_field(&err, "/rank", "must be from 0 to world_size - 1");
    if (doc && (timeout < 1 || timeout > MAX_WAIT_S))
        err_field(&err, "/timeout_seconds", "must be from 1 to %d", MAX_WAIT_S);
    if (doc && !err_is_set(&err))
        store_rdzv_arrive(req->api->store, j->pk, j->attempt, req->params[1], (int)rank, (int)world,
                          &err);
    if (doc && err_is_set(&err)) {
        problem_respond(req, res, &err);
    } else if (doc) {
        kick(req->api->rendezvous, j->pk);
        struct wait *w = XNEW(struct wait);
        *w = (struct wait){ .req = req,
                            .res = res,
                            .pk = j->pk,
                            .attempt = j->attempt,
                            .barrier = true,
                            .world = (int)world,
                            .deadline = clock_mono_ns() + timeout * NS_PER_SEC };
        snprintf(w->name, sizeof(w->name), "%s", req->params[1]);
        if (try_answer(req->api->rendezvous, w))
            free(w);
        else
            defer(req, res, w);
    }
    err_release(&err);
    json_decref(doc);
    job_free(j);
}
