/*
 * world: lock, wake-ups and small helpers shared by the test API server's modules.
 * Threading: world_lock() around every access; helpers without a world are pure.
 */
#include "tests/kube/world.h"

#include <errno.h>
#include <time.h>

#include "core/clock.h"
#include "core/crypto.h"
#include "tests/kube/podlog.h"
#include "tests/kube/sim.h"
#include "tests/kube/store.h"

void world_init(struct world *w, size_t history)
{
    memset(w, 0, sizeof(*w));
    pthread_mutex_init(&w->lock, NULL);
    pthread_condattr_t attr;
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&w->changed, &attr);
    pthread_condattr_destroy(&attr);
    w->store = store_new(history);
    w->logs = podlogs_new();
    w->event_index = json_object();
    w->speed = 1.0;
    w->max_watch_ns = 1800 * NS_PER_SEC;
    w->bookmark_ns = NS_PER_SEC;
}

void world_release(struct world *w)
{
    sim_free(w->sim);
    json_decref(w->event_index);
    podlogs_free(w->logs);
    store_free(w->store);
    pthread_cond_destroy(&w->changed);
    pthread_mutex_destroy(&w->lock);
}

void world_lock(struct world *w)
{
    pthread_mutex_lock(&w->lock);
}

void world_unlock(struct world *w)
{
    pthread_mutex_unlock(&w->lock);
}

void world_changed(struct world *w)
{
    pthread_cond_broadcast(&w->changed);
}

void world_wait(struct world *w, int64_t deadline_mono_ns)
{
    struct timespec ts = { .tv_sec = deadline_mono_ns / NS_PER_SEC,
                           .tv_nsec = deadline_mono_ns % NS_PER_SEC };
    int rc = pthread_cond_timedwait(&w->changed, &w->lock, &ts);
    (void)rc; /* ETIMEDOUT and spurious wake-ups look the same to callers: they re-check */
}

char *ktime(int64_t ns, char *out)
{
    time_t secs = (time_t)(ns / NS_PER_SEC);
    struct tm tm;
    gmtime_r(&secs, &tm);
    strftime(out, 32, "%Y-%m-%dT%H:%M:%SZ", &tm);
    return out;
}

char *ktime_nano(int64_t ns, char *out)
{
    time_t secs = (time_t)(ns / NS_PER_SEC);
    long frac = (long)(ns % NS_PER_SEC);
    struct tm tm;
    gmtime_r(&secs, &tm);
    size_t n = strftime(out, 32, "%Y-%m-%dT%H:%M:%S", &tm);
    if (frac) {
        char digits[16];
        snprintf(digits, sizeof(digits), "%09ld", frac);
        size_t len = 9;
        while (len > 0 && digits[len - 1] == '0')
            len--;
        digits[len] = '\0';
        n += (size_t)snprintf(out + n, 40 - n, ".%s", digits);
    }
    snprintf(out + n, 40 - n, "Z");
    return out;
}

void ktime_set(json_t *obj, const char *key, int64_t ns)
{
    char t[32];
    json_object_set_new(obj, key, json_string(ktime(ns, t)));
}

char *kuuid(char *out)
{
    unsigned char b[16];
    crypto_random(b, sizeof(b));
    b[6] = (unsigned char)((b[6] & 0x0f) | 0x40);
    b[8] = (unsigned char)((b[8] & 0x3f) | 0x80);
    char hex[33];
    crypto_hex(b, sizeof(b), hex);
    snprintf(out, 37, "%.8s-%.4s-%.4s-%.4s-%.12s", hex, hex + 8, hex + 12, hex + 16, hex + 20);
    return out;
}

json_t *kpath(const json_t *obj, const char *dotted)
{
    const json_t *cur = obj;
    const char *p = dotted;
    while (cur && *p) {
        const char *dot = strchr(p, '.');
        size_t len = dot ? (size_t)(dot - p) : strlen(p);
        cur = json_object_getn(cur, p, len);
        p += len + (dot ? 1 : 0);
        if (!dot)
            break;
    }
    return (json_t *)cur;
}

json_t *kobj(json_t *obj, const char *key)
{
    json_t *v = json_object_get(obj, key);
    if (!json_is_object(v)) {
        v = json_object();
        json_object_set_new(obj, key, v);
    }
    return v;
}

const char *kstr(const json_t *obj, const char *key)
{
    const char *s = json_string_value(json_object_get(obj, key));
    return s ? s : "";
}
