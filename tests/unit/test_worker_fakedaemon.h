/*
 * test_worker_fakedaemon: the daemon's side of the worker contract (docs/worker.md), in
 * process, for the worker's unit tests: the rendezvous key-value store with waits, barriers that
 * answer 504 with missing_ranks, and receivers that record heartbeats and preflight reports.
 * libmicrohttpd with a thread per connection, so waits and barriers can block.
 */
#ifndef TY_TEST_WORKER_FAKEDAEMON_H
#define TY_TEST_WORKER_FAKEDAEMON_H

#include <jansson.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <time.h>

#include "core/buf.h"
#include "core/clock.h"
#include "core/jsonx.h"

struct fake_daemon {
    struct MHD_Daemon *mhd;
    int port;
    const char *token;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    json_t *kv;         /* key -> value */
    json_t *barriers;   /* name -> [ranks] */
    json_t *heartbeats; /* bodies, in arrival order */
    json_t *preflights;
    int unauthorized;
};

static inline enum MHD_Result fake_reply(struct MHD_Connection *c, unsigned status, json_t *body,
                                         const char *type)
{
    char *text = jsonx_dumps(body);
    json_decref(body);
    struct MHD_Response *r =
        MHD_create_response_from_buffer(strlen(text), text, MHD_RESPMEM_MUST_FREE);
    MHD_add_response_header(r, "Content-Type", type);
    enum MHD_Result ret = MHD_queue_response(c, status, r);
    MHD_destroy_response(r);
    return ret;
}

static json_t *fake_problem(unsigned status, const char *title)
{
    return json_pack("{s:s,s:s,s:i}", "type", "about:blank", "title", title, "status", status);
}

/* Waits on the cond until pred(f, arg) or the deadline; called with the lock held. */
static inline int fake_wait(struct fake_daemon *f, int (*pred)(struct fake_daemon *, const void *),
                            const void *arg, int seconds)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += seconds;
    while (!pred(f, arg))
        if (pthread_cond_timedwait(&f->cv, &f->mu, &ts) != 0)
            return pred(f, arg);
    return 1;
}

static inline int fake_has_key(struct fake_daemon *f, const void *key)
{
    return json_object_get(f->kv, key) != NULL;
}

struct fake_barrier {
    const char *name;
    int world;
};

static inline int fake_barrier_full(struct fake_daemon *f, const void *arg)
{
    const struct fake_barrier *b = arg;
    return (int)json_array_size(json_object_get(f->barriers, b->name)) >= b->world;
}

static inline enum MHD_Result fake_barrier(struct fake_daemon *f, struct MHD_Connection *c,
                                           const char *name, json_t *body)
{
    struct fake_barrier b = { name, (int)jsonx_int(body, "world_size", 1) };
    int rank = (int)jsonx_int(body, "rank", -1),
        timeout = (int)jsonx_int(body, "timeout_seconds", 1);
    pthread_mutex_lock(&f->mu);
    json_t *arr = json_object_get(f->barriers, name);
    if (!arr) {
        arr = json_array();
        json_object_set_new(f->barriers, name, arr);
    }
    json_array_append_new(arr, json_integer(rank));
    pthread_cond_broadcast(&f->cv);
    int full = fake_wait(f, fake_barrier_full, &b, timeout);
    json_t *arrived = json_deep_copy(arr), *missing = json_array();
    for (int r = 0; r < b.world; r++) {
        int in = 0;
        size_t i;
        json_t *v;
        json_array_foreach(arrived, i, v) in |= json_integer_value(v) == r;
        if (!in)
            json_array_append_new(missing, json_integer(r));
    }
    pthread_mutex_unlock(&f->mu);
    if (full) {
        json_decref(missing);
        return fake_reply(c, 200, json_pack("{s:o}", "arrived", arrived), "application/json");
    }
    json_t *p = fake_problem(504, "barrier timed out");
    json_object_set_new(p, "missing_ranks", missing);
    json_decref(arrived);
    return fake_reply(c, 504, p, "application/problem+json");
}

