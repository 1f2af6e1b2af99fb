/*
 * diag: collects a job's findings from its log lines, rank endings, platform events, progress
 * metrics and stall verdicts (see diag.h). Choosing the first failure and the JSON live in
 * diagsum.c.
 *
 * Per line: strip a torchrun "[rankN]: " prefix, find the (rank, process rank) stream (cached:
 * consecutive lines usually share it), hand the line to the stream's open traceback if any,
 * else classify it; then the progress tracker. Findings are deduplicated on (rank, process
 * rank, signature): a rank spamming one NCCL WARN costs a counter, not memory.
 *
 * Ownership: diag_new/diag_free own everything inside. Not thread-safe.
 */
#include "server/diag/diag.h"

#include <ctype.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "core/clock.h"
#include "core/xalloc.h"
#include "server/diag/diag_internal.h"

void diag_options_default(struct diag_options *o)
{
    o->world_size = 0;
    o->cascade_ns = 120 * NS_PER_SEC;
    o->burst_ns = 30 * NS_PER_SEC;
    o->history_ns = 3600 * NS_PER_SEC;
    o->max_findings = 256;
}

struct diag *diag_new(const struct diag_options *opts)
{
    struct diag *d = XNEW(struct diag);
    if (opts)
        d->opt = *opts;
    else
        diag_options_default(&d->opt);
    if (d->opt.max_findings == 0)
        d->opt.max_findings = 256;
    if (d->opt.history_ns <= 0)
        d->opt.history_ns = INT64_MAX;
    d->prog = progress_new();
    return d;
}

static void finding_release(struct finding *f)
{
    free(f->node);
    free(f->pod);
    free(f->reason);
    free(f->message);
    free(f->exc);
}

void diag_free(struct diag *d)
{
    if (!d)
        return;
    for (size_t i = 0; i < d->nf; i++)
        finding_release(&d->f[i]);
    free(d->f);
    for (size_t i = 0; i < d->nstreams; i++)
        traceback_free(d->streams[i].tb);
    free(d->streams);
    free(d->shash);
    for (size_t i = 0; i < d->nri; i++) {
        free(d->ri[i].pod);
        free(d->ri[i].node);
    }
    free(d->ri);
    progress_free(d->prog);
    free(d);
}

struct progress *diag_progress(struct diag *d)
{
    return d->prog;
}

size_t diag_nfindings(const struct diag *d)
{
    return d->nf;
}

static struct rank_info *rank_info(struct diag *d, int rank)
{
    if (rank < 0 || rank >= PROGRESS_MAX_RANKS)
        return NULL;
    if ((size_t)rank >= d->nri) {
        size_t n = (size_t)rank + 1 > d->nri * 2 ? (size_t)rank + 1 : d->nri * 2;
        d->ri = xrealloc(d->ri, n * sizeof(d->ri[0]));
        memset(d->ri + d->nri, 0, (n - d->nri) * sizeof(d->ri[0]));
        d->nri = n;
    }
    return &d->ri[rank];
}

static void replace(char **slot, const char *s)
{
    if (!s || !*s)
        return;
    free(*slot);
    *slot = xstrdup(s);
}

void diag_rank_info(struct diag *d, int rank, const char *pod, const char *node)
{
    struct rank_info *ri = rank_info(d, rank);
    if (!ri)
        return;
    replace(&ri->pod, pod);
    replace(&ri->node, node);
}

bool diag_rank_started(const struct diag *d, int rank)
{
    if (rank < 0) {
        for (size_t i = 0; i < d->nri; i++)
            if (d->ri[i].started)
                return true;
        return false;
    }
    return (size_t)rank < d->nri && d->ri[rank].started;
}

int diag_who(const struct diag *d, int rank, int prank)
{
    if (prank >= 0 || rank < 0)
        return prank >= 0 ? prank : -1;
    return (size_t)rank >= d->nri || d->ri[rank].nprank == 0 ? rank : -1;
}

