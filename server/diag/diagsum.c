/*
 * diagsum: chooses a job's first failure among its findings and renders the diagnosis as JSON
 * (the diag module's read side; findings are collected in diag.c). The rules are in diag.h;
 * docs/diagnosis.md documents the JSON.
 *
 * Not thread-safe (reads the struct diag that diag.c writes). Scratch memory is per call.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/jsonx.h"
#include "core/xalloc.h"
#include "server/diag/diag_internal.h"

static int64_t ftime(const struct finding *f)
{
    return f->time_ns ? f->time_ns : INT64_MAX;
}

static int64_t add_sat(int64_t a, int64_t b)
{
    return a > INT64_MAX - b ? INT64_MAX : a + b;
}

static int64_t first_seq(const struct finding *f)
{
    int64_t m = INT64_MAX;
    for (size_t i = 0; i < f->nevidence; i++)
        if (f->evidence[i] < m)
            m = f->evidence[i];
    return m;
}

static bool before(const struct finding *a, const struct finding *b)
{
    if (ftime(a) != ftime(b))
        return ftime(a) < ftime(b);
    return first_seq(a) < first_seq(b);
}

/* Same process, or the pod-level lines (launcher, kernel messages) of the same pod. */
static bool same_unit(const struct diag *d, const struct finding *a, const struct finding *b)
{
    int wa = finding_who(d, a), wb = finding_who(d, b);
    return a->rank == b->rank && (wa == wb || wa < 0 || wb < 0);
}

/* A symptom (exit 1, SIGABRT) on a rank whose logs already show a cause or a consequence is
 * explained by them; torchrun's root-cause entry never is. */
static bool explained(const struct diag *d, const struct finding *f)
{
    if (f->torchrun_root)
        return false;
    for (size_t i = 0; i < d->nf; i++) {
        const struct finding *g = &d->f[i];
        if (g == f || g->rank != f->rank || (g->role != DIAG_CAUSE && g->role != DIAG_CONSEQUENCE))
            continue;
        if ((g->prank == f->prank || f->prank < 0) &&
            ftime(g) <= add_sat(ftime(f), d->opt.burst_ns))
            return true;
    }
    return false;
}

static bool eligible(const struct diag *d, const struct finding *f, enum diag_role tier)
{
    if (f->role != tier)
        return false;
    if (tier == DIAG_CAUSE && d->ended_ns && d->opt.history_ns < d->ended_ns &&
        f->last_time_ns < d->ended_ns - d->opt.history_ns)
        return false; /* its last occurrence is long before the first rank ended */
    /* A scheduling or image problem of a rank that ran anyway is history, not the failure. */
    if ((f->kind == DIAG_SCHEDULING || f->kind == DIAG_IMAGE_PULL ||
         f->kind == DIAG_LAUNCH_ERROR) &&
        diag_rank_started(d, f->rank))
        return false;
    return tier != DIAG_SYMPTOM || !explained(d, f);
}

static const struct finding *earliest(const struct diag *d, enum diag_role tier,
                                      bool (*want)(const struct finding *))
{
    const struct finding *best = NULL;
    for (size_t i = 0; i < d->nf; i++) {
        const struct finding *f = &d->f[i];
        if (eligible(d, f, tier) && (!want || want(f)) && (!best || before(f, best)))
            best = f;
    }
    return best;
}

static bool is_infra(const struct finding *f)
{
    return kinds_info(f->kind)->infra;
}

static bool is_root(const struct finding *f)
{
    return f->torchrun_root;
}

static bool is_timeout(const struct finding *f)
{
    return f->kind == DIAG_NCCL_TIMEOUT;
}

static bool is_nccl(const struct finding *f)
{
    return f->kind == DIAG_NCCL_TIMEOUT || f->kind == DIAG_NCCL_ERROR;
}

/* *first gets the finding that started the chosen burst (its rank is the one to name when
 * the most specific cause is a pod-level line). */
static const struct finding *choose_cause(const struct diag *d, const struct finding **anchor)
{
    const struct finding *first = earliest(d, DIAG_CAUSE, NULL);
    *anchor = first;
    if (!first)
        return NULL;
    const struct finding *infra = earliest(d, DIAG_CAUSE, is_infra);
    if (infra && ftime(infra) <= add_sat(ftime(first), d->opt.cascade_ns))
        first = *anchor = infra;
    const struct finding *best = first;
    int64_t until = add_sat(ftime(first), d->opt.burst_ns);
    for (size_t i = 0; i < d->nf; i++) {
        const struct finding *f = &d->f[i];
        if (eligible(d, f, DIAG_CAUSE) && same_unit(d, f, first) && ftime(f) >= ftime(first) &&
            ftime(f) <= until && kinds_info(f->kind)->priority > kinds_info(best->kind)->priority)
            best = f;
    }
    return best;
}

