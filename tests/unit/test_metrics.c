/*
 * Tests of store/metrics: points by name and rank, a point stored twice kept once, NaN and
 * infinities, time ranges, downsampling of long series (bucket count, mean/min/max, last step)
 * and the log totals.
 */
#include <math.h>

#include "check.h"
#include "core/jsonx.h"
#include "store/metrics.h"
#include "store_fixture.h"

static const int64_t T0 = 1714564800LL * NS_PER_SEC;

static json_t *query(struct store *st, int64_t pk, const char *name, int rank, int64_t since,
                     int max)
{
    struct metric_query q = { .name = name, .rank = rank, .since = since, .max_points = max };
    struct err err;
    err_init(&err);
    json_t *o = store_metrics_query(st, pk, &q, &err);
    if (!o)
        fprintf(stderr, "query: %s\n", err.msg);
    err_release(&err);
    return o;
}

static void test_points(struct store *st, int64_t pk)
{
    struct metric_point p[] = {
        { "loss", 0, 1, 2.5, T0 + 1, 10 }, { "loss", 0, 2, 2.0, T0 + 2, 12 },
        { "loss", 1, 2, 2.1, T0 + 2, 13 }, { "lr", 0, 2, 1e-4, T0 + 2, 12 },
        { "loss", 0, 3, NAN, T0 + 3, 14 }, { "loss", 0, 4, INFINITY, T0 + 4, 15 },
        { "loss", 0, 2, 2.0, T0 + 2, 12 }, /* the same line again */
    };
    CHECK_INT(store_metrics_append(st, pk, p, sizeof(p) / sizeof(p[0]), NULL), 0);
    json_t *all = query(st, pk, NULL, -1, 0, 0);
    json_t *series = json_object_get(all, "series");
    CHECK_INT(json_array_size(series), 3); /* loss/0, loss/1, lr/0 */
    CHECK_STR(jsonx_str(json_array_get(series, 0), "name"), "loss");
    CHECK_INT(jsonx_int(json_array_get(series, 1), "rank", -1), 1);
    CHECK_STR(jsonx_str(json_array_get(series, 2), "name"), "lr");
    json_decref(all);
    json_t *loss0 = query(st, pk, "loss", 0, 0, 0);
    json_t *s0 = json_array_get(json_object_get(loss0, "series"), 0);
    json_t *pts = json_object_get(s0, "points");
    CHECK_INT(json_array_size(pts), 4); /* duplicate kept once */
    CHECK(json_real_value(json_object_get(json_array_get(pts, 0), "value")) == 2.5);
    CHECK_INT(jsonx_int(json_array_get(pts, 1), "step", 0), 2);
    CHECK_STR(jsonx_str(json_array_get(pts, 2), "value"), "nan");
    CHECK_STR(jsonx_str(json_array_get(pts, 3), "value"), "inf");
    CHECK(json_is_false(json_object_get(s0, "downsampled")));
    json_decref(loss0);
    json_t *since = query(st, pk, "loss", 0, T0 + 3, 0);
    CHECK_INT(jsonx_int(json_array_get(json_object_get(since, "series"), 0), "count", 0), 2);
    json_decref(since);
    json_t *none = query(st, pk, "grad_norm", -1, 0, 0);
    CHECK_INT(json_array_size(json_object_get(none, "series")), 0);
    json_decref(none);
}

/* A series keeps the points of the source that created it: a worker's heartbeat repeating
 * what the log said adds nothing; a metric only the worker reports is kept. */