static inline enum MHD_Result fake_route(struct fake_daemon *f, struct MHD_Connection *c,
                                         const char *method, const char *url, json_t *body)
{
    char key[256];
    int rank;
    if (sscanf(url, "/v1/jobs/job1/rendezvous/barriers/%255s", key) == 1 && !strcmp(method, "POST"))
        return fake_barrier(f, c, key, body);
    if (sscanf(url, "/v1/jobs/job1/rendezvous/%255s", key) == 1 && !strcmp(method, "PUT")) {
        pthread_mutex_lock(&f->mu);
        json_object_set(f->kv, key, json_object_get(body, "value"));
        pthread_cond_broadcast(&f->cv);
        pthread_mutex_unlock(&f->mu);
        return fake_reply(c, 201, json_object(), "application/json");
    }
    if (sscanf(url, "/v1/jobs/job1/rendezvous/%255s", key) == 1 && !strcmp(method, "GET")) {
        const char *w = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "wait");
        pthread_mutex_lock(&f->mu);
        int found = fake_wait(f, fake_has_key, key, w ? (int)strtol(w, NULL, 10) : 0);
        json_t *v =
            found ? json_pack("{s:s,s:O}", "key", key, "value", json_object_get(f->kv, key)) : NULL;
        pthread_mutex_unlock(&f->mu);
        return v ? fake_reply(c, 200, v, "application/json")
                 : fake_reply(c, 404, fake_problem(404, "no such key"), "application/problem+json");
    }
    if (sscanf(url, "/v1/jobs/job1/ranks/%d/%255s", &rank, key) == 2 && !strcmp(method, "POST")) {
        pthread_mutex_lock(&f->mu);
        json_object_set_new(body, "_rank", json_integer(rank));
        json_array_append(strcmp(key, "heartbeat") ? f->preflights : f->heartbeats, body);
        pthread_cond_broadcast(&f->cv);
        pthread_mutex_unlock(&f->mu);
        return fake_reply(c, 200, json_object(), "application/json");
    }
    return fake_reply(c, 404, fake_problem(404, "no route"), "application/problem+json");
}

static inline enum MHD_Result fake_handler(void *cls, struct MHD_Connection *c, const char *url,
                                           const char *method, const char *version,
                                           const char *upload, size_t *upload_size, void **con_cls)
{
    struct fake_daemon *f = cls;
    (void)version;
    if (!*con_cls) {
        *con_cls = calloc(1, sizeof(struct buf));
        return MHD_YES;
    }
    struct buf *b = *con_cls;
    if (*upload_size) {
        buf_append(b, upload, *upload_size);
        *upload_size = 0;
        return MHD_YES;
    }
    const char *auth = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Authorization");
    char want[128];
    snprintf(want, sizeof(want), "Bearer %s", f->token);
    if (!auth || strcmp(auth, want) != 0) {
        pthread_mutex_lock(&f->mu);
        f->unauthorized++;
        pthread_mutex_unlock(&f->mu);
        return fake_reply(c, 401, fake_problem(401, "unauthorized"), "application/problem+json");
    }
    json_t *body = b->len ? json_loadb(b->data, b->len, 0, NULL) : json_object();
    if (!body)
        return fake_reply(c, 400, fake_problem(400, "bad json"), "application/problem+json");
    enum MHD_Result r = fake_route(f, c, method, url, body);
    json_decref(body);
    return r;
}

static inline void fake_done(void *cls, struct MHD_Connection *c, void **con_cls,
                             enum MHD_RequestTerminationCode toe)
{
    (void)cls, (void)c, (void)toe;
    if (*con_cls) {
        buf_release(*con_cls);
        free(*con_cls);
    }
    *con_cls = NULL;
}

/* Starts on port (0: any free one); returns 0 or -1. */
static inline int fake_start(struct fake_daemon *f, int port, const char *token)
{
    memset(f, 0, sizeof(*f));
    pthread_mutex_init(&f->mu, NULL);
    pthread_cond_init(&f->cv, NULL);
    f->token = token;
    f->kv = json_object();
    f->barriers = json_object();
    f->heartbeats = json_array();
    f->preflights = json_array();
    struct sockaddr_in sa = { .sin_family = AF_INET,
                              .sin_port = htons((uint16_t)port),
                              .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    f->mhd = MHD_start_daemon(MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD,
                              (uint16_t)port, NULL, NULL, fake_handler, f,
                              MHD_OPTION_NOTIFY_COMPLETED, fake_done, f, MHD_OPTION_SOCK_ADDR, &sa,
                              MHD_OPTION_LISTENING_ADDRESS_REUSE, 1, MHD_OPTION_END);
    if (!f->mhd)
        return -1;
    f->port = MHD_get_daemon_info(f->mhd, MHD_DAEMON_INFO_BIND_PORT)->port;
    return 0;
}

static inline void fake_stop(struct fake_daemon *f)
{
    if (f->mhd)
        MHD_stop_daemon(f->mhd);
    f->mhd = NULL;
    json_decref(f->kv);
    json_decref(f->barriers);
    json_decref(f->heartbeats);
    json_decref(f->preflights);
    pthread_mutex_destroy(&f->mu);
    pthread_cond_destroy(&f->cv);
}

/* A TCP port nothing listens on (bound, then released). */
static inline int fake_free_port(void)
{
    struct fake_daemon f;
    if (fake_start(&f, 0, "x") < 0)
        return -1;
    int port = f.port;
    fake_stop(&f);
    return port;
}

#endif