static const struct finding *choose(const struct diag *d, const struct finding **anchor)
{
    const struct finding *f = choose_cause(d, anchor);
    if (!f)
        f = earliest(d, DIAG_SYMPTOM, is_root);
    if (!f)
        f = earliest(d, DIAG_SYMPTOM, NULL);
    if (!f)
        f = earliest(d, DIAG_CONSEQUENCE, is_timeout);
    if (!f)
        f = earliest(d, DIAG_CONSEQUENCE, is_nccl);
    if (!f)
        f = earliest(d, DIAG_CONSEQUENCE, NULL);
    if (!*anchor)
        *anchor = f;
    return f;
}

static void add_rank(int *v, size_t *n, int r)
{
    if (r < 0)
        return;
    size_t i = 0;
    while (i < *n && v[i] < r)
        i++;
    if ((i < *n && v[i] == r) || *n >= DIAG_RANKS_MAX)
        return;
    memmove(v + i + 1, v + i, (*n - i) * sizeof(int));
    v[i] = r;
    (*n)++;
}

/* The ranks a job has, as a person counts them (diag_who of every stream, or 0..world_size-1
 * when known). Returns a calloc'ed flag array of *n entries. */
static bool *universe(const struct diag *d, size_t *n)
{
    size_t max = d->opt.world_size > 0 ? (size_t)d->opt.world_size : 0;
    for (size_t i = 0; i < d->nstreams && !d->opt.world_size; i++) {
        int u = diag_who(d, d->streams[i].rank, d->streams[i].prank);
        if (u >= 0 && (size_t)u + 1 > max)
            max = (size_t)u + 1;
    }
    bool *in = xcalloc(max + 1, sizeof(bool));
    for (size_t i = 0; i < max && d->opt.world_size > 0; i++)
        in[i] = true;
    for (size_t i = 0; i < d->nstreams && !d->opt.world_size; i++) {
        int u = diag_who(d, d->streams[i].rank, d->streams[i].prank);
        if (u >= 0)
            in[u] = true;
    }
    *n = max;
    return in;
}

/* Ranks that did not report what the others did (an NCCL timeout or peer loss): the likely
 * origin. With every rank reporting timeouts, the ones stuck on an older collective. */
static void suspects(const struct diag *d, const struct finding *best, struct diag_summary *s)
{
    size_t n, members = 0, reporters = 0;
    bool *in = universe(d, &n);
    bool *rep = xcalloc(n + 1, sizeof(bool));
    long lo = 0, hi = 0;
    bool have_num = false;
    for (size_t i = 0; i < d->nf; i++) {
        const struct finding *f = &d->f[i];
        int u = finding_who(d, f);
        if (f->kind != best->kind || f->role != DIAG_CONSEQUENCE || u < 0 || (size_t)u >= n)
            continue;
        rep[u] = true;
        if (f->has_num) {
            lo = have_num && lo < f->num ? lo : f->num;
            hi = have_num && hi > f->num ? hi : f->num;
            have_num = true;
        }
    }
    for (size_t u = 0; u < n; u++) {
        members += in[u];
        reporters += in[u] && rep[u];
    }
    for (size_t u = 0; u < n && members - reporters <= members / 2; u++)
        if (in[u] && !rep[u])
            add_rank(s->suspects, &s->nsuspects, (int)u);
    if (s->nsuspects == 0 && best->kind == DIAG_NCCL_TIMEOUT && have_num && lo < hi)
        for (size_t i = 0; i < d->nf; i++)
            if (d->f[i].kind == DIAG_NCCL_TIMEOUT && d->f[i].has_num && d->f[i].num == lo)
                add_rank(s->suspects, &s->nsuspects, finding_who(d, &d->f[i]));
    s->every_rank = s->nsuspects == 0 && members > 1 && reporters == members;
    free(in);
    free(rep);
}