const char *diag_finding_node(const struct diag *d, const struct finding *f)
{
    if (f->node)
        return f->node;
    return f->rank >= 0 && (size_t)f->rank < d->nri ? d->ri[f->rank].node : NULL;
}

const char *diag_finding_pod(const struct diag *d, const struct finding *f)
{
    if (f->pod)
        return f->pod;
    return f->rank >= 0 && (size_t)f->rank < d->nri ? d->ri[f->rank].pod : NULL;
}

static size_t stream_hash(int rank, int prank, size_t cap)
{
    uint64_t k = ((uint64_t)(uint32_t)rank << 32) | (uint32_t)prank;
    return (size_t)((k * 0x9E3779B97F4A7C15ull) >> 32) & (cap - 1);
}

static void stream_index(struct diag *d)
{
    size_t cap = d->shcap ? d->shcap * 2 : 64;
    free(d->shash);
    d->shash = xcalloc(cap, sizeof(size_t));
    d->shcap = cap;
    for (size_t i = 0; i < d->nstreams; i++) {
        size_t h = stream_hash(d->streams[i].rank, d->streams[i].prank, cap);
        while (d->shash[h])
            h = (h + 1) & (cap - 1);
        d->shash[h] = i + 1;
    }
}

static struct stream *stream_get(struct diag *d, int rank, int prank)
{
    if (d->last_stream) {
        struct stream *s = &d->streams[d->last_stream - 1];
        if (s->rank == rank && s->prank == prank)
            return s;
    }
    if (d->nstreams * 2 >= d->shcap)
        stream_index(d);
    size_t h = stream_hash(rank, prank, d->shcap);
    for (; d->shash[h]; h = (h + 1) & (d->shcap - 1)) {
        struct stream *s = &d->streams[d->shash[h] - 1];
        if (s->rank == rank && s->prank == prank) {
            d->last_stream = d->shash[h];
            return s;
        }
    }
    if (d->nstreams == d->capstreams) {
        d->capstreams = d->capstreams ? d->capstreams * 2 : 16;
        d->streams = xrealloc(d->streams, d->capstreams * sizeof(d->streams[0]));
    }
    d->streams[d->nstreams] = (struct stream){ rank, prank, NULL };
    d->shash[h] = ++d->nstreams;
    d->last_stream = d->nstreams;
    struct rank_info *ri = prank >= 0 ? rank_info(d, rank) : NULL;
    if (ri && ri->nprank == 0) {
        ri->nprank = 1;
        ri->prank = prank;
    } else if (ri && ri->prank != prank) {
        ri->nprank = 2;
    }
    return &d->streams[d->nstreams - 1];
}

/* "[rank12]: text" or "[default3]:text" -> 12 / 3, text advanced; else -1. */
static int strip_prefix(const char **text, size_t *len)
{
    const char *s = *text;
    size_t n = *len, i;
    if (n < 8 || s[0] != '[')
        return -1;
    if (memcmp(s + 1, "rank", 4) == 0)
        i = 5;
    else if (n > 11 && memcmp(s + 1, "default", 7) == 0)
        i = 8;
    else
        return -1;
    size_t d = i;
    int v = 0;
    while (i < n && isdigit((unsigned char)s[i]) && i - d < 7)
        v = v * 10 + (s[i++] - '0');
    if (i == d || i + 1 >= n || s[i] != ']' || s[i + 1] != ':')
        return -1;
    i += 2;
    if (i < n && s[i] == ' ')
        i++;
    *text = s + i;
    *len = n - i;
    return v;
}

/* "... Rank 3] ..." -> 3, else -1. */
static int rank_marker(const char *t, size_t n)
{
    const char *p = classify_find(t, n, "Rank ", 5, false);
    if (!p)
        return -1;
    p += 5;
    int v = 0;
    const char *s = p;
    while (p < t + n && isdigit((unsigned char)*p) && p - s < 7)
        v = v * 10 + (*p++ - '0');
    return p > s && p < t + n && *p == ']' ? v : -1;
}

/* Appends f, or merges it into the finding with the same rank, process rank and id. Steals
 * f's heap fields. */
