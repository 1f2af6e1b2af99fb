/*
 * stall: stall and straggler rules over per-rank timelines (see stall.h). The limit comes from
 * the job's own cadence, so a job that logs every 2 s and one that logs every 20 min are both
 * judged fairly; the floor keeps fast jobs from being flagged by one slow checkpoint.
 *
 * Pure; thread-safe. Scratch memory is allocated per call and freed before returning.
 */
#include "server/diag/stall.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "core/jsonx.h"
#include "core/xalloc.h"
#include "server/diag/classify.h"

void stall_options_default(struct stall_options *o)
{
    o->floor_ns = 5 * 60 * NS_PER_SEC;
    o->startup_ns = 30 * 60 * NS_PER_SEC;
    o->k = 5.0;
    o->percentile = 0.9;
    o->window = 20;
    o->min_intervals = 3;
    o->straggler_factor = 1.5;
    o->straggler_min_ranks = 3;
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

static int cmp_dbl(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Nearest-rank percentile of a sorted array. */
static int64_t pct_i64(const int64_t *v, size_t n, double p)
{
    size_t idx = (size_t)(p * (double)n + 0.999999);
    if (idx == 0)
        idx = 1;
    if (idx > n)
        idx = n;
    return v[idx - 1];
}

static double median(double *v, size_t n)
{
    qsort(v, n, sizeof(double), cmp_dbl);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

void stall_check(const struct stall_rank *ranks, size_t n, int64_t now_ns,
                 const struct stall_options *o, struct stall_result *out)
{
    memset(out, 0, sizeof(*out));
    out->last_step = -1;
    size_t cap = 0;
    for (size_t i = 0; i < n; i++)
        cap += ranks[i].n < o->window + 1 ? ranks[i].n : o->window + 1;
    int64_t *iv = xmalloc((cap + 1) * sizeof(int64_t));
    size_t m = 0;
    int64_t last_line = 0, longest = 0;
    for (size_t i = 0; i < n; i++) {
        const struct stall_rank *r = &ranks[i];
        if (r->last_line_ns > last_line)
            last_line = r->last_line_ns;
        if (r->n == 0)
            continue;
        if (r->times[r->n - 1] > out->last_progress_ns)
            out->last_progress_ns = r->times[r->n - 1];
        if (r->steps[r->n - 1] > out->last_step)
            out->last_step = r->steps[r->n - 1];
        size_t from = r->n > o->window + 1 ? r->n - o->window - 1 : 0;
        for (size_t j = from + 1; j < r->n; j++) {
            int64_t d = r->times[j] - r->times[j - 1];
            if (d > 0)
                iv[m++] = d;
            if (d > longest)
                longest = d;
        }
    }
    out->intervals = m;
    if (out->last_progress_ns == 0) { /* no step ever seen: judge the log output */
        out->basis = last_line ? STALL_BASIS_OUTPUT : STALL_BASIS_NONE;
        out->last_progress_ns = last_line;
        out->limit_ns = o->startup_ns > o->floor_ns ? o->startup_ns : o->floor_ns;
    } else if (m < o->min_intervals) {
        out->basis = STALL_BASIS_STEPS;
        int64_t lim = o->startup_ns > o->floor_ns ? o->startup_ns : o->floor_ns;
        int64_t derived = (int64_t)(o->k * (double)longest);
        out->limit_ns = derived > lim ? derived : lim;
    } else {
        out->basis = STALL_BASIS_STEPS;
        qsort(iv, m, sizeof(int64_t), cmp_i64);
        out->interval_pct_ns = pct_i64(iv, m, o->percentile);
        int64_t derived = (int64_t)(o->k * (double)out->interval_pct_ns);
        out->limit_ns = derived > o->floor_ns ? derived : o->floor_ns;
    }
    free(iv);
    if (out->basis == STALL_BASIS_NONE)
        return;
    out->idle_ns = now_ns - out->last_progress_ns;
    out->stalled = out->idle_ns > out->limit_ns;
}

/* Seconds per step of one rank over the window, or -1 when unknown. */
static double rank_step_time(const struct stall_rank *r, size_t window, double *scratch)
{
    size_t k = 0;
    if (r->ndurations > 0) {
        size_t from = r->ndurations > window ? r->ndurations - window : 0;
        for (size_t j = from; j < r->ndurations; j++)
            if (r->durations[j] > 0)
                scratch[k++] = r->durations[j];
    } else {
        size_t from = r->n > window + 1 ? r->n - window - 1 : 0;
        for (size_t j = from + 1; j < r->n; j++) {
            int64_t ds = r->steps[j] - r->steps[j - 1], dt = r->times[j] - r->times[j - 1];
            if (ds > 0 && dt > 0)
                scratch[k++] = (double)dt / 1e9 / (double)ds;
        }
    }
    return k ? median(scratch, k) : -1;
}

static int cmp_ratio_desc(const void *a, const void *b)
{
    double x = ((const struct stall_straggler *)a)->ratio;
    double y = ((const struct stall_straggler *)b)->ratio;
    return (x < y) - (x > y);
}

size_t stall_stragglers(const struct stall_rank *ranks, size_t n, const struct stall_options *o,
                        struct stall_straggler *out, size_t max)
{
    double *per = xmalloc((n + 1) * sizeof(double));
    double *sorted = xmalloc((n + 1) * sizeof(double));
    double *scratch = xmalloc((o->window + 2) * sizeof(double));
    struct stall_straggler *all = xmalloc((n + 1) * sizeof(*all));
    size_t have = 0, found = 0;
    for (size_t i = 0; i < n; i++) {
        per[i] = rank_step_time(&ranks[i], o->window, scratch);
        if (per[i] > 0)
            sorted[have++] = per[i];
    }
    double med = have > 0 && have >= o->straggler_min_ranks ? median(sorted, have) : 0;
    for (size_t i = 0; i < n && med > 0; i++)
        if (per[i] > o->straggler_factor * med)
            all[found++] = (struct stall_straggler){ ranks[i].rank, per[i], med, per[i] / med };
    qsort(all, found, sizeof(*all), cmp_ratio_desc);
    if (found > max)
        found = max;
    if (found)
        memcpy(out, all, found * sizeof(*all));
    free(per);
    free(sorted);
    free(scratch);
    free(all);
    return found;
}

size_t stall_quiet(const struct stall_result *r, const struct stall_rank *ranks, size_t n, int *out,
                   size_t max)
{
    int64_t latest = 0;
    for (size_t i = 0; i < n; i++)
        if (ranks[i].last_line_ns > latest)
            latest = ranks[i].last_line_ns;
    /* Silent for half the limit before another rank's last line: that one is alive (NCCL
     * retries, a heartbeat), the silent one is where to look. Ranks are compared with each
     * other, not with the clock, so lines still on their way through ingest change nothing. */
    int64_t quiet_for = r->limit_ns / 2;
    size_t k = 0;
    for (size_t i = 0; i < n && k < max; i++)
        if (ranks[i].last_line_ns == 0 || latest - ranks[i].last_line_ns >= quiet_for)
            out[k++] = ranks[i].rank;
    if (k)
        return k;
    /* Everyone silent, or everyone talking: the ranks behind the others' step, if any. */
    for (size_t i = 0; i < n && k < max; i++) {
        const struct stall_rank *q = &ranks[i];
        int64_t step = q->n ? q->steps[q->n - 1] : -1;
        if (r->basis == STALL_BASIS_STEPS && step < r->last_step)
            out[k++] = q->rank;
    }
    return k;
}

static const struct stall_rank *rank_of(const struct stall_rank *ranks, size_t n, int rank)
{
    for (size_t i = 0; i < n; i++)
        if (ranks[i].rank == rank)
            return &ranks[i];
    return NULL;
}

/* "12:03:20Z" of a time (the date is the job's page's business). */
static void clock_of(int64_t ns, char *out, size_t cap)
{
    char ts[CLOCK_RFC3339_MAX];
    clock_format(ns, ts);
    snprintf(out, cap, "%.8sZ", ts + 11);
}

void stall_summary(const struct stall_result *r, const struct stall_rank *ranks, size_t n,
                   const int *quiet, size_t nquiet, char *out, size_t cap)
{
    char what[128], when[16];
    clock_of(r->last_progress_ns, when, sizeof(when));
    if (r->basis == STALL_BASIS_STEPS)
        snprintf(what, sizeof(what), "no training step since %s (step %lld, limit %.0f s)", when,
                 (long long)r->last_step, (double)r->limit_ns / 1e9);
    else
        snprintf(what, sizeof(what), "no log output since %s (limit %.0f s)", when,
                 (double)r->limit_ns / 1e9);
    const struct stall_rank *q = nquiet ? rank_of(ranks, n, quiet[0]) : NULL;
    if (!q) {
        int64_t latest = 0;
        for (size_t i = 0; i < n; i++)
            if (ranks[i].last_line_ns > latest)
                latest = ranks[i].last_line_ns;
        /* silent: nothing printed well after the last step (lag in ingest is not speech) */
        bool silent = latest - r->last_progress_ns < r->limit_ns / 2;
        snprintf(out, cap, "%s: %s",
                 !silent ? "every rank still prints, but nothing advances"
                 : n > 1 ? "every rank went quiet"
                         : "the job went quiet",
                 what);
        return;
    }
    char line[120] = "", at[16] = "";
    if (q->last_line)
        classify_clean(line, sizeof(line), q->last_line, q->last_len);
    if (q->last_line_ns)
        clock_of(q->last_line_ns, at, sizeof(at));
    char more[32] = "";
    if (nquiet > 1)
        snprintf(more, sizeof(more), " and %zu more rank%s", nquiet - 1, nquiet > 2 ? "s" : "");
    if (q->last_line_ns)
        snprintf(out, cap, "rank %d%s went quiet: its last line, at %s, was \"%s\"; %s", q->rank,
                 more, at, line, what);
    else
        snprintf(out, cap, "rank %d%s never printed; %s", q->rank, more, what);
}

static const char *basis_name(enum stall_basis b)
{
    return b == STALL_BASIS_STEPS ? "steps" : b == STALL_BASIS_OUTPUT ? "output" : "none";
}

json_t *stall_json(const struct stall_result *r, const struct stall_rank *ranks, size_t n,
                   const struct stall_straggler *s, size_t ns)
{
    json_t *o = json_object();
    json_object_set_new(o, "stalled", json_boolean(r->stalled));
    json_object_set_new(o, "basis", json_string(basis_name(r->basis)));
    json_object_set_new(o, "limit_seconds", json_real((double)r->limit_ns / 1e9));
    json_object_set_new(o, "idle_seconds", json_real((double)r->idle_ns / 1e9));
    jsonx_set_time(o, "last_progress", r->last_progress_ns);
    json_object_set_new(o, "last_step",
                        r->last_step >= 0 ? json_integer(r->last_step) : json_null());
    json_object_set_new(o, "interval_seconds", json_real((double)r->interval_pct_ns / 1e9));
    json_t *arr = json_array();
    for (size_t i = 0; i < n; i++) {
        json_t *e = json_object();
        char line[512];
        json_object_set_new(e, "rank", json_integer(ranks[i].rank));
        jsonx_set_time(e, "last_line_time", ranks[i].last_line_ns);
        json_object_set_new(e, "last_seq", json_integer(ranks[i].last_seq));
        classify_clean(line, sizeof(line), ranks[i].last_line ? ranks[i].last_line : "",
                       ranks[i].last_line ? ranks[i].last_len : 0);
        json_object_set_new(e, "last_line", json_string(line));
        json_array_append_new(arr, e);
    }
    json_object_set_new(o, "ranks", arr);
    arr = json_array();
    for (size_t i = 0; i < ns; i++) {
        json_t *e = json_object();
        json_object_set_new(e, "rank", json_integer(s[i].rank));
        json_object_set_new(e, "step_seconds", json_real(s[i].step_s));
        json_object_set_new(e, "median_seconds", json_real(s[i].median_s));
        json_object_set_new(e, "ratio", json_real(s[i].ratio));
        json_array_append_new(arr, e);
    }
    json_object_set_new(o, "stragglers", arr);
    int quiet[STALL_QUIET_MAX];
    size_t nq = r->basis == STALL_BASIS_NONE ? 0 : stall_quiet(r, ranks, n, quiet, STALL_QUIET_MAX);
    arr = json_array();
    for (size_t i = 0; i < nq; i++)
        json_array_append_new(arr, json_integer(quiet[i]));
    json_object_set_new(o, "quiet", arr);
    char text[512];
    stall_summary(r, ranks, n, quiet, nq, text, sizeof(text));
    json_object_set_new(o, "summary", r->stalled ? json_string(text) : json_null());
    return o;
}
