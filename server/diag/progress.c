/*
 * progress: per-job progress tracker over progparse (see progress.h). Per line it copies at
 * most PROGRESS_LAST_LINE bytes (the rank's last line, for stall reports) and runs the
 * progparse dispatch; everything else happens only on progress lines.
 *
 * Ownership: progress_new/progress_free; rank slots are allocated when a rank first prints.
 * Not thread-safe.
 */
#include "server/diag/progress.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "core/jsonx.h"
#include "core/xalloc.h"

struct rank_prog {
    int64_t step;      /* -1 until a step is seen */
    int64_t bar_total; /* largest tqdm total seen: the training bar */
    int64_t adv_step[PROGRESS_RING], adv_time[PROGRESS_RING];
    size_t nadv; /* advances pushed since the last reset; ring index nadv % RING */
    double dur[PROGRESS_RING];
    size_t ndur;
    int64_t lin_step[PROGRESS_RING], lin_time[PROGRESS_RING]; /* progress_timelines() */
    double lin_dur[PROGRESS_RING];
    int64_t last_line_ns, last_seq;
    size_t last_len;
    char last_line[PROGRESS_LAST_LINE];
};

/* What a metric name means to the tracker, computed once per name (the tests on the name are a
 * handful of substring searches, and every sample of every progress line asks). */
enum name_kind { NK_OTHER, NK_LOSS, NK_DURATION, NK_THROUGHPUT };

struct name_class {
    uint32_t hash;
    char name[PROGPARSE_NAME_MAX]; /* "" : an empty slot */
    enum name_kind kind;
    double scale; /* durations: seconds per unit */
    int tp_pref;  /* throughputs: preference of the unit, lower wins */
    const char *tp_unit;
};

#define NAME_CACHE 64 /* a power of two; names beyond it are classified each time */

struct progress {
    struct name_class names[NAME_CACHE];
    struct rank_prog **ranks;
    size_t cap, nranks;
    int64_t total;
    bool has_loss;
    double loss;
    int tp_pref; /* preference of the unit of the current throughput: lower wins */
    double throughput;
    const char *tp_unit;
    double remaining_s;
    int64_t updated_ns;
    bool finished;
    bool has_epoch;
    double epoch;
    enum progparse_format format;
};

struct progress *progress_new(void)
{
    struct progress *p = XNEW(struct progress);
    p->total = -1;
    p->tp_pref = 99;
    p->remaining_s = -1;
    return p;
}

void progress_free(struct progress *p)
{
    if (!p)
        return;
    for (size_t i = 0; i < p->cap; i++)
        free(p->ranks[i]);
    free(p->ranks);
    free(p);
}

size_t progress_nranks(const struct progress *p)
{
    return p->nranks;
}

static struct rank_prog *rank_get(struct progress *p, int rank)
{
    size_t r = (size_t)rank;
    if (r >= p->cap) {
        size_t cap = p->cap ? p->cap : 8;
        while (cap <= r)
            cap *= 2;
        p->ranks = xrealloc(p->ranks, cap * sizeof(p->ranks[0]));
        memset(p->ranks + p->cap, 0, (cap - p->cap) * sizeof(p->ranks[0]));
        p->cap = cap;
    }
    if (!p->ranks[r]) {
        p->ranks[r] = XNEW(struct rank_prog);
        p->ranks[r]->step = -1;
    }
    if (r + 1 > p->nranks)
        p->nranks = r + 1;
    return p->ranks[r];
}

static void advance(struct rank_prog *r, int64_t step, int64_t time_ns)
{
    if (step == r->step)
        return;
    if (step < r->step) /* a new bar or a restart from a checkpoint: old cadence is void */
        r->nadv = 0;
    r->adv_step[r->nadv % PROGRESS_RING] = step;
    r->adv_time[r->nadv % PROGRESS_RING] = time_ns;
    r->nadv++;
    r->step = step;
}

static bool prefixed(const char *s, const char *pre)
{
    return strncmp(s, pre, strlen(pre)) == 0;
}