/* Node of a rank as a person counts it (found through a stream that carries it). */
static const char *unit_node(const struct diag *d, int u)
{
    for (size_t i = 0; i < d->nstreams; i++) {
        const struct stream *st = &d->streams[i];
        if (diag_who(d, st->rank, st->prank) == u && st->rank >= 0 && (size_t)st->rank < d->nri)
            return d->ri[st->rank].node;
    }
    return u >= 0 && (size_t)u < d->nri ? d->ri[u].node : NULL;
}

static void list_ranks(char *out, size_t cap, const int *v, size_t n)
{
    size_t o = 0;
    out[0] = '\0';
    for (size_t i = 0; i < n && o + 16 < cap; i++)
        o += (size_t)snprintf(out + o, cap - o, "%s%d", i ? ", " : "", v[i]);
}

static void suspect_text(const struct finding *best, struct diag_summary *s)
{
    char who[200], node[160] = "", what[CLASSIFY_DETAIL_MAX + 40] = "";
    list_ranks(who, sizeof(who), s->suspects, s->nsuspects);
    if (s->node)
        snprintf(node, sizeof(node), " on node %s", s->node);
    if (best->detail[0] && best->has_num)
        snprintf(what, sizeof(what), " (%s #%ld)", best->detail, best->num);
    else if (best->detail[0])
        snprintf(what, sizeof(what), " (%s)", best->detail);
    const char *plural = s->nsuspects > 1 ? "s" : "";
    if (best->kind == DIAG_NCCL_TIMEOUT)
        snprintf(s->text, sizeof(s->text),
                 "NCCL collective timed out on %zu rank%s%s; rank%s %s %s and probably hung%s",
                 s->nranks, s->nranks > 1 ? "s" : "", what, plural, who,
                 s->nsuspects > 1 ? "were behind or silent" : "was behind or silent", node);
    else
        snprintf(s->text, sizeof(s->text),
                 "%zu rank%s lost an NCCL peer; rank%s %s reported no error and probably "
                 "failed first%s",
                 s->nranks, s->nranks > 1 ? "s" : "", plural, who, node);
}

/* Every rank reported the same NCCL failure at the same collective: nothing in the logs tells
 * which one was first, and saying "rank 1" would send people to the wrong log. */
static void every_rank_text(const struct finding *best, struct diag_summary *s)
{
    char what[CLASSIFY_DETAIL_MAX + 40] = "";
    if (best->detail[0] && best->has_num)
        snprintf(what, sizeof(what), " (%s #%ld)", best->detail, best->num);
    else if (best->detail[0])
        snprintf(what, sizeof(what), " (%s)", best->detail);
    if (best->kind == DIAG_NCCL_TIMEOUT)
        snprintf(s->text, sizeof(s->text),
                 "NCCL collective timed out on all %zu ranks alike%s; none was behind or "
                 "silent, so the logs blame no rank: the collective itself stalled (network, "
                 "fabric, or a step every rank waited on)",
                 s->nranks, what);
    else
        snprintf(s->text, sizeof(s->text),
                 "all %zu ranks lost an NCCL peer%s; none reported a first error, so the logs "
                 "blame no rank (look at the network or the nodes)",
                 s->nranks, what);
}

/* Renders f's summary naming display rank `rank` (-1: the pod or the job). */
static void render(const struct diag *d, const struct finding *f, int rank, char *out, size_t cap)
{
    char who[160] = "the job", num[32] = "";
    const char *pod = diag_finding_pod(d, f);
    if (rank >= 0)
        snprintf(who, sizeof(who), "rank %d", rank);
    else if (f->rank >= 0 && pod)
        snprintf(who, sizeof(who), "pod %s", pod);
    else if (f->rank >= 0)
        snprintf(who, sizeof(who), "replica %d", f->rank);
    if (f->has_num)
        snprintf(num, sizeof(num), "%ld", f->num);
    struct classify_vars v = { who, diag_finding_node(d, f), f->detail, num, f->text };
    classify_render(f->tmpl ? f->tmpl : kinds_info(f->kind)->summary, &v, out, cap);
}

void diag_finding_text(const struct diag *d, const struct finding *f, char *out, size_t cap)
{
    render(d, f, finding_who(d, f), out, cap);
}

/* When the first rank ended badly (an exit, or torchrun's report of one); 0 if none did. */
static int64_t first_end(const struct diag *d)
{
    int64_t t = 0;
    for (size_t i = 0; i < d->nf; i++) {
        const struct finding *f = &d->f[i];
        bool end =
            f->source == SRC_TORCHRUN || (f->source == SRC_EXIT && f->role != DIAG_CONSEQUENCE);
        if (end && f->time_ns && (!t || f->time_ns < t))
            t = f->time_ns;
    }
    return t;
}

