/*
 * train: the reference trainer's loop. Data order is a pure function of (seed, rank, step), so a
 * resumed run draws the same batches as an uninterrupted one; the checkpoint carries weights,
 * Adam moments and the loss sums behind the log lines, so the logged curve is identical too.
 * With several ranks, gradients, the loss and a stop flag travel in one all-reduce per step: a
 * SIGTERM on any rank stops every rank after the same step, and rank 0 saves that step.
 * Single-threaded; only train_request_stop() may be called from a signal handler.
 */
#include "worker/train.h"

#include <unistd.h>

#include <errno.h>
#include <math.h>
#include <signal.h>

#include "core/clock.h"
#include "core/crypto.h"
#include "core/xalloc.h"
#include "worker/ckpt.h"
#include "worker/fabric.h"
#include "worker/model.h"
#include "worker/rdzv.h"

#define MAX_CORPUS (64L << 20)

static volatile sig_atomic_t stop_signal;

void train_request_stop(int signo)
{
    stop_signal = signo;
}

void train_opts_default(struct train_opts *o)
{
    memset(o, 0, sizeof(*o));
    o->steps = 1000;
    o->ckpt_every = 100;
    o->keep = 3;
    o->seed = 1337;
    o->batch = 32;
    o->context = 8;
    o->embed = 16;
    o->hidden = 128;
    o->lr = 3e-3f;
    o->log_every = 10;
    o->timeout_ms = 60000;
}

struct trainer {
    const struct train_opts *o;
    const struct rankenv *re;
    unsigned char *tok; /* corpus as class ids */
    size_t ntok, ntrain;
    struct ckpt_meta meta;
    struct model m;
    struct rdzv *rdzv;
    struct fabric *fab;
    float *comm; /* grads, loss, stop flag */
    int *ctx, *tgt;
    FILE *out, *progress;
    int64_t start_ns;
    long first_step;
};

/* The corpus: TRAINYARD_DATA, else the one shipped beside this program (build/ and the
 * images), else in the working directory. */
static const char *default_data(void)
{
    static char beside[4096];
    char exe[3072];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    exe[n > 0 ? n : 0] = '\0';
    char *slash = strrchr(exe, '/');
    if (slash)
        *slash = '\0';
    snprintf(beside, sizeof(beside), "%s/../examples/corpus.txt", exe);
    const char *const candidates[] = { beside, "/opt/trainyard/examples/corpus.txt",
                                       "examples/corpus.txt", "../examples/corpus.txt" };
    const char *env = getenv("TRAINYARD_DATA");
    if (env && *env)
        return env;
    for (size_t i = 0; i < sizeof(candidates) / sizeof(candidates[0]); i++) {
        FILE *f = fopen(candidates[i], "rb");
        if (f) {
            fclose(f);
            return candidates[i];
        }
    }
    return "examples/corpus.txt";
}

static int load_corpus(struct trainer *t, const char *path, struct err *err)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return err_set(err, ERR_IO, "open %s: %s", path, strerror(errno));
    struct buf b = BUF_INIT;
    char chunk[65536];
    size_t n;
    while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0 && b.len <= (size_t)MAX_CORPUS)
        buf_append(&b, chunk, n);
    fclose(f);
    if (b.len < (size_t)t->o->context * 20 || b.len > (size_t)MAX_CORPUS) {
        buf_release(&b);
        return err_set(err, ERR_INVALID, "%s: %zu bytes; need %d to %ld", path, b.len,
                       t->o->context * 20, MAX_CORPUS);
    }
    int seen[256] = { 0 }, cls[256], nv = 0;
    for (size_t i = 0; i < b.len; i++)
        seen[(unsigned char)b.data[i]] = 1;
    for (int c = 0; c < 256; c++)
        if (seen[c]) {
            t->meta.vocab[nv] = (unsigned char)c;
            cls[c] = nv++;
        }
    t->meta.cfg.vocab = nv;
    t->ntok = b.len;
    t->tok = xmalloc(b.len);
    for (size_t i = 0; i < b.len; i++)
        t->tok[i] = (unsigned char)cls[(unsigned char)b.data[i]];
    crypto_sha256(b.data, b.len, t->meta.corpus_sha);
    t->ntrain = b.len - b.len / 10; /* the last tenth is held out for eval_loss */
    buf_release(&b);
    return 0;
}

