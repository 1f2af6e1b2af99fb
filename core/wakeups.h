/*
 * notify: wake-ups keyed by a number (a job's pk). Log followers register a waiter for their
 * job; the log ingester calls notify_key() after each commit. Waiters live in the caller's
 * storage; callbacks run on the notifier's thread under the registry lock, so they must only
 * flag work (resume a connection), never block or call back into notify.
 */
#ifndef TY_NOTIFY_H
#define TY_NOTIFY_H

#include <stdint.h>

struct notify_waiter {
    int64_t key;
    void (*fn)(void *ctx);
    void *ctx;
    struct notify_waiter *next, *prev; /* owned by the registry while added */
    int added;
};

struct notify;

struct notify *notify_new(void);
void notify_free(struct notify *n);
/* Adds w (no-op when already added). */
void notify_add(struct notify *n, struct notify_waiter *w);
/* Removes w (no-op when not added). After return, w->fn is not running and will not run. */
void notify_remove(struct notify *n, struct notify_waiter *w);
/* Calls every waiter registered for key. */
void notify_key(struct notify *n, int64_t key);
/* Calls every waiter (periodic keep-alives, shutdown). */
void notify_all(struct notify *n);
/* Number of registered waiters (for /metrics). */
int notify_count(struct notify *n);

#endif
