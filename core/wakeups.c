/* notify: a hashed registry of waiters guarded by one mutex. */
#include "core/notify.h"

#include <pthread.h>

#include "core/xalloc.h"

#define NOTIFY_BUCKETS 256

struct notify {
    pthread_mutex_t lock;
    struct notify_waiter *buckets[NOTIFY_BUCKETS];
    int count;
};

static size_t bucket_of(int64_t key)
{
    return (size_t)((uint64_t)key * 11400714819323198485ULL >> 56) % NOTIFY_BUCKETS;
}

struct notify *notify_new(void)
{
    struct notify *n = XNEW(struct notify);
    pthread_mutex_init(&n->lock, NULL);
    return n;
}

void notify_free(struct notify *n)
{
    if (!n)
        return;
    pthread_mutex_destroy(&n->lock);
    free(n);
}

void notify_add(struct notify *n, struct notify_waiter *w)
{
    pthread_mutex_lock(&n->lock);
    if (!w->added) {
        struct notify_waiter **head = &n->buckets[bucket_of(w->key)];
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

void notify_remove(struct notify *n, struct notify_waiter *w)
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

void notify_key(struct notify *n, int64_t key)
{
    pthread_mutex_lock(&n->lock);
    for (struct notify_waiter *w = n->buckets[bucket_of(key)]; w; w = w->next)
        if (w->key == key)
            w->fn(w->ctx);
    pthread_mutex_unlock(&n->lock);
}

void notify_all(struct notify *n)
{
    pthread_mutex_lock(&n->lock);
    for (size_t b = 0; b < NOTIFY_BUCKETS; b++)
        for (struct notify_waiter *w = n->buckets[b]; w; w = w->next)
            w->fn(w->ctx);
    pthread_mutex_unlock(&n->lock);
}

int notify_count(struct notify *n)
{
    pthread_mutex_lock(&n->lock);
    int c = n->count;
    pthread_mutex_unlock(&n->lock);
    return c;
}