/* Takes the state of the newest checkpoint when it belongs to this run's configuration. */
static int resume(struct trainer *t, struct err *err)
{
    struct ckpt_meta cm;
    float *state;
    size_t np;
    char *path;
    int skipped, rc = ckpt_load_latest(t->o->ckpt_dir, &cm, &state, &np, &path, &skipped, err);
    if (skipped)
        fprintf(stderr, "trainyard-train: skipped %d corrupt checkpoint(s)\n", skipped);
    if (rc <= 0)
        return rc;
    int ret = 0;
    if (np != t->m.nparams || memcmp(&cm.cfg, &t->meta.cfg, sizeof(cm.cfg)) != 0 ||
        memcmp(cm.corpus_sha, t->meta.corpus_sha, 32) != 0 || cm.batch != t->meta.batch ||
        cm.seed != t->meta.seed) {
        ret = err_set(err, ERR_CONFLICT,
                      "%s was written for another corpus, model, batch or seed; use another "
                      "--checkpoint-dir",
                      path);
        goto out;
    }
    if (cm.world_size != t->meta.world_size)
        fprintf(stderr,
                "trainyard-train: %s was written with WORLD_SIZE=%d; the loss curve "
                "will differ from an uninterrupted run\n",
                path, cm.world_size);
    memcpy(t->m.params, state, np * sizeof(float));
    memcpy(t->m.m, state + np, np * sizeof(float));
    memcpy(t->m.v, state + 2 * np, np * sizeof(float));
    cm.world_size = t->meta.world_size;
    t->meta = cm;
    if (t->re->rank == 0)
        fprintf(stderr, "trainyard-train: resumed from %s at step %lld\n", path,
                (long long)cm.step);
out:
    free(state);
    free(path);
    return ret;
}

static int setup_comm(struct trainer *t, struct err *err)
{
    if (t->re->world_size == 1)
        return 0;
    if (!(t->rdzv = rdzv_open(t->o->rdzv, t->re, err)) || !(t->fab = fabric_open(NULL, err)))
        return err_wrap(err, "rank %d", t->re->rank);
    fabric_set_timeout(t->fab, t->o->timeout_ms);
    if (fabric_connect(t->fab, t->rdzv, "train", t->re->rank, t->re->world_size, t->o->timeout_ms,
                       err) < 0)
        return err_wrap(err, "rank %d: connecting over %s", t->re->rank, fabric_provider(t->fab));
    /* Every rank must start from the same step (they read the same checkpoint directory). */
    float s = (float)t->meta.step;
    if (fabric_allreduce_sum(t->fab, &s, 1, err) < 0)
        return -1;
    if (s != (float)t->meta.step * (float)t->re->world_size)
        return err_set(err, ERR_CONFLICT, "ranks resumed from different steps (rank %d: %lld)",
                       t->re->rank, (long long)t->meta.step);
    return 0;
}

static void sample(struct trainer *t, long step)
{
    const int T = t->o->context;
    uint64_t s = t->meta.seed ^ ((uint64_t)t->re->rank << 40) ^ (uint64_t)step * 0x100000001b3ull;
    model_rng(&s);
    for (int b = 0; b < t->o->batch; b++) {
        size_t pos = (size_t)(model_rng(&s) % (t->ntrain - (size_t)T));
        for (int i = 0; i < T; i++)
            t->ctx[b * T + i] = t->tok[pos + (size_t)i];
        t->tgt[b] = t->tok[pos + (size_t)T];
    }
}

static float lr_at(const struct train_opts *o, long step)
{
    long warm = o->steps / 20 > 0 ? o->steps / 20 : 1;
    if (step <= warm)
        return o->lr * (float)step / (float)warm;
    double p = (double)(step - warm) / (double)(o->steps - warm > 0 ? o->steps - warm : 1);
    return (float)(o->lr * (0.1 + 0.9 * 0.5 * (1.0 + cos(M_PI * p))));
}

