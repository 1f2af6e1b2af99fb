/* kmap: chained hashing (FNV-1a), doubling at a load of 1. See kmap.h. */
#include "server/kube/kmap.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/xalloc.h"

static size_t hash(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return (size_t)h;
}

void kmap_init(struct kmap *m)
{
    m->nbuckets = 64;
    m->n = 0;
    m->buckets = xcalloc(m->nbuckets, sizeof(*m->buckets));
}

void kmap_release(struct kmap *m)
{
    for (size_t i = 0; i < m->nbuckets; i++) {
        struct kmap_entry *e = m->buckets[i];
        while (e) {
            struct kmap_entry *next = e->next;
            free(e->key);
            free(e);
            e = next;
        }
    }
    free(m->buckets);
    memset(m, 0, sizeof(*m));
}

void *kmap_get(const struct kmap *m, const char *key)
{
    for (struct kmap_entry *e = m->buckets[hash(key) % m->nbuckets]; e; e = e->next)
        if (strcmp(e->key, key) == 0)
            return e->value;
    return NULL;
}

static void grow(struct kmap *m)
{
    size_t n = m->nbuckets * 2;
    struct kmap_entry **b = xcalloc(n, sizeof(*b));
    for (size_t i = 0; i < m->nbuckets; i++) {
        struct kmap_entry *e = m->buckets[i];
        while (e) {
            struct kmap_entry *next = e->next;
            size_t k = hash(e->key) % n;
            e->next = b[k];
            b[k] = e;
            e = next;
        }
    }
    free(m->buckets);
    m->buckets = b;
    m->nbuckets = n;
}

void *kmap_put(struct kmap *m, const char *key, void *value)
{
    struct kmap_entry **head = &m->buckets[hash(key) % m->nbuckets];
    for (struct kmap_entry *e = *head; e; e = e->next) {
        if (strcmp(e->key, key) == 0) {
            void *old = e->value;
            e->value = value;
            return old;
        }
    }
    struct kmap_entry *e = XNEW(struct kmap_entry);
    e->key = xstrdup(key);
    e->value = value;
    e->next = *head;
    *head = e;
    if (++m->n > m->nbuckets)
        grow(m);
    return NULL;
}

void *kmap_del(struct kmap *m, const char *key)
{
    for (struct kmap_entry **p = &m->buckets[hash(key) % m->nbuckets]; *p; p = &(*p)->next) {
        if (strcmp((*p)->key, key) == 0) {
            struct kmap_entry *e = *p;
            void *v = e->value;
            *p = e->next;
            free(e->key);
            free(e);
            m->n--;
            return v;
        }
    }
    return NULL;
}

struct kmap_iter kmap_first(const struct kmap *m)
{
    struct kmap_iter it = { 0, NULL };
    for (; it.bucket < m->nbuckets && !(it.e = m->buckets[it.bucket]); it.bucket++) {
    }
    return it;
}

void kmap_next(const struct kmap *m, struct kmap_iter *it)
{
    if (it->e && it->e->next) {
        it->e = it->e->next;
        return;
    }
    it->e = NULL;
    for (it->bucket++; it->bucket < m->nbuckets && !(it->e = m->buckets[it->bucket]);
         it->bucket++) {
    }
}
