/*
 * world: the whole simulated cluster behind one mutex. Every module of the test API server
 * (store, watch hub, pod logs, kubelet and operator simulation, control API) works on a struct
 * world with its lock held; the condition variable is broadcast after every change so that watch
 * streams, log followers and the simulation loop wake up.
 *
 * One lock keeps the simulation simple and the object history totally ordered, which is what
 * the real API server guarantees per resource. A test server does not need more concurrency.
 */
#ifndef KS_WORLD_H
#define KS_WORLD_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>

struct store;
struct podlogs;
struct sim;
struct auth;

/* A fault the control API asked for: refuse the next `count` matching requests. */
struct fault {
    int count;
    int code;        /* HTTP status, e.g. 500, 429, 403 */
    char reason[64]; /* Kubernetes Status reason, e.g. InternalError */
    char message[256];
    char verb[32];     /* "" = any: get, list, watch, create, update, patch, delete */
    char resource[64]; /* "" = any plural, e.g. "pytorchjobs" */
    int retry_after;   /* seconds, 0 = none */
};

struct resource;

/* Set when the simulation acts through a real API server (tests/kube/sim, docs/kube-testserver.md)
 * instead of being one: deletions and Events are sent there (gc.c, events.c), the real
 * scheduler binds pods (kubelet.c runs only the pods bound to the simulated nodes), and the
 * real garbage collector removes dependents. World lock held for every call. */
struct world_remote {
    void *ctx;
    /* DELETE obj (borrowed) with propagation (NULL: the server's default) and grace (< 0:
     * the object's own); final: the kubelet's last word on a pod (grace 0, uid precondition). */
    void (*del)(void *ctx, const struct resource *res, const json_t *obj, const char *propagation,
                int64_t grace, bool final);
    /* Records a core/v1 Event (steals ev); key identifies it for aggregation (count bumps). */
    void (*event)(void *ctx, const char *key, json_t *ev);
    int kubelet_port; /* what the nodes report as daemonEndpoints.kubeletEndpoint.Port */
};

struct world {
    pthread_mutex_t lock;
    pthread_cond_t changed;
    struct store *store;
    struct podlogs *logs;
    struct sim *sim;
    struct auth *auth;
    struct fault fault;
    double speed;         /* simulated seconds per real second */
    int64_t sim_ns;       /* simulated clock, advanced by the simulation loop */
    int64_t watch_epoch;  /* bumped by the control API: open watches end */
    bool stopping;        /* set at shutdown: every stream ends */
    int64_t max_watch_ns; /* server-side cap of one watch (like --min-request-timeout) */
    int64_t bookmark_ns;  /* interval of BOOKMARK events when asked for */
    int64_t requests;     /* served requests, for the control API's /_test/state */
    int64_t watches_open;
    json_t *event_index; /* (uid/reason/message) -> event name, for aggregation */
    int create_budget;   /* pods the controllers may still create this tick, like the client
                          * rate limit of a real operator; keeps a tick short under a burst */
    const struct world_remote *remote; /* NULL: this process is the API server */
};

/* Caller storage; world_release() frees the store, logs and simulation it owns. */
void world_init(struct world *w, size_t history);
void world_release(struct world *w);

void world_lock(struct world *w);
void world_unlock(struct world *w);
/* Wakes every waiter; call with the lock held after a change. */
void world_changed(struct world *w);
/* Waits (lock held) until world_changed() or until the monotonic deadline passes. */
void world_wait(struct world *w, int64_t deadline_mono_ns);

/* Kubernetes time forms: metav1.Time ("2026-11-22T03:08:55Z", out >= 32 bytes) and
 * RFC3339Nano with trailing zeros trimmed as Go prints it (out >= 40 bytes). */
char *ktime(int64_t ns, char *out);
char *ktime_nano(int64_t ns, char *out);
/* Sets obj[key] to ktime(ns). */
void ktime_set(json_t *obj, const char *key, int64_t ns);
/* A random RFC 4122 version 4 UUID (out >= 37 bytes). */
char *kuuid(char *out);
/* Walks a dotted path ("status.phase"); borrowed, NULL when absent. */
json_t *kpath(const json_t *obj, const char *dotted);
/* obj[key] as a string, "" when absent or not a string (borrowed). */
const char *kstr(const json_t *obj, const char *key);
/* obj[key] as an object, created when absent (borrowed). */
json_t *kobj(json_t *obj, const char *key);

#endif