/* One optimizer step; returns 1 when all ranks must stop after it, 0 to go on, -1 on error. */
static int step_once(struct trainer *t, long step, float *loss, float *norm, struct err *err)
{
    struct model *m = &t->m;
    sample(t, step);
    *loss = model_forward_backward(m, t->ctx, t->tgt, t->o->batch);
    float stop = stop_signal ? 1.0f : 0.0f;
    if (t->fab) {
        memcpy(t->comm, m->grads, m->nparams * sizeof(float));
        t->comm[m->nparams] = *loss;
        t->comm[m->nparams + 1] = stop;
        if (fabric_allreduce_sum(t->fab, t->comm, m->nparams + 2, err) < 0)
            return -1;
        float inv = 1.0f / (float)t->re->world_size;
        for (size_t i = 0; i < m->nparams; i++)
            m->grads[i] = t->comm[i] * inv;
        *loss = t->comm[m->nparams] * inv;
        stop = t->comm[m->nparams + 1];
    }
    *norm = model_grad_norm(m);
    if (*norm > 1.0f)
        model_scale_grads(m, 1.0f / *norm);
    model_adamw(m, lr_at(t->o, step), 0.9f, 0.99f, 1e-8f, 0.01f, step);
    return stop > 0;
}

static double epoch_at(const struct trainer *t, long step)
{
    return (double)step * t->o->batch * t->re->world_size / (double)t->ntrain;
}

static void log_step(struct trainer *t, long step, float norm)
{
    double loss = t->meta.window_loss / (t->meta.window_n ? t->meta.window_n : 1);
    t->meta.window_loss = 0;
    t->meta.window_n = 0;
    if (t->re->rank != 0)
        return;
    fprintf(t->out,
            "{'loss': %.4f, 'grad_norm': %.4f, 'learning_rate': %.6g, 'epoch': %.4f, "
            "'step': %ld}\n",
            loss, norm, lr_at(t->o, step), epoch_at(t, step), step);
    fflush(t->out);
    if (!t->progress)
        return;
    double el = (double)(clock_mono_ns() - t->start_ns) / 1e9;
    double rate = el > 0 ? (double)(step - t->first_step) / el : 0;
    long left = rate > 0 ? (long)((double)(t->o->steps - step) / rate) : 0;
    int pct = (int)(100 * step / t->o->steps), bar = pct / 10;
    fprintf(t->progress, "\r%3d%%|%.*s%*s| %ld/%ld [%02ld:%02ld<%02ld:%02ld, %.2fit/s]", pct, bar,
            "##########", 10 - bar, "", step, t->o->steps, (long)el / 60, (long)el % 60, left / 60,
            left % 60, rate);
    if (step == t->o->steps)
        fputc('\n', t->progress);
    fflush(t->progress);
}

static int save(struct trainer *t, struct err *err)
{
    if (!t->o->ckpt_dir || t->re->rank != 0)
        return 0;
    return ckpt_save(t->o->ckpt_dir, &t->meta, &t->m, t->o->keep, err);
}

static void finish(struct trainer *t, long done)
{
    const int T = t->o->context;
    int n = 0, cap = 2048;
    int *ctx = xmalloc((size_t)cap * (size_t)T * sizeof(int)),
        *tgt = xmalloc((size_t)cap * sizeof(int));
    size_t stride = (t->ntok - t->ntrain) / (size_t)cap + 1;
    for (size_t p = t->ntrain; p + (size_t)T < t->ntok && n < cap; p += stride, n++) {
        for (int i = 0; i < T; i++)
            ctx[n * T + i] = t->tok[p + (size_t)i];
        tgt[n] = t->tok[p + (size_t)T];
    }
    double rt = (double)(clock_mono_ns() - t->start_ns) / 1e9;
    if (t->re->rank == 0 && n > 0)
        fprintf(t->out, "{'eval_loss': %.4f, 'epoch': %.4f, 'step': %lld}\n",
                model_loss(&t->m, ctx, tgt, n), epoch_at(t, t->meta.step), (long long)t->meta.step);
    if (t->re->rank == 0)
        fprintf(t->out,
                "{'train_runtime': %.3f, 'train_samples_per_second': %.1f, "
                "'train_steps_per_second': %.2f, 'train_loss': %.4f, 'epoch': %.4f}\n",
                rt, rt > 0 ? (double)done * t->o->batch * t->re->world_size / rt : 0.0,
                rt > 0 ? done / rt : 0.0, t->meta.total_loss / (t->meta.step ? t->meta.step : 1),
                epoch_at(t, t->meta.step));
    char hex[SHA256_HEX_LEN];
    crypto_sha256_hex(t->m.params, t->m.nparams * sizeof(float), hex);
    fprintf(t->out, "trainyard-train: rank %d step %lld weights sha256 %s\n", t->re->rank,
            (long long)t->meta.step, hex);
    fflush(t->out);
    free(ctx);
    free(tgt);
}

