/*
 * bench_json_real: the cost of writing a real into an answer (GET /v1/jobs/{id}/metrics writes
 * one per point). jsonx_put_real (the shortest form that reads back the same double, "10.4461")
 * against jansson's own dump of the same value ("%.17g", "10.446099999999999"), which the
 * daemon used before. Half the values are what a training log prints (4 decimals), half any
 * double. Best of 5 runs of 1,000,000 values; one thread.
 *
 *   cmake --build build --target bench_json_real && build/bench/bench_json_real
 */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "core/buf.h"
#include "core/jsonx.h"

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int to_buf(const char *data, size_t size, void *ctx)
{
    buf_append(ctx, data, size);
    return 0;
}

int main(void)
{
    enum { N = 1000000, RUNS = 5 };
    double *v = malloc(N * sizeof(*v));
    for (int i = 0; i < N; i++) {
        v[i] = 2.5 * exp(-(double)i / 1e5) + 0.5 + 1e-4 * (i % 97);
        if (i % 2 == 0) { /* as a log prints it */
            char s[32];
            snprintf(s, sizeof(s), "%.4f", v[i]);
            v[i] = strtod(s, NULL);
        }
    }
    double ours = 1e9, theirs = 1e9;
    struct buf b = BUF_INIT;
    for (int r = 0; r < RUNS; r++) {
        buf_reset(&b);
        double t = now();
        for (int i = 0; i < N; i++)
            jsonx_put_real(&b, v[i]);
        t = now() - t;
        ours = t < ours ? t : ours;
        buf_reset(&b);
        t = now();
        for (int i = 0; i < N; i++) {
            json_t *j = json_real(v[i]);
            json_dump_callback(j, to_buf, &b, JSON_COMPACT | JSON_ENCODE_ANY);
            json_decref(j);
        }
        t = now() - t;
        theirs = t < theirs ? t : theirs;
    }
    printf("shortest round-trip (jsonx_put_real): %.0f ns/value\n", ours * 1e9 / N);
    printf("jansson %%.17g (json_dump_callback):   %.0f ns/value\n", theirs * 1e9 / N);
    buf_release(&b);
    free(v);
    return 0;
}
