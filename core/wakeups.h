/*
 * wakeups: wake-ups keyed by a number (a job's pk). Log followers register a waiter for their
 * job; the log ingester calls wakeups_key() after each commit. Waiters live in the caller's
 * storage; callbacks run on the waking thread under the registry lock, so they must only
 * flag work (resume a connection), never block or call back into wakeups.
 */
#ifndef TY_WAKEUPS_H
#define TY_WAKEUPS_H

#include <stdint.h>

/* One waiter: fn(ctx) runs when its key is woken. */
struct wakeup {
    int64_t key;
    void (*fn)(void *ctx);
    void *ctx;
    struct wakeup *next, *prev; /* owned by the registry while added */
    int added;
};

struct wakeups;

struct wakeups *wakeups_new(void);
void wakeups_free(struct wakeups *n);
/* Adds w (no-op when already added). */
void wakeups_add(struct wakeups *n, struct wakeup *w);
/* Removes w (no-op when not added). After return, w->fn is not running and will not run. */
void wakeups_remove(struct wakeups *n, struct wakeup *w);
/* Calls every waiter registered for key. */
void wakeups_key(struct wakeups *n, int64_t key);
/* Number of registered waiters (for /metrics). */
int wakeups_count(struct wakeups *n);

#endif
