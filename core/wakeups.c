/* wakeups: a hashed registry of waiters guarded by one mutex. */
#include "core/wakeups.h"

#include <pthread.h>

#include "core/xalloc.h"

#define WAKEUPS_BUCKETS 256

struct wakeups {
    pthread_mutex_t lock;
    struct wakeup *buckets[WAKEUPS_BUCKETS];
    int count;
};

static size_t bucket_of(int64_t key)
{
    return (size_t)((uint64_t)key * 11400714819323198485ULL >> 56) % WAKEUPS_BUCKETS;
}

struct wakeups *wakeups_new(void)
{
    struct wakeups *n = XNEW(struct wakeups);
    pthread_mutex_init(&n->lock, NULL);
    return n;
}

void wakeups_free(struct wakeups *n)
{
    if (!n)
        return;
    pthread_mutex_destroy(&n->lock);
    free(n);
}

void wakeups_add(struct wakeups *n, struct wakeup *w)
{
    pthread_mutex_lock(&n->lock);
    if (!w->added) {
        struct wakeup **head = &n->buckets[bucket_of(w->key)];
        w->prev = NULL;
        w->next = *head;
        if (*head)
            (*head)->prev = w;
        *head = w;
        w->added = 1;
        n->count++;
    }
    pthread_mutex_unlock(&n->lock);
}

void wakeups_remove(struct wakeups *n, struct wakeup *w)
{
    pthread_mutex_lock(&n->lock);
    if (w->added) {
        if (w->prev)
            w->prev->next = w->next;
        else
            n->buckets[bucket_of(w->key)] = w->next;
        if (w->next)
            w->next->prev = w->prev;
        w->added = 0;
        n->count--;
    }
    pthread_mutex_unlock(&n->lock);
}

void wakeups_key(struct wakeups *n, int64_t key)
{
    pthread_mutex_lock(&n->lock);
    for (struct wakeup *w = n->buckets[bucket_of(key)]; w; w = w->next)
        if (w->key == key)
            w->fn(w->ctx);
    pthread_mutex_unlock(&n->lock);
}

int wakeups_count(struct wakeups *n)
{
    pthread_mutex_lock(&n->lock);
    int c = n->count;
    pthread_mutex_unlock(&n->lock);
    return c;
}
