/*
 * kmap: a string-keyed hash map of pointers, for the Kubernetes executor's caches (jobs by
 * object name, pods by uid, nodes by name). Keys are copied; values are borrowed (the caller
 * owns and frees them). Not thread-safe.
 */
#ifndef TY_KUBE_KMAP_H
#define TY_KUBE_KMAP_H

#include <stdbool.h>
#include <stddef.h>

struct kmap_entry {
    char *key;
    void *value;
    struct kmap_entry *next;
};

struct kmap {
    struct kmap_entry **buckets;
    size_t nbuckets, n;
};

void kmap_init(struct kmap *m);
/* Frees the map's entries and keys, not the values. */
void kmap_release(struct kmap *m);
void *kmap_get(const struct kmap *m, const char *key);
/* Sets key to value; returns the value it replaces (or NULL). */
void *kmap_put(struct kmap *m, const char *key, void *value);
/* Removes key; returns its value (or NULL). */
void *kmap_del(struct kmap *m, const char *key);

/* Iteration: for (struct kmap_iter it = kmap_first(m); it.e; kmap_next(m, &it)) ...
 * The current entry may be deleted with kmap_del while iterating only after kmap_next. */
struct kmap_iter {
    size_t bucket;
    struct kmap_entry *e;
};
struct kmap_iter kmap_first(const struct kmap *m);
void kmap_next(const struct kmap *m, struct kmap_iter *it);

#endif
