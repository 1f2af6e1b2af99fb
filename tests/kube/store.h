/*
 * store: the objects of the simulated cluster and their change history, like etcd behind the
 * API server's watch cache. One global resourceVersion counter; every create, update and delete
 * bumps it by one and appends one event to a bounded ring, so "the event after RV r" is found by
 * arithmetic. Watches older than the ring's oldest entry get 410.
 *
 * Objects are immutable once stored: an update stores a new json_t and the history keeps
 * references to both, so a watch stream may format an old version after the lock is dropped.
 * Every function needs the world lock held. Returned json_t are borrowed until the lock is
 * released unless said otherwise.
 */
#ifndef KS_STORE_H
#define KS_STORE_H

#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>

#include "core/err.h"
#include "tests/kube/resource.h"

enum store_event_type { STORE_ADDED, STORE_MODIFIED, STORE_DELETED };

struct store_event {
    int64_t rv;
    enum store_event_type type;
    const struct resource *res;
    json_t *obj;  /* the object after the change (for DELETED: the last version, new RV) */
    json_t *prev; /* the object before (NULL for ADDED) */
};

struct store;

/* history: how many events are kept for watches. Caller frees with store_free(). */
struct store *store_new(size_t history);
void store_free(struct store *s);

int64_t store_rv(const struct store *s);
/* The smallest RV a watch may start from without 410. */
int64_t store_oldest_rv(const struct store *s);
/* Moves the revision on and forgets the history: a watch from any RV seen so far gets 410
 * (the control API's "expire"). */
void store_compact(struct store *s);
/* The event with RV rv+1, or NULL when rv is current or too old. */
const struct store_event *store_event_after(const struct store *s, int64_t rv);

/* Borrowed; NULL when absent. ns is ignored for cluster-scoped resources. */
json_t *store_get(struct store *s, const struct resource *res, const char *ns, const char *name);

/* Stores a new object (steals obj). Fills metadata.uid, resourceVersion, creationTimestamp,
 * generation (CRDs), the name from generateName and namespace. ERR_CONFLICT (reason
 * AlreadyExists) or ERR_VALIDATION. Returns the stored object (borrowed) or NULL. */
json_t *store_create(struct store *s, const struct resource *res, json_t *obj, struct err *err);
/* Replaces the object with the same namespace/name (steals obj): a new resourceVersion, and a
 * higher generation when spec changed (CRDs). ERR_NOT_FOUND when absent. */
json_t *store_replace(struct store *s, const struct resource *res, json_t *obj, struct err *err);
/* Removes the object; the DELETED event carries it with a new resourceVersion. Returns that
 * last version (borrowed) or NULL with ERR_NOT_FOUND. */
json_t *store_remove(struct store *s, const struct resource *res, const char *ns, const char *name,
                     struct err *err);

/* The objects of res in ns (NULL or "" = all namespaces), sorted by namespace then name, as a
 * new array of new references (so the caller may change the store while walking it); *n
 * receives the count. Caller frees with store_list_free(). */
json_t **store_list(struct store *s, const struct resource *res, const char *ns, size_t *n);
void store_list_free(json_t **objs, size_t n);
/* Number of stored objects of res, across namespaces. */
size_t store_count(struct store *s, const struct resource *res);

/* A simulator that acts through a real API server (tests/kube/sim) learns of every local
 * write: fn(ctx, res, obj, removed) after each store_create/replace/remove, obj being the
 * stored version (the last one when removed; borrowed). NULL fn: none. */
typedef void (*store_write_fn)(void *ctx, const struct resource *res, const json_t *obj,
                               bool removed);
void store_on_write(struct store *s, store_write_fn fn, void *ctx);
/* What the real API server says: stores obj as it is (steals it; metadata untouched, so uid,
 * resourceVersion and timestamps are the server's), creating or replacing, without calling
 * the write hook. The history still gets an event with the store's own revision. */
json_t *store_apply(struct store *s, const struct resource *res, json_t *obj);
/* Removes an object the server deleted, without calling the write hook. */
void store_drop(struct store *s, const struct resource *res, const char *ns, const char *name);

/* A ready-made NotFound/AlreadyExists message: `pods "x" not found`. */
int store_not_found(struct err *err, const struct resource *res, const char *name);

#endif