static struct finding *record(struct diag *d, struct finding *f, int64_t seq)
{
    for (size_t i = d->nf; i-- > 0;) {
        struct finding *g = &d->f[i];
        /* One Xid is often logged twice ("NVRM: Xid ...: 79" and "GPU has fallen off the
         * bus"): the code identifies it, not the wording. */
        bool same = strcmp(g->id, f->id) == 0 ||
                    (g->kind == DIAG_XID && f->kind == DIAG_XID && g->num == f->num);
        /* Different exceptions of one rank are different findings. */
        if (same && g->exc && f->exc && strcmp(g->exc->type, f->exc->type) != 0)
            same = false;
        if (g->rank != f->rank || g->prank != f->prank || !same)
            continue;
        g->count++;
        g->last_time_ns = f->time_ns;
        if (seq > 0) {
            g->last_seq = seq;
            if (g->nevidence < DIAG_EVIDENCE_MAX)
                g->evidence[g->nevidence++] = seq;
        }
        if (!g->exc && f->exc) {
            g->exc = f->exc;
            f->exc = NULL;
        }
        finding_release(f);
        return g;
    }
    if (d->nf >= d->opt.max_findings) {
        d->dropped++;
        finding_release(f);
        return NULL;
    }
    if (d->nf == d->capf) {
        d->capf = d->capf ? d->capf * 2 : 16;
        d->f = xrealloc(d->f, d->capf * sizeof(d->f[0]));
    }
    f->count = 1;
    f->last_time_ns = f->time_ns;
    if (seq > 0 && f->nevidence < DIAG_EVIDENCE_MAX)
        f->evidence[f->nevidence++] = seq;
    f->last_seq = seq;
    d->f[d->nf] = *f;
    return &d->f[d->nf++];
}

static void init_finding(struct finding *f, const char *id, enum diag_kind kind,
                         enum diag_role role, enum finding_source src)
{
    memset(f, 0, sizeof(*f));
    f->id = id;
    f->kind = kind;
    f->role = role;
    f->retry = kinds_info(kind)->retry;
    f->node_fault = kinds_info(kind)->node_fault;
    f->source = src;
    f->rank = f->prank = -1;
}

/* Kind, role and text of "killed by signal sig" (torchrun, launchers). */
static void from_signal(struct finding *f, int sig)
{
    const char *name = kinds_signal_name(sig);
    f->signal = sig;
    f->kind = sig == SIGSEGV   ? DIAG_SEGFAULT
              : sig == SIGBUS  ? DIAG_BUS_ERROR
              : sig == SIGKILL ? DIAG_KILLED
              : sig == SIGTERM ? DIAG_TERMINATED
                               : DIAG_EXIT;
    if (f->kind == DIAG_SEGFAULT || f->kind == DIAG_BUS_ERROR)
        f->role = DIAG_CAUSE;
    f->retry = kinds_info(f->kind)->retry;
    snprintf(f->text, sizeof(f->text), "signal %d%s%s%s", sig, name ? " (" : "", name ? name : "",
             name ? ")" : "");
}

/* Fills f from a log pattern hit on text. */
static void from_pattern(struct finding *f, const struct diag_pattern *p, const char *t, size_t n,
                         size_t at)
{
    f->kind = p->kind;
    f->role = p->role;
    f->tmpl = p->summary;
    f->retry = kinds_retry_of(p->kind, p->retry);
    f->node_fault = p->node_fault || kinds_info(p->kind)->node_fault;
    f->has_num = classify_num(p, t, n, at, &f->num);
    classify_detail(p, t, n, at, f->detail, sizeof(f->detail));
    if ((p->flags & PAT_XID) && f->has_num) {
        const struct diag_xid *x = kinds_xid(f->num);
        f->role = x->role;
        f->retry = x->retry;
        f->node_fault = x->node_fault;
        snprintf(f->text, sizeof(f->text), "%s", x->text);
    }
    if ((p->flags & PAT_EXITCODE) && f->has_num) {
        if (f->num < 0) {
            from_signal(f, (int)-f->num);
        } else {
            f->has_exit = true;
            f->exit_code = (int)f->num;
            snprintf(f->text, sizeof(f->text), "exit code %ld", f->num);
        }
    }
}