static bool train_loss(const char *name)
{
    return strstr(name, "loss") && !strstr(name, "scale") && !prefixed(name, "eval") &&
           !prefixed(name, "val") && !prefixed(name, "test");
}

/* A reported time per step, in seconds; false for other metrics. */
static bool step_duration(const char *name, double v, double *secs)
{
    static const char *const names[] = { "step_time",     "iter_time",
                                         "time_per_step", "iteration_time",
                                         "batch_time",    "elapsed_time_per_iteration" };
    if (!strstr(name, "time"))
        return false;
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        size_t m = strlen(names[i]);
        if (strncmp(name, names[i], m) != 0)
            continue;
        const char *unit = name + m;
        if (!*unit || !strcmp(unit, "_s") || !strcmp(unit, "_sec"))
            *secs = v;
        else if (!strcmp(unit, "_ms"))
            *secs = v / 1000;
        else
            return false;
        return isfinite(*secs) && *secs > 0;
    }
    return false;
}

/* Throughput unit preference: tokens, then samples, then iterations. */
static int throughput_unit(const char *name, const char **unit)
{
    if (!strstr(name, "per_s"))
        return 99;
    if (strstr(name, "token") || strstr(name, "tok_")) {
        *unit = "tokens/s";
        return 0;
    }
    if (strstr(name, "sample")) {
        *unit = "samples/s";
        return 1;
    }
    if (prefixed(name, "it_per")) {
        *unit = "it/s";
        return 2;
    }
    return 99;
}

static void classify_name(const char *name, struct name_class *c)
{
    double secs;
    c->kind = NK_OTHER;
    c->tp_pref = throughput_unit(name, &c->tp_unit);
    if (train_loss(name))
        c->kind = NK_LOSS;
    else if (step_duration(name, 1.0, &secs))
        c->kind = NK_DURATION, c->scale = secs;
    else if (c->tp_pref < 99)
        c->kind = NK_THROUGHPUT;
}

/* The class of name, from the cache (filled on first sight). */
static struct name_class name_class(struct progress *p, const char *name, struct name_class *tmp)
{
    uint32_t h = 2166136261u;
    for (const char *c = name; *c; c++)
        h = (h ^ (unsigned char)*c) * 16777619u;
    for (size_t n = 0, i = h & (NAME_CACHE - 1); n < NAME_CACHE;
         n++, i = (i + 1) & (NAME_CACHE - 1)) {
        struct name_class *c = &p->names[i];
        if (c->name[0] && c->hash == h && strcmp(c->name, name) == 0)
            return *c;
        if (!c->name[0]) {
            snprintf(c->name, sizeof(c->name), "%s", name);
            c->hash = h;
            classify_name(name, c);
            return *c;
        }
    }
    classify_name(name, tmp);
    return *tmp;
}

static void note_value(struct progress *p, struct rank_prog *r, const struct progparse_value *v,
                       bool final)
{
    struct name_class tmp, c = name_class(p, v->name, &tmp);
    double secs = v->value * c.scale;
    if (strcmp(v->name, "epoch") == 0 && isfinite(v->value)) {
        p->has_epoch = true;
        p->epoch = v->value;
    } else if (c.kind == NK_LOSS && final) {
        /* Hugging Face's closing train_loss is the mean over the run, not the last loss */
    } else if (c.kind == NK_LOSS) {
        p->has_loss = true;
        p->loss = v->value;
    } else if (c.kind == NK_DURATION && isfinite(secs) && secs > 0) {
        r->dur[r->ndur % PROGRESS_RING] = secs;
        r->ndur++;
    } else if (c.kind == NK_THROUGHPUT && c.tp_pref <= p->tp_pref && isfinite(v->value)) {
        p->tp_pref = c.tp_pref;
        p->throughput = v->value;
        p->tp_unit = c.tp_unit;
    }
}

/* A format that names the training framework; tqdm bars and key=value lines print beside it. */
static bool framework(enum progparse_format f)
{
    return f == PROGPARSE_HF || f == PROGPARSE_MEGATRON || f == PROGPARSE_DEEPSPEED;
}

