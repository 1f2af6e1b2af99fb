/*
 * watch: keeps a local view of one collection (e.g. the pods labelled trainyard.io/job-id in a
 * namespace) in step with the API server, the way client-go's reflector does: a paginated LIST,
 * then a WATCH from the list's resourceVersion with allowWatchBookmarks, resumed from the last
 * resourceVersion seen (bookmarks included) whenever the server ends the stream, and a fresh
 * LIST when the server answers 410 (Expired/Gone: the history is gone). After such a re-list,
 * objects that disappeared in the gap are reported as removed.
 *
 * Threads: the Kubernetes loop thread only. Callbacks run inside kube_client_run().
 */
#ifndef TY_KUBE_WATCH_H
#define TY_KUBE_WATCH_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "server/kube/client.h"

struct kube_watch;

struct kube_watch_ops {
    void *ctx;
    /* An object exists in this form (listed, ADDED or MODIFIED). obj is borrowed. */
    void (*upsert)(void *ctx, const json_t *obj);
    /* An object is gone (DELETED, or absent from a re-list: then only metadata is given). */
    void (*remove)(void *ctx, const json_t *obj);
    /* A LIST finished and the watch is about to start (NULL: not needed). */
    void (*synced)(void *ctx);
};

struct kube_watch_stats {
    uint64_t lists, restarts_closed, restarts_expired, restarts_error, events;
};

/* path: the collection, e.g. /api/v1/namespaces/ns/pods; selector: a label selector (or NULL,
 * percent-encoded here). The watch starts listing at once. Strings are copied. */
struct kube_watch *kube_watch_new(struct kube_client *c, const char *path, const char *selector,
                                  const struct kube_watch_ops *ops);
void kube_watch_free(struct kube_watch *w);
/* Restarts a failed list or watch once its backoff has passed; call often. */
void kube_watch_tick(struct kube_watch *w, int64_t now_mono);
/* True once the first LIST has been delivered. */
bool kube_watch_synced(const struct kube_watch *w);
void kube_watch_stats(const struct kube_watch *w, struct kube_watch_stats *out);
/* Why the last LIST failed (borrowed), "" when it did not. */
const char *kube_watch_error(const struct kube_watch *w);

/* Appends a percent-encoded query value to out (selectors contain '=', ',', '/', ' '). */
void kube_query_escape(struct buf *out, const char *value);

#endif
