/*
 * health_internal: the registry's entries. health.c (registry, ingest, attempts, summaries),
 * healthsave.c (persistence, per-rank health JSON) and healthwatch.c (stalls, worker reports,
 * GPUs, Prometheus text) are one module in three files: each reads and writes the entries and
 * the registry's locks, so they share struct health and struct entry whole. The feeder thread
 * (healthfeed.c) keeps its queue to itself behind feeder_new/feeder_free and health_feed. Not
 * for use outside server/health/.
 *
 * Lock order: h->lock, then an entry's lock, then h->nodes_lock or the feeder's lock (both
 * leaves); nobody takes h->lock while holding an entry lock. Entries are unlinked and freed
 * only on the controller thread (health_forget), so that thread may keep an entry pointer after
 * releasing h->lock.
 */
#ifndef TY_HEALTH_INTERNAL_H
#define TY_HEALTH_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>

#include "server/health/health.h"
#include "store/metrics.h"

#define HEALTH_BUCKETS 256

struct hrank {
    char node[128];
    char pod[128];
    int64_t heartbeat_ns; /* when the last heartbeat arrived, 0: none */
    int64_t heartbeat_step;
    int64_t dropped; /* metrics the worker dropped while the daemon was away */
    bool straggler;
    int preflight; /* 0: none, 1: passed, -1: failed */
    char preflight_detail[200];
};

/* A platform event kept to replay into a rebuilt diagnosis. */
struct hevent {
    int rank;
    int64_t time_ns;
    char *node, *reason, *message;
};

struct entry {
    int64_t pk;
    char id[32];
    char name[64];
    int attempt;
    int world;
    pthread_mutex_t lock;
    struct diag *d;
    bool partial; /* adopted after a daemon restart: earlier lines were not fed */
    bool dirty;
    int64_t saved_ns;       /* monotonic time of the last save, 0: never */
    uint64_t saved_hash[4]; /* diagnosis, progress, stall, health as last saved */
    bool stalled;
    json_t *stall; /* the last verdict (stall_json), NULL before the first check */
    struct hrank *ranks;
    size_t nranks;
    struct hevent *events;
    size_t nevents;
    struct entry *next;
};

struct nodegpu {
    char *name;
    json_t *gpus;
    json_t *conditions;
    int64_t at;
    struct nodegpu *next;
};

struct health {
    struct store *st;
    struct health_options o;
    pthread_mutex_t lock;
    struct entry *buckets[HEALTH_BUCKETS];
    pthread_mutex_t nodes_lock; /* a leaf: may be taken under an entry lock */
    struct nodegpu *nodes;
    atomic_ullong lines_fed, samples_stored, saves, replays;
    /* The feeder thread and its queue of the lines the collector committed (healthfeed.c). */
    struct feeder *feeder;
    /* The samples buffer of the thread feeding (one at a time); health.c. */
    struct samples {
        struct progress_sample *s;
        size_t n, cap;
        struct metric_point *p;
    } feed;
};

/* Feeds one batch of a job's stored lines to its diagnosis and stores the samples (any thread
 * but one at a time per job: the collector's, or the feeder's). */
void health_feed(struct health *h, int64_t pk, const struct log_line *lines, size_t n);
/* The feeder (healthfeed.c), its state private to that file: made with the registry, started
 * by health_start; feeder_free stops it after it fed what is queued (health_free). */
struct feeder;
struct feeder *feeder_new(struct health *h);
void feeder_free(struct feeder *f);

/* The entry of pk with its lock held, or NULL. Release with entry_unlock(). */
struct entry *entry_acquire(struct health *h, int64_t pk);
void entry_unlock(struct entry *e);
/* The rank's record (grown as needed); NULL for ranks out of range. Entry lock held. */
struct hrank *entry_rank(struct entry *e, int rank);

/* Builds what to save of e (entry lock held) and saves it; the store write happens after the
 * lock is released when the caller passes the returned record to health_save_commit(). */
struct health_save;
struct health_save *health_save_prepare(struct health *h, struct entry *e, bool force,
                                        const json_t *decision);
void health_save_commit(struct health *h, struct health_save *p, bool wait);

/* {"ranks": [...], "nodes": {...}} of the entry (entry lock held, h->lock not). */
json_t *health_entry_json(struct health *h, struct entry *e);

#endif