static const struct progparse_value *value_of(const struct progparse *pp, const char *name)
{
    for (size_t i = 0; i < pp->n; i++)
        if (strcmp(pp->v[i].name, name) == 0)
            return &pp->v[i];
    return NULL;
}

/* Megatron-LM prints the global batch size and the time per iteration but (since it reports
 * TFLOP/s per GPU instead) no samples per second: derived here, as a sample of its own. */
static void megatron_rate(struct progparse *pp)
{
    const struct progparse_value *gbs = value_of(pp, "global_batch_size");
    const struct progparse_value *ms = value_of(pp, "elapsed_time_per_iteration_ms");
    if (!gbs || !ms || !(ms->value > 0) || !isfinite(gbs->value) ||
        value_of(pp, "samples_per_sec") || pp->n >= PROGPARSE_VALUES_MAX)
        return;
    struct progparse_value *v = &pp->v[pp->n++];
    snprintf(v->name, sizeof(v->name), "samples_per_sec");
    v->value = gbs->value / (ms->value / 1000);
}

size_t progress_feed(struct progress *p, int rank, int64_t seq, int64_t time_ns, const char *text,
                     size_t len, struct progress_sample *out, size_t max)
{
    if (rank < 0 || rank >= PROGRESS_MAX_RANKS)
        return 0;
    struct rank_prog *r = rank_get(p, rank);
    r->last_len = len < PROGRESS_LAST_LINE ? len : PROGRESS_LAST_LINE;
    memcpy(r->last_line, text, r->last_len);
    r->last_line_ns = time_ns;
    r->last_seq = seq;
    struct progparse pp;
    if (!progparse_line(text, len, &pp))
        return 0;
    if (pp.format == PROGPARSE_TQDM) {
        if (pp.total > 0 && pp.total < r->bar_total)
            return 0; /* an inner (evaluation) bar */
        if (pp.total > r->bar_total)
            r->bar_total = pp.total;
        p->remaining_s = pp.remaining_s;
    }
    if (pp.step >= 0)
        advance(r, pp.step, time_ns);
    if (pp.total > 0)
        p->total = pp.total;
    p->updated_ns = time_ns;
    if (!framework(p->format) || framework(pp.format))
        p->format = pp.format;
    p->finished = p->finished || pp.final;
    if (pp.format == PROGPARSE_MEGATRON)
        megatron_rate(&pp);
    size_t k = 0;
    for (size_t i = 0; i < pp.n; i++) {
        note_value(p, r, &pp.v[i], pp.final);
        if (k < max) {
            struct progress_sample *s = &out[k++];
            memcpy(s->name, pp.v[i].name, sizeof(s->name));
            s->step = pp.step >= 0 ? pp.step : r->step;
            s->value = pp.v[i].value;
            s->rank = rank;
            s->time_ns = time_ns;
            s->seq = seq;
        }
    }
    return k;
}

/* Seconds per step of rank r from its recent advances, -1 when unknown. */
static double rank_pace(const struct rank_prog *r)
{
    if (r->ndur > 0)
        return r->dur[(r->ndur - 1) % PROGRESS_RING];
    size_t n = r->nadv < 16 ? r->nadv : 16;
    if (n < 2)
        return -1;
    size_t last = (r->nadv - 1) % PROGRESS_RING, first = (r->nadv - n) % PROGRESS_RING;
    int64_t ds = r->adv_step[last] - r->adv_step[first];
    int64_t dt = r->adv_time[last] - r->adv_time[first];
    return ds > 0 && dt > 0 ? (double)dt / 1e9 / (double)ds : -1;
}

