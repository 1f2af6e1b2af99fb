/* spec_cache: an open-addressing table of parsed specs by job pk (see spec_cache.h). */
#include "server/control/spec_cache.h"

#include <stdbool.h>
#include <stdlib.h>

#include "core/xalloc.h"

struct entry {
    int64_t pk; /* 0: empty */
    json_t *spec;
    bool used; /* asked for since the last sweep */
};

struct spec_cache {
    struct entry *e;
    size_t cap, n; /* cap a power of two, at most half full */
};

struct spec_cache *spec_cache_new(void)
{
    struct spec_cache *c = XNEW(struct spec_cache);
    c->cap = 64;
    c->e = xcalloc(c->cap, sizeof(*c->e));
    return c;
}

void spec_cache_free(struct spec_cache *c)
{
    if (!c)
        return;
    for (size_t i = 0; i < c->cap; i++)
        json_decref(c->e[i].spec);
    free(c->e);
    free(c);
}

static size_t slot(const struct spec_cache *c, int64_t pk)
{
    size_t i = (size_t)((uint64_t)pk * 0x9E3779B97F4A7C15ull) & (c->cap - 1);
    while (c->e[i].pk && c->e[i].pk != pk)
        i = (i + 1) & (c->cap - 1);
    return i;
}

/* Rebuilds the table with room for n entries, keeping those that pass keep. */
static void rebuild(struct spec_cache *c, size_t want, bool only_used)
{
    struct entry *old = c->e;
    size_t oldcap = c->cap;
    while (c->cap < 2 * want)
        c->cap *= 2;
    c->e = xcalloc(c->cap, sizeof(*c->e));
    c->n = 0;
    for (size_t i = 0; i < oldcap; i++) {
        if (!old[i].pk)
            continue;
        if (only_used && !old[i].used) {
            json_decref(old[i].spec);
            continue;
        }
        struct entry *e = &c->e[slot(c, old[i].pk)];
        *e = old[i];
        e->used = false;
        c->n++;
    }
    free(old);
}

json_t *spec_cache_get(struct spec_cache *c, int64_t pk, const char *text)
{
    if (2 * (c->n + 1) > c->cap)
        rebuild(c, c->n + 1, false);
    struct entry *e = &c->e[slot(c, pk)];
    if (!e->pk) {
        json_t *spec = json_loads(text, 0, NULL);
        if (!spec)
            return NULL;
        *e = (struct entry){ .pk = pk, .spec = spec };
        c->n++;
    }
    e->used = true;
    return e->spec;
}

void spec_cache_sweep(struct spec_cache *c)
{
    rebuild(c, c->n, true);
}