/* Kinds whose generic summary reads well with the matched phrase as its detail. */
static bool anchor_as_detail(enum diag_kind k)
{
    return k == DIAG_NCCL_ERROR || k == DIAG_NCCL_TIMEOUT || k == DIAG_CUDA_ERROR ||
           k == DIAG_RENDEZVOUS || k == DIAG_TERMINATED;
}

static void add_log(struct diag *d, const struct stream *st, const struct diag_line *ln,
                    const struct diag_pattern *p, const char *t, size_t n, size_t at)
{
    struct finding f;
    init_finding(&f, p->id, p->kind, p->role, SRC_LOG);
    from_pattern(&f, p, t, n, at);
    if (!f.detail[0] && !p->after && !p->summary && anchor_as_detail(p->kind))
        classify_clean(f.detail, sizeof(f.detail), t + at, strlen(p->anchor));
    f.rank = st->rank;
    f.prank = st->prank;
    if (f.prank < 0 && (p->flags & PAT_RANKMARK))
        f.prank = rank_marker(t, n);
    f.time_ns = ln->time_ns;
    record(d, &f, ln->seq);
}

/* The deepest frame outside installed packages: where the user's code failed. */
static const struct traceback_frame *user_frame(const struct traceback_exc *e)
{
    for (size_t i = e->nframes; i-- > 0;) {
        const char *file = e->frames[i].file;
        if (!strstr(file, "-packages/") && !strstr(file, "/lib/python") && file[0] != '<')
            return &e->frames[i];
    }
    return e->nframes ? &e->frames[e->nframes - 1] : NULL;
}

static void add_exception(struct diag *d, const struct stream *st, const struct diag_line *ln,
                          const char *t, size_t n)
{
    const struct traceback_exc *e = traceback_exc(st->tb);
    struct finding f;
    size_t at;
    const struct diag_pattern *p = classify_line(t, n, &at);
    const struct diag_exception *x = kinds_exception(e->type, strlen(e->type));
    if (p && p->role != DIAG_INFO && !(p->flags & (PAT_TRACEBACK | PAT_TORCHRUN))) {
        init_finding(&f, p->id, p->kind, p->role, SRC_TRACEBACK);
        from_pattern(&f, p, t, n, at);
    } else if (x) {
        init_finding(&f, "python_exception", x->kind, x->role, SRC_TRACEBACK);
    } else {
        init_finding(&f, "python_exception", DIAG_PYTHON_EXCEPTION, DIAG_CAUSE, SRC_TRACEBACK);
    }
    if (!f.detail[0]) {
        const struct traceback_frame *fr = user_frame(e);
        char where[200] = "";
        if (fr && fr->file[0]) {
            const char *base = strrchr(fr->file, '/');
            snprintf(where, sizeof(where), " (%s:%d%s%s)", base ? base + 1 : fr->file, fr->line,
                     fr->func[0] ? " in " : "", fr->func);
        }
        char msg[CLASSIFY_DETAIL_MAX];
        snprintf(msg, sizeof(msg), "%s%s%.100s", e->type, e->message[0] ? ": " : "", e->message);
        snprintf(f.detail, sizeof(f.detail), "%s%s", msg, where);
    }
    f.rank = st->rank;
    f.prank = st->prank;
    f.time_ns = ln->time_ns;
    f.exc = xmalloc(sizeof(*f.exc));
    *f.exc = *e;
    struct finding *g = record(d, &f, e->first_seq);
    int64_t xseq = e->last_seq; /* the exception line (not always ln: EXCEPTION_BEFORE) */
    if (g && g->nevidence < DIAG_EVIDENCE_MAX &&
        (g->nevidence == 0 || g->evidence[g->nevidence - 1] != xseq))
        g->evidence[g->nevidence++] = xseq;
    if (g && xseq > g->last_seq)
        g->last_seq = xseq;
}

