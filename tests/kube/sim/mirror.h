/*
 * mirror: the simulator's view of a real API server and its hands there, as an informer and
 * a client of a controller are. Watches (the daemon's own list-then-watch reflector,
 * server/kube/watch.c) keep the world's store equal to the server's objects; what the
 * simulated controllers and kubelets write into the store goes to the server:
 *   - a new object: POST; a changed one: a merge PATCH of what changed, to /status when the
 *     status changed (the kubelet's and the operators' only writes), else to the object;
 *   - a deletion (gc_delete, a kubelet's final word, a lost node's pods): DELETE;
 *   - an Event: POST, and a PATCH of count and lastTimestamp when it repeats.
 * One write per object is in flight at a time. The store keeps the server's version plus the
 * changes not yet acknowledged: every newer version from the server (a watch event, or the
 * answer to a write) has those changes re-applied (mpatch.c), so controllers always read the
 * server's state with their own pending writes on top, and a write the server cannot take
 * (a field the API does not have) is sent once, not forever.
 *
 * Threads: mirror_tick() and the client's callbacks run on the simulator's loop thread; the
 * world_remote calls and the store's write hook come from whoever holds the world lock (the
 * loop, or an HTTP thread of the control API) and only queue work.
 */
#ifndef KSIM_MIRROR_H
#define KSIM_MIRROR_H

#include <stdbool.h>
#include <stdint.h>

#include "core/buf.h"
#include "server/kube/client.h"

struct world;
struct resource;
struct mirror;

/* w and c are borrowed and must outlive the mirror. Sets w->remote and the store's write hook
 * (world lock not held). Caller frees with mirror_free(). */
struct mirror *mirror_new(struct world *w, struct kube_client *c, int kubelet_port);
void mirror_free(struct mirror *m);
/* Lists and watches res (all namespaces) into the store; selector: a label selector or NULL. */
void mirror_watch(struct mirror *m, const struct resource *res, const char *selector);
/* Every watch has delivered its first list. */
bool mirror_synced(struct mirror *m);
/* Restarts failed watches and sends the queued writes (loop thread; takes the world lock). */
void mirror_tick(struct mirror *m, int64_t now_mono);
/* Writes queued or in flight (0: the server has everything the simulation wrote). */
size_t mirror_pending(struct mirror *m);
/* Appends counters as JSON members ("requests": N, ...) for /_test/state. */
void mirror_stats(struct mirror *m, struct buf *out);
/* The API path of res's collection (ns "" or NULL: all namespaces) or of one object. */
void mirror_path(const struct resource *res, const char *ns, const char *name, char *out,
                 size_t size);

#endif