void diag_summarize(struct diag *d, struct diag_summary *s)
{
    memset(s, 0, sizeof(*s));
    d->ended_ns = first_end(d);
    s->rank = s->log_rank = -1;
    const struct finding *anchor = NULL;
    const struct finding *best = choose(d, &anchor);
    if (!best)
        return;
    s->found = true;
    s->kind = best->kind;
    s->role = best->role;
    s->retry = best->retry;
    s->node_fault = best->node_fault;
    s->rank = finding_who(d, best) >= 0 ? finding_who(d, best) : finding_who(d, anchor);
    s->log_rank = best->rank;
    s->node = diag_finding_node(d, best);
    s->pod = diag_finding_pod(d, best);
    s->time_ns = best->time_ns;
    s->pattern = best->id;
    s->nevidence = best->nevidence;
    memcpy(s->evidence, best->evidence, sizeof(s->evidence));
    s->has_exit = best->has_exit;
    s->exit_code = best->exit_code;
    s->signal = best->signal;
    for (size_t i = 0; i < d->nf; i++)
        if (d->f[i].kind == best->kind && eligible(d, &d->f[i], best->role))
            add_rank(s->ranks, &s->nranks, finding_who(d, &d->f[i]));
    if (best->role == DIAG_CONSEQUENCE && is_nccl(best))
        suspects(d, best, s);
    if (s->nsuspects > 0) {
        s->rank = s->suspects[0];
        s->node = unit_node(d, s->rank);
        suspect_text(best, s);
    } else if (s->every_rank) {
        s->rank = -1; /* naming whichever rank logged first would blame it for nothing */
        s->node = NULL;
        every_rank_text(best, s);
    } else {
        render(d, best, s->rank, s->text, sizeof(s->text));
    }
}