/* The loop proper; returns 0 when done, the signal number when stopped, -1 on error. */
static int loop(struct trainer *t, struct err *err)
{
    for (long step = t->meta.step + 1; step <= t->o->steps; step++) {
        float loss, norm;
        int stop = step_once(t, step, &loss, &norm, err);
        if (stop < 0)
            return -1;
        t->meta.step = step;
        t->meta.window_loss += loss;
        t->meta.window_n++;
        t->meta.total_loss += loss;
        if (step % t->o->log_every == 0 || step == t->o->steps)
            log_step(t, step, norm);
        int ckpt = t->o->ckpt_every > 0 && step % t->o->ckpt_every == 0;
        if ((ckpt || stop || step == t->o->steps) && save(t, err) < 0)
            return -1;
        if (stop) {
            fprintf(stderr, "trainyard-train: rank %d stopping after step %ld%s\n", t->re->rank,
                    step, t->o->ckpt_dir && t->re->rank == 0 ? ", checkpoint saved" : "");
            return stop_signal ? (int)stop_signal : SIGTERM;
        }
    }
    return 0;
}

static int check_opts(const struct train_opts *o, struct err *err)
{
    if (o->steps < 1 || o->batch < 1 || o->context < 1 || o->embed < 1 || o->hidden < 1 ||
        o->log_every < 1 || o->ckpt_every < 0 || !(o->lr > 0) || o->batch > 1 << 16 ||
        o->context > 1024 || o->embed > 4096 || o->hidden > 1 << 16)
        return err_set(err, ERR_INVALID, "train: an option is out of range");
    return 0;
}

int train_run(const struct train_opts *o, const struct rankenv *re, FILE *out, FILE *progress,
              struct err *err)
{
    struct trainer t = { .o = o, .re = re, .out = out, .progress = progress };
    int ret = -1;
    if (check_opts(o, err) < 0 || load_corpus(&t, o->data ? o->data : default_data(), err) < 0)
        goto out;
    t.meta.seed = o->seed;
    t.meta.batch = o->batch;
    t.meta.world_size = re->world_size;
    t.meta.cfg.context = o->context;
    t.meta.cfg.embed = o->embed;
    t.meta.cfg.hidden = o->hidden;
    model_init(&t.m, &t.meta.cfg, o->batch);
    model_init_params(&t.m, o->seed);
    if (o->ckpt_dir && resume(&t, err) < 0)
        goto out;
    t.first_step = t.meta.step;
    if (setup_comm(&t, err) < 0)
        goto out;
    t.comm = xmalloc((t.m.nparams + 2) * sizeof(float));
    t.ctx = xmalloc((size_t)o->batch * (size_t)o->context * sizeof(int));
    t.tgt = xmalloc((size_t)o->batch * sizeof(int));
    t.start_ns = clock_mono_ns();
    int rc = loop(&t, err);
    if (rc < 0)
        goto out;
    finish(&t, t.meta.step - t.first_step);
    ret = rc ? 128 + rc : 0;
out:
    fabric_close(t.fab);
    rdzv_close(t.rdzv);
    model_release(&t.m);
    free(t.tok);
    free(t.comm);
    free(t.ctx);
    free(t.tgt);
    return ret;
}