static void add_torchrun(struct diag *d, const struct stream *st, const struct diag_line *ln)
{
    const struct traceback_report *rep = traceback_report(st->tb);
    for (size_t i = 0; i < rep->n; i++) {
        const struct traceback_failure *tf = &rep->failures[i];
        struct finding f;
        const char *id = tf->root ? "torchrun_root_cause" : "torchrun_failure";
        init_finding(&f, id, DIAG_EXIT, DIAG_SYMPTOM, SRC_TORCHRUN);
        if (tf->has_exit && tf->exitcode < 0) {
            from_signal(&f, -tf->exitcode);
        } else if (tf->has_exit) {
            f.has_exit = true;
            f.exit_code = tf->exitcode;
            snprintf(f.text, sizeof(f.text), "exit code %d", tf->exitcode);
        }
        if (tf->pat) {
            f.kind = tf->pat->kind;
            f.role = tf->pat->role;
            f.tmpl = tf->pat->summary;
            f.retry = kinds_retry_of(tf->pat->kind, tf->pat->retry);
            f.node_fault = tf->pat->node_fault || kinds_info(tf->pat->kind)->node_fault;
            snprintf(f.detail, sizeof(f.detail), "%s", tf->detail);
        }
        if (!f.detail[0])
            snprintf(f.detail, sizeof(f.detail), "%s%s", f.text[0] ? f.text : "failed",
                     tf->root ? ", torchrun's root cause" : ", reported by torchrun");
        if (!tf->root && f.role == DIAG_SYMPTOM)
            f.role = DIAG_CONSEQUENCE;
        f.torchrun_root = tf->root;
        f.rank = st->rank;
        f.prank = tf->rank;
        f.time_ns = ln->time_ns;
        replace(&f.node, tf->host);
        struct finding *g = record(d, &f, tf->seq);
        if (g && g->nevidence < DIAG_EVIDENCE_MAX)
            g->evidence[g->nevidence++] = rep->first_seq;
    }
}

static void add_nan(struct diag *d, const struct stream *st, const struct diag_line *ln,
                    const struct progress_sample *s)
{
    struct finding f;
    init_finding(&f, "nan_loss_metric", DIAG_NAN_LOSS, DIAG_CAUSE, SRC_PROGRESS);
    if (isfinite(s->value))
        snprintf(f.detail, sizeof(f.detail), "%s = %g", s->name, s->value);
    else
        snprintf(f.detail, sizeof(f.detail), "%s = %s", s->name, isnan(s->value) ? "nan" : "inf");
    if (s->step >= 0)
        snprintf(f.detail + strlen(f.detail), sizeof(f.detail) - strlen(f.detail), " at step %lld",
                 (long long)s->step);
    f.rank = st->rank;
    f.prank = st->prank;
    f.time_ns = ln->time_ns;
    record(d, &f, ln->seq);
}

/* Runs the line through the stream's open report or the classifier. */
static void diagnose(struct diag *d, struct stream *st, const struct diag_line *ln, const char *t,
                     size_t n)
{
    if (st->tb && traceback_active(st->tb)) {
        enum traceback_event ev = traceback_feed(st->tb, ln->seq, t, n);
        if (ev == TRACEBACK_EXCEPTION) {
            add_exception(d, st, ln, t, n);
        } else if (ev == TRACEBACK_EXCEPTION_BEFORE) { /* closed by the line before */
            const struct traceback_exc *e = traceback_exc(st->tb);
            char line[sizeof(e->type) + sizeof(e->message) + 2];
            int k = snprintf(line, sizeof(line), "%s: %s", e->type, e->message);
            add_exception(d, st, ln, line, k > 0 ? (size_t)k : 0);
        } else if (ev == TRACEBACK_TORCHRUN) {
            add_torchrun(d, st, ln);
        }
        if (ev != TRACEBACK_NOT_MINE && ev != TRACEBACK_EXCEPTION_BEFORE)
            return;
    }
    size_t at;
    const struct diag_pattern *p = classify_line(t, n, &at);
    if (!p)
        return;
    if (p->flags & (PAT_TRACEBACK | PAT_TORCHRUN)) {
        if (!st->tb)
            st->tb = traceback_new();
        if (p->flags & PAT_TRACEBACK)
            traceback_start(st->tb, ln->seq);
        else
            traceback_start_torchrun(st->tb, ln->seq);
        return;
    }
    add_log(d, st, ln, p, t, n, at);
}

