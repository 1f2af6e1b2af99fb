/*
 * healthwatch: what the health registry watches besides log lines (see health.h): stalls and
 * stragglers of running attempts, worker heartbeats and preflight reports, GPU telemetry of
 * nodes, and the per-job Prometheus text.
 *
 * Threads: health_stall on the controller thread; heartbeats, preflights and metrics on HTTP
 * threads; health_node_gpus on the GPU poller's thread. Locks as in health_internal.h.
 */
#include "server/health/health_internal.h"

#include <math.h>

#include "core/clock.h"
#include "core/jsonx.h"
#include "core/prom.h"
#include "core/xalloc.h"
#include "server/diag/classify.h"

#define MAX_STRAGGLERS 8

static void append_last_lines(char *out, size_t cap, const struct stall_rank *tl, size_t n)
{
    size_t used = strlen(out);
    for (size_t i = 0; i < n && used + 1 < cap; i++) {
        char line[160] = "";
        if (tl[i].last_line)
            classify_clean(line, sizeof(line), tl[i].last_line, tl[i].last_len);
        int w = snprintf(out + used, cap - used, "%srank %d: %s",
                         i ? " | " : "; last lines: ", tl[i].rank, line[0] ? line : "(none)");
        if (w < 0)
            break;
        used += (size_t)w < cap - used ? (size_t)w : cap - used - 1;
    }
}

static void describe(const struct stall_result *r, const struct stall_rank *tl, size_t n, char *out,
                     size_t cap)
{
    if (r->basis == STALL_BASIS_STEPS)
        snprintf(out, cap, "no training step for %.0f s (limit %.0f s, last step %lld)",
                 (double)r->idle_ns / 1e9, (double)r->limit_ns / 1e9, (long long)r->last_step);
    else
        snprintf(out, cap, "no log output for %.0f s (limit %.0f s)", (double)r->idle_ns / 1e9,
                 (double)r->limit_ns / 1e9);
    append_last_lines(out, cap, tl, n);
}

/* Flags the stragglers of this check; reports those not flagged at the last one (entry lock
 * held). */
static void stragglers(struct entry *e, const struct stall_straggler *st, size_t ns,
                       struct health_stall_report *out)
{
    bool was[MAX_STRAGGLERS] = { false };
    for (size_t i = 0; i < ns; i++)
        was[i] = (size_t)st[i].rank < e->nranks && e->ranks[st[i].rank].straggler;
    for (size_t i = 0; i < e->nranks; i++)
        e->ranks[i].straggler = false;
    for (size_t i = 0; i < ns; i++) {
        struct hrank *r = entry_rank(e, st[i].rank);
        if (!r)
            continue;
        r->straggler = true;
        if (was[i] || out->nnew_stragglers >= MAX_STRAGGLERS)
            continue;
        out->new_stragglers[out->nnew_stragglers++] = st[i].rank;
        snprintf(out->straggler_message, sizeof(out->straggler_message),
                 "rank %d takes %.2f s per step, %.1fx the median of %.2f s", st[i].rank,
                 st[i].step_s, st[i].ratio, st[i].median_s);
    }
}

bool health_stall(struct health *h, int64_t pk, const struct stall_options *o, int64_t now,
                  struct health_stall_report *out)
{
    memset(out, 0, sizeof(*out));
    struct entry *e = entry_acquire(h, pk);
    if (!e)
        return false;
    size_t cap = progress_nranks(diag_progress(e->d)) + 1;
    struct stall_rank *tl = xcalloc(cap, sizeof(*tl));
    size_t n = progress_timelines(diag_progress(e->d), tl, cap);
    stall_check(tl, n, now, o, &out->r);
    struct stall_straggler st[MAX_STRAGGLERS];
    size_t ns = stall_stragglers(tl, n, o, st, MAX_STRAGGLERS);
    stragglers(e, st, ns, out);
    json_decref(e->stall);
    e->stall = stall_json(&out->r, tl, n, st, ns);
    if (out->r.stalled && !e->stalled) {
        out->change = HEALTH_STALL_BEGAN;
        diag_stall(e->d, &out->r);
        describe(&out->r, tl, n, out->message, sizeof(out->message));
    } else if (!out->r.stalled && e->stalled) {
        out->change = HEALTH_STALL_ENDED;
        snprintf(out->message, sizeof(out->message), "training progresses again");
    }
    if (out->change != HEALTH_STALL_SAME || out->nnew_stragglers)
        e->dirty = true;
    e->stalled = out->r.stalled;
    free(tl);
    entry_unlock(e);
    return true;
}

