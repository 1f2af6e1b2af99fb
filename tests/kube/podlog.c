/*
 * podlog: a chained hash table from "uid/container" to struct podlog. Lines are appended and
 * never edited; an instance is capped at MAX_LINES (oldest dropped), like a rotated file.
 * Lock: world lock held by every caller.
 */
#include "tests/kube/podlog.h"

#include "core/xalloc.h"

#define NBUCKETS  4096
#define MAX_LINES 100000

struct entry {
    char *key;
    char *uid;
    struct podlog log;
    struct entry *next;
};

struct podlogs {
    struct entry *buckets[NBUCKETS];
    int64_t seq;
};

static unsigned hash(const char *s)
{
    unsigned h = 2166136261u;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 16777619u;
    return h % NBUCKETS;
}

struct podlogs *podlogs_new(void)
{
    return XNEW(struct podlogs);
}

static void instance_clear(struct podlog_instance *in)
{
    for (size_t i = 0; i < in->n; i++)
        free(in->lines[i].text);
    free(in->lines);
    memset(in, 0, sizeof(*in));
}

static void entry_free(struct entry *e)
{
    instance_clear(&e->log.cur);
    instance_clear(&e->log.prev);
    free(e->key);
    free(e->uid);
    free(e);
}

void podlogs_free(struct podlogs *p)
{
    if (!p)
        return;
    for (size_t b = 0; b < NBUCKETS; b++)
        for (struct entry *e = p->buckets[b], *next; e; e = next) {
            next = e->next;
            entry_free(e);
        }
    free(p);
}

static struct entry *find(struct podlogs *p, const char *uid, const char *container, bool create)
{
    char key[512];
    snprintf(key, sizeof(key), "%s/%s", uid, container);
    unsigned h = hash(key);
    for (struct entry *e = p->buckets[h]; e; e = e->next)
        if (!strcmp(e->key, key))
            return e;
    if (!create)
        return NULL;
    struct entry *e = XNEW(struct entry);
    e->key = xstrdup(key);
    e->uid = xstrdup(uid);
    e->next = p->buckets[h];
    p->buckets[h] = e;
    return e;
}

const struct podlog *podlogs_get(struct podlogs *p, const char *uid, const char *container)
{
    struct entry *e = find(p, uid, container, false);
    return e ? &e->log : NULL;
}

void podlogs_start(struct podlogs *p, const char *uid, const char *container)
{
    struct entry *e = find(p, uid, container, true);
    int64_t seq = e->log.cur.seq;
    p->seq++;
    if (seq) {
        e->log.cur.done = true;
        instance_clear(&e->log.prev);
        e->log.prev = e->log.cur;
        memset(&e->log.cur, 0, sizeof(e->log.cur));
    }
    e->log.cur.seq = seq + 1;
}

void podlogs_append(struct podlogs *p, const char *uid, const char *container, int64_t ts,
                    const char *text)
{
    struct entry *e = find(p, uid, container, true);
    struct podlog_instance *in = &e->log.cur;
    p->seq++;
    if (in->n == MAX_LINES) {
        free(in->lines[0].text);
        memmove(in->lines, in->lines + 1, (in->n - 1) * sizeof(*in->lines));
        in->n--;
    }
    if (in->n == in->cap) {
        in->cap = in->cap ? in->cap * 2 : 64;
        in->lines = xrealloc(in->lines, in->cap * sizeof(*in->lines));
    }
    in->lines[in->n].ts = ts;
    in->lines[in->n].text = xstrdup(text);
    in->n++;
}

void podlogs_end(struct podlogs *p, const char *uid, const char *container)
{
    struct entry *e = find(p, uid, container, false);
    if (e)
        e->log.cur.done = true;
    p->seq++;
}

int64_t podlogs_seq(const struct podlogs *p)
{
    return p->seq;
}

void podlogs_drop(struct podlogs *p, const char *uid)
{
    p->seq++;
    for (size_t b = 0; b < NBUCKETS; b++) {
        struct entry **pp = &p->buckets[b];
        while (*pp) {
            struct entry *e = *pp;
            if (!strcmp(e->uid, uid)) {
                *pp = e->next;
                entry_free(e);
            } else {
                pp = &e->next;
            }
        }
    }
}