size_t diag_feed(struct diag *d, const struct diag_line *ln, struct progress_sample *out,
                 size_t max)
{
    const char *t = ln->text;
    size_t n = ln->len;
    int prank = strip_prefix(&t, &n);
    struct stream *st = stream_get(d, ln->rank, prank);
    struct rank_info *ri = rank_info(d, ln->rank);
    if (ri)
        ri->started = true;
    diagnose(d, st, ln, t, n);
    struct progress_sample buf[PROGPARSE_VALUES_MAX];
    size_t k =
        progress_feed(d->prog, ln->rank, ln->seq, ln->time_ns, t, n, buf, PROGPARSE_VALUES_MAX);
    for (size_t i = 0; i < k; i++)
        if (progress_bad_loss(&buf[i]))
            add_nan(d, st, ln, &buf[i]);
    if (k > max)
        k = max;
    if (k)
        memcpy(out, buf, k * sizeof(buf[0]));
    return k;
}

void diag_ending(struct diag *d, const struct ending *e)
{
    struct ending_class c;
    ending_classify(e, &c);
    diag_rank_info(d, e->rank, e->pod, e->node);
    if (c.kind == DIAG_KIND_NONE)
        return;
    struct finding f;
    init_finding(&f, "exit", c.kind, c.role, SRC_EXIT);
    f.rank = e->rank;
    f.time_ns = e->time_ns;
    f.has_exit = e->exited;
    f.exit_code = e->exit_code;
    f.signal = c.signal;
    snprintf(f.detail, sizeof(f.detail), "%s", c.detail);
    snprintf(f.text, sizeof(f.text), "%s", c.text ? c.text : "");
    replace(&f.reason, e->pod_reason && kinds_reason(e->pod_reason) ? e->pod_reason : e->reason);
    replace(&f.message, e->message);
    record(d, &f, 0);
}

void diag_event(struct diag *d, const struct ending_event *ev)
{
    struct ending_class c;
    if (!ending_classify_event(ev, &c))
        return;
    if (ev->rank >= 0)
        diag_rank_info(d, ev->rank, ev->pod, ev->node);
    struct finding f;
    init_finding(&f, "event", c.kind, c.role, SRC_EVENT);
    f.rank = ev->rank;
    f.time_ns = ev->time_ns;
    snprintf(f.detail, sizeof(f.detail), "%s", c.detail);
    snprintf(f.text, sizeof(f.text), "%s", c.text ? c.text : "");
    replace(&f.reason, ev->reason);
    replace(&f.message, ev->message);
    if (ev->rank < 0) {
        replace(&f.node, ev->node);
        replace(&f.pod, ev->pod);
    }
    record(d, &f, 0);
}

void diag_stall(struct diag *d, const struct stall_result *r)
{
    if (!r->stalled)
        return;
    struct finding f;
    init_finding(&f, "stall", DIAG_HANG, DIAG_CONSEQUENCE, SRC_STALL);
    f.time_ns = r->last_progress_ns + r->limit_ns;
    if (r->basis == STALL_BASIS_STEPS)
        snprintf(f.detail, sizeof(f.detail), "no step for %.0f s, limit %.0f s, last step %lld",
                 (double)r->idle_ns / 1e9, (double)r->limit_ns / 1e9, (long long)r->last_step);
    else
        snprintf(f.detail, sizeof(f.detail), "no log output for %.0f s, limit %.0f s",
                 (double)r->idle_ns / 1e9, (double)r->limit_ns / 1e9);
    record(d, &f, 0);
}