void health_heartbeat(struct health *h, int64_t pk, int rank, const json_t *body)
{
    struct entry *e = entry_acquire(h, pk);
    if (!e)
        return;
    struct hrank *r = entry_rank(e, rank);
    if (r) {
        r->heartbeat_ns = clock_now_ns();
        r->heartbeat_step = jsonx_int(body, "step", r->heartbeat_step);
        r->dropped += jsonx_int(body, "dropped", 0);
        e->dirty = true;
    }
    entry_unlock(e);
}

/* "name: detail; name: detail" of the checks that failed. */
static void failed_checks(const json_t *report, char *out, size_t cap)
{
    size_t i, used = 0;
    json_t *c;
    out[0] = '\0';
    json_array_foreach(json_object_get(report, "checks"), i, c)
    {
        const char *status = jsonx_str(c, "status");
        if (!status || strcmp(status, "fail") != 0 || used + 1 >= cap)
            continue;
        const char *name = jsonx_str(c, "name"), *detail = jsonx_str(c, "detail");
        int w = snprintf(out + used, cap - used, "%s%s%s%s", used ? "; " : "",
                         name ? name : "check", detail ? ": " : "", detail ? detail : "");
        if (w > 0)
            used += (size_t)w < cap - used ? (size_t)w : cap - used - 1;
    }
    if (!out[0])
        snprintf(out, cap, "the report says not ok");
}

bool health_preflight(struct health *h, int64_t pk, int rank, const char *node,
                      const json_t *report, char *reason_out, size_t cap)
{
    bool ok = json_is_true(json_object_get(report, "ok"));
    char detail[512] = "passed";
    if (!ok)
        failed_checks(report, detail, sizeof(detail));
    snprintf(reason_out, cap, "%s", detail);
    struct entry *e = entry_acquire(h, pk);
    if (!e)
        return !ok;
    struct hrank *r = entry_rank(e, rank);
    if (r) {
        r->preflight = ok ? 1 : -1;
        classify_clean(r->preflight_detail, sizeof(r->preflight_detail), detail, strlen(detail));
        if (!node && r->node[0])
            node = r->node;
    }
    if (!ok) {
        struct ending_event ev = { .rank = rank,
                                   .node = node,
                                   .time_ns = clock_now_ns(),
                                   .reason = "PreflightFailed",
                                   .message = detail };
        diag_event(e->d, &ev);
        e->events = xrealloc(e->events, (e->nevents + 1) * sizeof(*e->events));
        e->events[e->nevents++] = (struct hevent){ .rank = rank,
                                                   .time_ns = ev.time_ns,
                                                   .node = node ? xstrdup(node) : NULL,
                                                   .reason = xstrdup(ev.reason),
                                                   .message = xstrdup(detail) };
    }
    e->dirty = true;
    entry_unlock(e);
    return !ok;
}

void health_node_gpus(struct health *h, const char *node, json_t *gpus, json_t *conditions)
{
    pthread_mutex_lock(&h->nodes_lock);
    struct nodegpu *n = h->nodes;
    while (n && strcmp(n->name, node) != 0)
        n = n->next;
    if (!n) {
        n = XNEW(struct nodegpu);
        n->name = xstrdup(node);
        n->next = h->nodes;
        h->nodes = n;
    }
    json_decref(n->gpus);
    json_decref(n->conditions);
    n->gpus = gpus;
    n->conditions = conditions;
    n->at = clock_now_ns();
    pthread_mutex_unlock(&h->nodes_lock);
    pthread_mutex_lock(&h->lock); /* the jobs on that node show it at their next save */
    for (size_t b = 0; b < HEALTH_BUCKETS; b++) {
        for (struct entry *e = h->buckets[b]; e; e = e->next) {
            pthread_mutex_lock(&e->lock);
            for (size_t i = 0; i < e->nranks && !e->dirty; i++)
                e->dirty = strcmp(e->ranks[i].node, node) == 0;
            pthread_mutex_unlock(&e->lock);
        }
    }
    pthread_mutex_unlock(&h->lock);
}

void health_node_line(struct health *h, const char *node, const char *text)
{
    int64_t now = clock_now_ns();
    pthread_mutex_lock(&h->lock);
    for (size_t b = 0; b < HEALTH_BUCKETS; b++) {
        for (struct entry *e = h->buckets[b]; e; e = e->next) {
            pthread_mutex_lock(&e->lock);
            for (size_t i = 0; i < e->nranks; i++) {
                if (strcmp(e->ranks[i].node, node) != 0)
                    continue;
                struct diag_line l = {
                    .rank = (int)i, .seq = 0, .time_ns = now, .text = text, .len = strlen(text)
                };
                diag_feed(e->d, &l, NULL, 0);
                e->dirty = true;
                break;
            }
            pthread_mutex_unlock(&e->lock);
        }
    }
    pthread_mutex_unlock(&h->lock);
}

