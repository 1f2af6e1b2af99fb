/*
 * ratelimit: fixed-size table of token buckets keyed by a hash of the caller (token id or client
 * address). A collision evicts the older bucket, which can only make a limit more lenient, never
 * block a caller wrongly. Thread-safe (one mutex; the critical section is a few instructions).
 */
#include "api/ratelimit.h"

#include <pthread.h>

#include "core/clock.h"
#include "core/xalloc.h"

#define BUCKETS 1024

struct bucket {
    uint64_t key;
    double tokens;
    int64_t last_ns;
};

struct limiter {
    pthread_mutex_t lock;
    struct bucket buckets[BUCKETS];
};

static uint64_t hash_key(const char *s)
{
    uint64_t h = 1469598103934665603ULL; /* FNV-1a */
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ULL;
    return h ? h : 1;
}

void ratelimit_init(struct api *api)
{
    struct limiter *l = XNEW(struct limiter);
    pthread_mutex_init(&l->lock, NULL);
    api->ratelimit = l;
}

void ratelimit_release(struct api *api)
{
    struct limiter *l = api->ratelimit;
    if (!l)
        return;
    pthread_mutex_destroy(&l->lock);
    free(l);
    api->ratelimit = NULL;
}

int ratelimit_take(struct request *req, struct err *err)
{
    struct limiter *l = req->api->ratelimit;
    int rate = req->api->limits.rate_per_second;
    if (!l || rate <= 0)
        return 0;
    double burst = req->api->limits.rate_burst > 0 ? req->api->limits.rate_burst : rate;
    const char *who =
        req->who.token_id[0] ? req->who.token_id : (req->client_addr ? req->client_addr : "?");
    uint64_t key = hash_key(who);
    int64_t now = clock_mono_ns();
    pthread_mutex_lock(&l->lock);
    struct bucket *b = &l->buckets[key % BUCKETS];
    if (b->key != key) {
        b->key = key;
        b->tokens = burst;
        b->last_ns = now;
    }
    b->tokens += (double)(now - b->last_ns) / 1e9 * rate;
    if (b->tokens > burst)
        b->tokens = burst;
    b->last_ns = now;
    int ok = b->tokens >= 1.0;
    double wait_s = ok ? 0 : (1.0 - b->tokens) / rate;
    if (ok)
        b->tokens -= 1.0;
    pthread_mutex_unlock(&l->lock);
    if (ok)
        return 0;
    err_set(err, ERR_RATE_LIMITED, "too many requests from %s; slow down",
            req->who.name[0] ? req->who.name : "this client");
    err->retry_after = (int)wait_s + 1;
    return -1;
}
