/*
 * model: forward, backward and AdamW of the reference trainer's MLP language model. The loops
 * put the contiguous index innermost so that the compiler vectorises them; the order of every
 * sum is fixed, which keeps results reproducible bit for bit.
 */
#include "worker/model.h"

#include <math.h>
#include <string.h>

#include "core/xalloc.h"

void model_init(struct model *m, const struct model_config *cfg, int batch_cap)
{
    memset(m, 0, sizeof(*m));
    m->cfg = *cfg;
    size_t V = (size_t)cfg->vocab, E = (size_t)cfg->embed, H = (size_t)cfg->hidden;
    size_t I = (size_t)cfg->context * E;
    m->o_wte = 0;
    m->o_w1 = m->o_wte + V * E;
    m->o_b1 = m->o_w1 + I * H;
    m->o_w2 = m->o_b1 + H;
    m->o_b2 = m->o_w2 + H * V;
    m->nparams = m->o_b2 + V;
    m->params = xcalloc(m->nparams, sizeof(float));
    m->grads = xcalloc(m->nparams, sizeof(float));
    m->m = xcalloc(m->nparams, sizeof(float));
    m->v = xcalloc(m->nparams, sizeof(float));
    m->batch_cap = batch_cap;
    size_t B = (size_t)batch_cap;
    m->x = xcalloc(B * I, sizeof(float));
    m->h = xcalloc(B * H, sizeof(float));
    m->probs = xcalloc(B * V, sizeof(float));
    m->dh = xcalloc(H, sizeof(float));
    m->dx = xcalloc(I, sizeof(float));
}

void model_release(struct model *m)
{
    free(m->params);
    free(m->grads);
    free(m->m);
    free(m->v);
    free(m->x);
    free(m->h);
    free(m->probs);
    free(m->dh);
    free(m->dx);
    memset(m, 0, sizeof(*m));
}

static float normal(uint64_t *s)
{
    /* Box-Muller on two uniforms in (0, 1]. */
    double u1 = ((double)(model_rng(s) >> 11) + 1.0) / 9007199254740992.0;
    double u2 = (double)(model_rng(s) >> 11) / 9007199254740992.0;
    return (float)(sqrt(-2.0 * log(u1)) * cos(2.0 * M_PI * u2));
}

void model_init_params(struct model *m, uint64_t seed)
{
    const struct model_config *c = &m->cfg;
    uint64_t s = seed;
    float in = (float)(c->context * c->embed);
    for (size_t i = m->o_wte; i < m->o_w1; i++)
        m->params[i] = normal(&s);
    for (size_t i = m->o_w1; i < m->o_b1; i++)
        m->params[i] = normal(&s) * (5.0f / 3.0f) / sqrtf(in); /* tanh gain */
    for (size_t i = m->o_w2; i < m->o_b2; i++)
        m->params[i] = normal(&s) * 0.1f / sqrtf((float)c->hidden);
    memset(m->params + m->o_b1, 0, (size_t)c->hidden * sizeof(float));
    memset(m->params + m->o_b2, 0, (size_t)c->vocab * sizeof(float));
    memset(m->m, 0, m->nparams * sizeof(float));
    memset(m->v, 0, m->nparams * sizeof(float));
}

/* Forward pass for n examples; returns the summed cross-entropy. Leaves x, h, probs set. */
static double forward(struct model *m, const int *ctx, const int *tgt, int n)
{
    const int V = m->cfg.vocab, E = m->cfg.embed, H = m->cfg.hidden, T = m->cfg.context;
    const int I = T * E;
    const float *wte = m->params + m->o_wte, *w1 = m->params + m->o_w1;
    const float *b1 = m->params + m->o_b1, *w2 = m->params + m->o_w2, *b2 = m->params + m->o_b2;
    double total = 0;
    for (int b = 0; b < n; b++) {
        float *x = m->x + (size_t)b * I, *h = m->h + (size_t)b * H, *p = m->probs + (size_t)b * V;
        for (int t = 0; t < T; t++)
            memcpy(x + t * E, wte + (size_t)ctx[b * T + t] * E, (size_t)E * sizeof(float));
        memcpy(h, b1, (size_t)H * sizeof(float));
        for (int i = 0; i < I; i++) {
            const float xi = x[i], *row = w1 + (size_t)i * H;
            for (int j = 0; j < H; j++)
                h[j] += xi * row[j];
        }
        for (int j = 0; j < H; j++)
            h[j] = tanhf(h[j]);
        memcpy(p, b2, (size_t)V * sizeof(float));
        for (int j = 0; j < H; j++) {
            const float hj = h[j], *row = w2 + (size_t)j * V;
            for (int k = 0; k < V; k++)
                p[k] += hj * row[k];
        }
        float mx = p[0];
        for (int k = 1; k < V; k++)
            mx = p[k] > mx ? p[k] : mx;
        float sum = 0;
        for (int k = 0; k < V; k++) {
            p[k] = expf(p[k] - mx);
            sum += p[k];
        }
        for (int k = 0; k < V; k++)
            p[k] /= sum;
        total -= log((double)p[tgt[b]] + 1e-30);
    }
    return total;
}