static void test_sources(struct store *st, int64_t pk)
{
    struct metric_point hb[] = {
        { "loss", 0, 2, 2.0, T0 + 5, 0 },
        { "gpu_mem_gb", 0, 2, 71.5, T0 + 5, 0 },
        { "gpu_mem_gb", 0, 3, 71.9, T0 + 6, 0 },
    };
    CHECK_INT(store_metrics_append(st, pk, hb, 3, NULL), 0);
    json_t *o = query(st, pk, "loss", 0, 0, 0);
    CHECK_INT(jsonx_int(json_array_get(json_object_get(o, "series"), 0), "count", 0), 4);
    json_decref(o);
    o = query(st, pk, "gpu_mem_gb", 0, 0, 0);
    CHECK_INT(jsonx_int(json_array_get(json_object_get(o, "series"), 0), "count", 0), 2);
    json_decref(o);
    struct metric_point later = { "gpu_mem_gb", 0, 4, 72.0, T0 + 7, 99 }; /* from a log line */
    CHECK_INT(store_metrics_append(st, pk, &later, 1, NULL), 0);
    o = query(st, pk, "gpu_mem_gb", 0, 0, 0);
    CHECK_INT(jsonx_int(json_array_get(json_object_get(o, "series"), 0), "count", 0), 2);
    json_decref(o);
}

static void test_downsample(struct store *st, int64_t pk)
{
    enum { N = 10000 };
    struct metric_point *p = calloc(N, sizeof(*p));
    for (int i = 0; i < N; i++)
        p[i] =
            (struct metric_point){ "tokens_per_sec", 0, i, (double)i, T0 + (int64_t)i * NS_PER_SEC,
                                   1000 + i };
    store_metrics_append_async(st, pk, p, N);
    free(p);
    struct metric_point last = { "sync", 0, 0, 0, T0, 1 };
    CHECK_INT(store_metrics_append(st, pk, &last, 1, NULL), 0); /* writes run in order */
    json_t *o = query(st, pk, "tokens_per_sec", 0, 0, 100);
    json_t *s = json_array_get(json_object_get(o, "series"), 0);
    json_t *pts = json_object_get(s, "points");
    CHECK(json_is_true(json_object_get(s, "downsampled")));
    CHECK_INT(jsonx_int(s, "count", 0), N);
    CHECK(json_array_size(pts) <= 100 && json_array_size(pts) >= 90);
    json_t *first = json_array_get(pts, 0), *lastp = json_array_get(pts, json_array_size(pts) - 1);
    int64_t n0 = jsonx_int(first, "count", 0);
    CHECK(n0 >= 90 && n0 <= 110);
    CHECK(json_real_value(json_object_get(first, "min")) == 0.0);
    CHECK(fabs(json_real_value(json_object_get(first, "value")) - (double)(n0 - 1) / 2) < 1e-9);
    CHECK_INT(jsonx_int(lastp, "step", 0), N - 1);
    CHECK(json_real_value(json_object_get(lastp, "max")) == N - 1);
    int64_t total = 0;
    for (size_t i = 0; i < json_array_size(pts); i++)
        total += jsonx_int(json_array_get(pts, i), "count", 0);
    CHECK_INT(total, N);
    json_decref(o);
    /* A short range of the same series is not downsampled. */
    struct metric_query q = { .name = "tokens_per_sec",
                              .rank = 0,
                              .since = T0 + 100 * NS_PER_SEC,
                              .until = T0 + 150 * NS_PER_SEC,
                              .max_points = 100 };
    o = store_metrics_query(st, pk, &q, NULL);
    s = json_array_get(json_object_get(o, "series"), 0);
    CHECK(json_is_false(json_object_get(s, "downsampled")));
    CHECK_INT(json_array_size(json_object_get(s, "points")), 50);
    json_decref(o);
}

int main(void)
{
    struct fixture f;
    struct store *st = fixture_open(&f);
    CHECK(st != NULL);
    if (!st)
        return check_done();
    int64_t pk = fixture_job(st, "job-metrics");
    test_points(st, pk);
    test_sources(st, pk);
    test_downsample(st, pk);
    int64_t lines = -1, dropped = -1;
    CHECK_INT(store_log_totals(st, &lines, &dropped, NULL), 0);
    CHECK_INT(lines, 0);
    CHECK_INT(dropped, 0);
    fixture_close(&f);
    return check_done();
}
