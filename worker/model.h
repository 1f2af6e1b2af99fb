/*
 * model: the reference trainer's network, a character-level language model in the style of
 * Bengio et al. (2003): the embeddings of the previous `context` characters are concatenated,
 * go through one tanh hidden layer, then a softmax over the vocabulary. Forward, backward and
 * AdamW are written out by hand in float32, single-threaded, loops in a fixed order, so the same
 * inputs give the same bits on every machine run (the resume and multi-rank tests rely on it).
 *
 * Parameters, gradients and Adam moments each live in one flat array (checkpoints and the
 * all-reduce move them as one block). struct model lives in the caller's storage
 * (model_init/model_release).
 */
#ifndef TY_WORKER_MODEL_H
#define TY_WORKER_MODEL_H

#include <stddef.h>
#include <stdint.h>

struct model_config {
    int vocab;   /* output classes */
    int context; /* characters of context */
    int embed;   /* embedding width per character */
    int hidden;  /* hidden units */
};

struct model {
    struct model_config cfg;
    size_t nparams;
    float *params, *grads, *m, *v;
    /* views into params (and the same offsets into grads) */
    size_t o_wte, o_w1, o_b1, o_w2, o_b2;
    /* activations for up to batch_cap examples */
    int batch_cap;
    float *x, *h, *probs, *dh, *dx;
};

/* Sizes the arrays for cfg; parameters start at zero (see model_init_params). */
void model_init(struct model *m, const struct model_config *cfg, int batch_cap);
void model_release(struct model *m);
/* Gaussian init scaled by fan-in, from a generator seeded with seed. */
void model_init_params(struct model *m, uint64_t seed);

/* One batch: ctx holds n*context token ids, tgt n ids. Sets grads to the gradient of the mean
 * cross-entropy and returns that mean. */
float model_forward_backward(struct model *m, const int *ctx, const int *tgt, int n);
/* Mean cross-entropy only. */
float model_loss(struct model *m, const int *ctx, const int *tgt, int n);

/* L2 norm of grads. */
float model_grad_norm(const struct model *m);
void model_scale_grads(struct model *m, float s);
/* AdamW (decoupled weight decay on matrices, not on biases); t counts steps from 1. */
void model_adamw(struct model *m, float lr, float beta1, float beta2, float eps, float wd, long t);

/* splitmix64: the trainer's random numbers, a pure function of the state. */
static inline uint64_t model_rng(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

#endif