static bool has(char **v, size_t n, const char *s)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(v[i], s) == 0)
            return true;
    return false;
}

size_t health_nodes(struct health *h, char ***out)
{
    char **v = NULL;
    size_t n = 0;
    pthread_mutex_lock(&h->lock);
    for (size_t b = 0; b < HEALTH_BUCKETS; b++) {
        for (struct entry *e = h->buckets[b]; e; e = e->next) {
            pthread_mutex_lock(&e->lock);
            for (size_t i = 0; i < e->nranks; i++) {
                if (!e->ranks[i].node[0] || has(v, n, e->ranks[i].node))
                    continue;
                v = xrealloc(v, (n + 1) * sizeof(*v));
                v[n++] = xstrdup(e->ranks[i].node);
            }
            pthread_mutex_unlock(&e->lock);
        }
    }
    pthread_mutex_unlock(&h->lock);
    *out = v;
    return n;
}

/* One line per job of a metric family, values from f (NaN: no line). */
typedef double (*job_value_fn)(struct entry *e, const struct progress_state *ps, const char **unit);

static double v_step(struct entry *e, const struct progress_state *ps, const char **unit)
{
    (void)e;
    (void)unit;
    return ps->step >= 0 ? (double)ps->step : NAN;
}

static double v_total(struct entry *e, const struct progress_state *ps, const char **unit)
{
    (void)e;
    (void)unit;
    return ps->total >= 0 ? (double)ps->total : NAN;
}

static double v_loss(struct entry *e, const struct progress_state *ps, const char **unit)
{
    (void)e;
    (void)unit;
    return ps->has_loss && isfinite(ps->loss) ? ps->loss : NAN;
}

static double v_throughput(struct entry *e, const struct progress_state *ps, const char **unit)
{
    (void)e;
    *unit = ps->throughput_unit;
    return ps->has_throughput ? ps->throughput : NAN;
}

static double v_stalled(struct entry *e, const struct progress_state *ps, const char **unit)
{
    (void)ps;
    (void)unit;
    return e->stalled ? 1 : 0;
}

static double v_findings(struct entry *e, const struct progress_state *ps, const char **unit)
{
    (void)ps;
    (void)unit;
    return (double)diag_nfindings(e->d);
}

/* A gauge with one sample per running job (and a unit label when the value has one). */
static void family(struct health *h, struct prom *p, const char *name, const char *help,
                   job_value_fn f)
{
    prom_family(p, name, PROM_GAUGE, help);
    pthread_mutex_lock(&h->lock);
    for (size_t b = 0; b < HEALTH_BUCKETS; b++) {
        for (struct entry *e = h->buckets[b]; e; e = e->next) {
            pthread_mutex_lock(&e->lock);
            struct progress_state ps;
            progress_state(diag_progress(e->d), &ps);
            const char *unit = NULL;
            double v = f(e, &ps, &unit);
            if (!isnan(v))
                prom_sample(p, NULL, v, "job_id", e->id, "job_name", e->name, unit ? "unit" : NULL,
                            unit, NULL);
            pthread_mutex_unlock(&e->lock);
        }
    }
    pthread_mutex_unlock(&h->lock);
}

void health_metrics(struct health *h, struct buf *out)
{
    struct prom p;
    prom_init(&p, out);
    family(h, &p, "trainyard_job_step", "Current training step of a running job.", v_step);
    family(h, &p, "trainyard_job_total_steps", "Total training steps, when the job says.", v_total);
    family(h, &p, "trainyard_job_loss", "Last training loss a running job printed.", v_loss);
    family(h, &p, "trainyard_job_throughput", "Training throughput (tokens/s, samples/s, it/s).",
           v_throughput);
    family(h, &p, "trainyard_job_stalled", "1 when a running job stopped making progress.",
           v_stalled);
    family(h, &p, "trainyard_job_findings", "Diagnosis findings of a running job's attempt.",
           v_findings);
    prom_scalar(&p, "trainyard_diagnosis_lines_total", PROM_COUNTER, "Log lines fed to diagnosis.",
                (double)atomic_load(&h->lines_fed));
    prom_scalar(&p, "trainyard_metric_samples_total", PROM_COUNTER,
                "Metric samples stored from log lines.", (double)atomic_load(&h->samples_stored));
    prom_scalar(&p, "trainyard_diagnosis_replays_total", PROM_COUNTER,
                "Attempts whose log was replayed after a daemon restart.",
                (double)atomic_load(&h->replays));
}