float model_loss(struct model *m, const int *ctx, const int *tgt, int n)
{
    double total = 0;
    for (int off = 0; off < n; off += m->batch_cap) {
        int k = n - off < m->batch_cap ? n - off : m->batch_cap;
        total += forward(m, ctx + (size_t)off * m->cfg.context, tgt + off, k);
    }
    return (float)(total / n);
}

/* Backward of one example b given dlogits in probs (already divided by n). */
static void backward_one(struct model *m, const int *ctx, int b)
{
    const int V = m->cfg.vocab, E = m->cfg.embed, H = m->cfg.hidden, T = m->cfg.context;
    const int I = T * E;
    const float *w1 = m->params + m->o_w1, *w2 = m->params + m->o_w2;
    float *gwte = m->grads + m->o_wte, *gw1 = m->grads + m->o_w1, *gb1 = m->grads + m->o_b1;
    float *gw2 = m->grads + m->o_w2, *gb2 = m->grads + m->o_b2;
    const float *x = m->x + (size_t)b * I, *h = m->h + (size_t)b * H;
    const float *dl = m->probs + (size_t)b * V;
    float *dh = m->dh, *dx = m->dx;
    for (int k = 0; k < V; k++)
        gb2[k] += dl[k];
    for (int j = 0; j < H; j++) {
        const float *row = w2 + (size_t)j * V;
        float *grow = gw2 + (size_t)j * V, acc = 0;
        for (int k = 0; k < V; k++) {
            grow[k] += h[j] * dl[k];
            acc += row[k] * dl[k];
        }
        dh[j] = acc * (1.0f - h[j] * h[j]); /* through tanh */
    }
    for (int j = 0; j < H; j++)
        gb1[j] += dh[j];
    for (int i = 0; i < I; i++) {
        const float *row = w1 + (size_t)i * H;
        float *grow = gw1 + (size_t)i * H, acc = 0;
        for (int j = 0; j < H; j++) {
            grow[j] += x[i] * dh[j];
            acc += row[j] * dh[j];
        }
        dx[i] = acc;
    }
    for (int t = 0; t < T; t++) {
        float *g = gwte + (size_t)ctx[b * T + t] * E;
        for (int e = 0; e < E; e++)
            g[e] += dx[t * E + e];
    }
}

float model_forward_backward(struct model *m, const int *ctx, const int *tgt, int n)
{
    const int V = m->cfg.vocab;
    memset(m->grads, 0, m->nparams * sizeof(float));
    double total = 0;
    for (int off = 0; off < n; off += m->batch_cap) {
        int k = n - off < m->batch_cap ? n - off : m->batch_cap;
        const int *c = ctx + (size_t)off * m->cfg.context;
        total += forward(m, c, tgt + off, k);
        for (int b = 0; b < k; b++) {
            float *dl = m->probs + (size_t)b * V; /* softmax - onehot, over the batch mean */
            dl[tgt[off + b]] -= 1.0f;
            for (int j = 0; j < V; j++)
                dl[j] /= (float)n;
            backward_one(m, c, b);
        }
    }
    return (float)(total / n);
}

float model_grad_norm(const struct model *m)
{
    double s = 0;
    for (size_t i = 0; i < m->nparams; i++)
        s += (double)m->grads[i] * m->grads[i];
    return (float)sqrt(s);
}

void model_scale_grads(struct model *m, float s)
{
    for (size_t i = 0; i < m->nparams; i++)
        m->grads[i] *= s;
}

void model_adamw(struct model *m, float lr, float beta1, float beta2, float eps, float wd, long t)
{
    float c1 = 1.0f - powf(beta1, (float)t), c2 = 1.0f - powf(beta2, (float)t);
    for (size_t i = 0; i < m->nparams; i++) {
        float g = m->grads[i];
        m->m[i] = beta1 * m->m[i] + (1.0f - beta1) * g;
        m->v[i] = beta2 * m->v[i] + (1.0f - beta2) * g * g;
        float mh = m->m[i] / c1, vh = m->v[i] / c2;
        int decay = (i >= m->o_w1 && i < m->o_b1) || (i >= m->o_w2 && i < m->o_b2);
        m->params[i] -= lr * (mh / (sqrtf(vh) + eps) + (decay ? wd * m->params[i] : 0.0f));
    }
}