void progress_state(const struct progress *p, struct progress_state *out)
{
    memset(out, 0, sizeof(*out));
    out->step = -1;
    out->total = p->total;
    out->step_seconds = -1;
    out->eta_ns = -1;
    const struct rank_prog *lead = NULL;
    for (size_t i = 0; i < p->cap; i++)
        if (p->ranks[i] && p->ranks[i]->step >= 0 && (!lead || p->ranks[i]->step > lead->step))
            lead = p->ranks[i];
    if (lead) {
        out->step = lead->step;
        out->step_seconds = rank_pace(lead);
    }
    out->has_loss = p->has_loss;
    out->loss = p->loss;
    out->has_throughput = p->tp_unit != NULL;
    out->throughput = p->throughput;
    out->throughput_unit = p->tp_unit;
    out->updated_ns = p->updated_ns;
    out->finished = p->finished;
    out->has_epoch = p->has_epoch;
    out->epoch = p->epoch;
    out->format = p->format;
    if (p->format == PROGPARSE_TQDM && p->remaining_s >= 0)
        out->eta_ns = (int64_t)(p->remaining_s * 1e9);
    else if (out->total > 0 && out->step >= 0 && out->step_seconds > 0)
        out->eta_ns = (int64_t)((double)(out->total > out->step ? out->total - out->step : 0) *
                                out->step_seconds * 1e9);
    if (out->finished)
        out->eta_ns = 0;
}

static json_t *num_or_null(bool ok, double v)
{
    return ok && isfinite(v) ? json_real(v) : json_null();
}

json_t *progress_state_json(const struct progress_state *s)
{
    json_t *o = json_object();
    json_object_set_new(o, "step", s->step >= 0 ? json_integer(s->step) : json_null());
    json_object_set_new(o, "total_steps", s->total > 0 ? json_integer(s->total) : json_null());
    json_object_set_new(o, "epoch", num_or_null(s->has_epoch, s->epoch));
    /* A NaN loss is reported as the string "nan": JSON has no NaN, and it is the news. */
    if (s->has_loss && !isfinite(s->loss))
        json_object_set_new(o, "loss", json_string(isnan(s->loss) ? "nan" : "inf"));
    else
        json_object_set_new(o, "loss", num_or_null(s->has_loss, s->loss));
    json_object_set_new(o, "throughput", num_or_null(s->has_throughput, s->throughput));
    jsonx_set_str(o, "throughput_unit", s->throughput_unit);
    json_object_set_new(o, "step_seconds", num_or_null(s->step_seconds > 0, s->step_seconds));
    json_object_set_new(o, "eta_seconds", num_or_null(s->eta_ns >= 0, (double)s->eta_ns / 1e9));
    jsonx_set_time(o, "updated", s->updated_ns);
    json_object_set_new(o, "finished", json_boolean(s->finished));
    jsonx_set_str(o, "format", s->updated_ns ? progparse_format_name(s->format) : NULL);
    return o;
}

size_t progress_timelines(struct progress *p, struct stall_rank *out, size_t max)
{
    size_t k = 0;
    for (size_t i = 0; i < p->cap && k < max; i++) {
        struct rank_prog *r = p->ranks[i];
        if (!r)
            continue;
        size_t n = r->nadv < PROGRESS_RING ? r->nadv : PROGRESS_RING;
        for (size_t j = 0; j < n; j++) {
            size_t idx = (r->nadv - n + j) % PROGRESS_RING;
            r->lin_step[j] = r->adv_step[idx];
            r->lin_time[j] = r->adv_time[idx];
        }
        size_t nd = r->ndur < PROGRESS_RING ? r->ndur : PROGRESS_RING;
        for (size_t j = 0; j < nd; j++)
            r->lin_dur[j] = r->dur[(r->ndur - nd + j) % PROGRESS_RING];
        out[k++] = (struct stall_rank){ .rank = (int)i,
                                        .steps = r->lin_step,
                                        .times = r->lin_time,
                                        .n = n,
                                        .durations = r->lin_dur,
                                        .ndurations = nd,
                                        .last_line_ns = r->last_line_ns,
                                        .last_seq = r->last_seq,
                                        .last_line = r->last_line,
                                        .last_len = r->last_len };
    }
    return k;
}

bool progress_bad_loss(const struct progress_sample *s)
{
    if (strcmp(s->name, "number_of_nan_iterations") == 0)
        return s->value > 0;
    return !isfinite(s->value) && strstr(s->name, "loss") && !strstr(s->name, "scale");
}