static json_t *text_json(const char *s)
{
    char buf[512];
    if (!s || !*s)
        return json_null();
    classify_clean(buf, sizeof(buf), s, strlen(s));
    return json_string(buf);
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

static json_t *seqs_json(const int64_t *v, size_t n)
{
    int64_t tmp[DIAG_EVIDENCE_MAX];
    memcpy(tmp, v, n * sizeof(int64_t));
    qsort(tmp, n, sizeof(int64_t), cmp_i64);
    json_t *a = json_array();
    for (size_t i = 0; i < n; i++)
        if (i == 0 || tmp[i] != tmp[i - 1])
            json_array_append_new(a, json_integer(tmp[i]));
    return a;
}

static json_t *ints_json(const int *v, size_t n)
{
    json_t *a = json_array();
    for (size_t i = 0; i < n; i++)
        json_array_append_new(a, json_integer(v[i]));
    return a;
}

static json_t *rank_json(int r)
{
    return r >= 0 ? json_integer(r) : json_null();
}

json_t *diag_summary_json(const struct diag_summary *s)
{
    if (!s->found)
        return json_null();
    const struct diag_kind_info *k = kinds_info(s->kind);
    json_t *o = json_object();
    json_object_set_new(o, "cause", json_string(k->name));
    json_object_set_new(o, "reason", json_string(k->reason));
    json_object_set_new(o, "role", json_string(kinds_role_name(s->role)));
    json_object_set_new(o, "retryable", json_boolean(s->retry == DIAG_RETRYABLE));
    json_object_set_new(o, "retry_class", json_string(kinds_retry_name(s->retry)));
    json_object_set_new(o, "node_fault", json_boolean(s->node_fault));
    json_object_set_new(o, "rank", rank_json(s->rank));
    json_object_set_new(o, "log_rank", rank_json(s->log_rank));
    json_object_set_new(o, "node", text_json(s->node));
    json_object_set_new(o, "pod", text_json(s->pod));
    jsonx_set_time(o, "time", s->time_ns);
    json_object_set_new(o, "pattern", json_string(s->pattern));
    json_object_set_new(o, "evidence", seqs_json(s->evidence, s->nevidence));
    json_object_set_new(o, "summary", text_json(s->text));
    json_object_set_new(o, "ranks", ints_json(s->ranks, s->nranks));
    json_object_set_new(o, "suspects", ints_json(s->suspects, s->nsuspects));
    json_object_set_new(o, "exit_code", s->has_exit ? json_integer(s->exit_code) : json_null());
    json_object_set_new(o, "signal", s->signal ? json_integer(s->signal) : json_null());
    return o;
}

static json_t *exc_json(const struct traceback_exc *e)
{
    json_t *o = json_object();
    json_object_set_new(o, "type", text_json(e->type));
    json_object_set_new(o, "message", text_json(e->message));
    json_object_set_new(o, "context", text_json(e->context));
    json_t *frames = json_array();
    for (size_t i = 0; i < e->nframes; i++) {
        const struct traceback_frame *fr = &e->frames[i];
        json_t *f = json_object();
        json_object_set_new(f, "file", text_json(fr->file));
        json_object_set_new(f, "line", json_integer(fr->line));
        json_object_set_new(f, "function", text_json(fr->func));
        json_object_set_new(f, "code", text_json(fr->code));
        json_array_append_new(frames, f);
    }
    json_object_set_new(o, "frames", frames);
    json_object_set_new(o, "frames_omitted", json_integer((json_int_t)e->omitted));
    return o;
}

static const char *source_name(enum finding_source s)
{
    static const char *const names[] = { "log",   "traceback", "torchrun", "exit",
                                         "event", "progress",  "stall" };
    return (unsigned)s < sizeof(names) / sizeof(names[0]) ? names[s] : "log";
}

static json_t *finding_json(const struct diag *d, const struct finding *f)
{
    char text[512];
    json_t *o = json_object();
    json_object_set_new(o, "kind", json_string(kinds_info(f->kind)->name));
    json_object_set_new(o, "role", json_string(kinds_role_name(f->role)));
    json_object_set_new(o, "retryable", json_boolean(f->retry == DIAG_RETRYABLE));
    json_object_set_new(o, "retry_class", json_string(kinds_retry_name(f->retry)));
    json_object_set_new(o, "node_fault", json_boolean(f->node_fault));
    json_object_set_new(o, "pattern", json_string(f->id));
    json_object_set_new(o, "source", json_string(source_name(f->source)));
    json_object_set_new(o, "rank", rank_json(finding_who(d, f)));
    json_object_set_new(o, "log_rank", rank_json(f->rank));
    json_object_set_new(o, "node", text_json(diag_finding_node(d, f)));
    json_object_set_new(o, "pod", text_json(diag_finding_pod(d, f)));
    jsonx_set_time(o, "time", f->time_ns);
    json_object_set_new(o, "evidence", seqs_json(f->evidence, f->nevidence));
    json_object_set_new(o, "count", json_integer((json_int_t)f->count));
    json_object_set_new(o, "last_seq", f->last_seq > 0 ? json_integer(f->last_seq) : json_null());
    diag_finding_text(d, f, text, sizeof(text));
    json_object_set_new(o, "summary", text_json(text));
    json_object_set_new(o, "detail", text_json(f->detail));
    json_object_set_new(o, "exception", f->exc ? exc_json(f->exc) : json_null());
    json_object_set_new(o, "exit_code", f->has_exit ? json_integer(f->exit_code) : json_null());
    json_object_set_new(o, "signal", f->signal ? json_integer(f->signal) : json_null());
    json_object_set_new(o, "reason", text_json(f->reason));
    json_object_set_new(o, "message", text_json(f->message));
    return o;
}

static int cmp_finding(const void *a, const void *b)
{
    const struct finding *x = *(const struct finding *const *)a;
    const struct finding *y = *(const struct finding *const *)b;
    return before(x, y) ? -1 : before(y, x) ? 1 : 0;
}

json_t *diag_json(struct diag *d)
{
    struct diag_summary s;
    diag_summarize(d, &s);
    json_t *o = json_object();
    json_object_set_new(o, "summary", diag_summary_json(&s));
    const struct finding **order = xmalloc((d->nf + 1) * sizeof(*order));
    for (size_t i = 0; i < d->nf; i++)
        order[i] = &d->f[i];
    qsort(order, d->nf, sizeof(*order), cmp_finding);
    json_t *arr = json_array();
    for (size_t i = 0; i < d->nf; i++)
        json_array_append_new(arr, finding_json(d, order[i]));
    free(order);
    json_object_set_new(o, "findings", arr);
    json_object_set_new(o, "findings_dropped", json_integer((json_int_t)d->dropped));
    return o;
}
