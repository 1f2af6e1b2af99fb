/*
 * Unit tests of the reference trainer's pieces: the hand-written backward pass against finite
 * differences, AdamW lowering the loss, determinism, and checkpoints (round trip, the newest
 * valid one wins, a corrupt newest one is skipped, old ones are pruned, no temporary is left).
 */
#include "tests/unit/check.h"

#include <dirent.h>
#include <math.h>
#include <stdlib.h>

#include "core/xalloc.h"
#include "worker/ckpt.h"
#include "worker/model.h"

static const struct model_config cfg = { .vocab = 7, .context = 3, .embed = 4, .hidden = 5 };
enum { B = 6 };
static int ctx[B * 3], tgt[B];

static void make_batch(void)
{
    uint64_t s = 42;
    for (int i = 0; i < B * 3; i++)
        ctx[i] = (int)(model_rng(&s) % 7);
    for (int i = 0; i < B; i++)
        tgt[i] = (int)(model_rng(&s) % 7);
}

static void test_gradients(void)
{
    struct model m;
    model_init(&m, &cfg, B);
    model_init_params(&m, 7);
    model_forward_backward(&m, ctx, tgt, B);
    float *g = xmalloc(m.nparams * sizeof(float));
    memcpy(g, m.grads, m.nparams * sizeof(float));
    int bad = 0;
    for (size_t i = 0; i < m.nparams; i++) {
        float keep = m.params[i], h = 1e-2f;
        m.params[i] = keep + h;
        double up = model_loss(&m, ctx, tgt, B);
        m.params[i] = keep - h;
        double down = model_loss(&m, ctx, tgt, B);
        m.params[i] = keep;
        double num = (up - down) / (2 * h);
        if (fabs(num - g[i]) > 2e-3 + 2e-2 * fabs(num)) {
            if (bad++ < 5)
                fprintf(stderr, "param %zu: analytic %g numeric %g\n", i, g[i], num);
        }
    }
    CHECK_INT(bad, 0);
    free(g);
    model_release(&m);
}

static void test_training_and_determinism(void)
{
    struct model a, b;
    model_init(&a, &cfg, B);
    model_init(&b, &cfg, B);
    model_init_params(&a, 1);
    model_init_params(&b, 1);
    float first = model_loss(&a, ctx, tgt, B), last = first;
    for (long t = 1; t <= 50; t++) {
        last = model_forward_backward(&a, ctx, tgt, B);
        model_adamw(&a, 1e-2f, 0.9f, 0.99f, 1e-8f, 0.01f, t);
        model_forward_backward(&b, ctx, tgt, B);
        model_adamw(&b, 1e-2f, 0.9f, 0.99f, 1e-8f, 0.01f, t);
    }
    CHECK(last < first * 0.5f);
    CHECK(memcmp(a.params, b.params, a.nparams * sizeof(float)) == 0);
    model_scale_grads(&a, 0);
    CHECK(model_grad_norm(&a) == 0.0f);
    model_release(&a);
    model_release(&b);
}

static int count_files(const char *dir, int *tmp)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    int n = 0;
    *tmp = 0;
    while (d && (e = readdir(d)))
        if (e->d_name[0] != '.' || strstr(e->d_name, ".tmp"))
            (e->d_name[0] == '.' ? (*tmp)++ : n++);
    if (d)
        closedir(d);
    return n;
}

static void test_checkpoints(void)
{
    char dir[] = "/tmp/ty-ckpt-test-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    struct err err;
    err_init(&err);
    struct model m;
    model_init(&m, &cfg, B);
    model_init_params(&m, 3);
    struct ckpt_meta meta = { .seed = 3, .cfg = cfg, .batch = B, .world_size = 1 };
    for (int step = 10; step <= 50; step += 10) {
        meta.step = step;
        m.params[0] = (float)step;
        CHECK_INT(ckpt_save(dir, &meta, &m, 3, &err), 0);
    }
    int tmp, n = count_files(dir, &tmp);
    CHECK_INT(n, 3); /* pruned to the newest three */
    CHECK_INT(tmp, 0);
    struct ckpt_meta got;
    float *state;
    size_t np;
    char *path;
    int skipped;
    CHECK_INT(ckpt_load_latest(dir, &got, &state, &np, &path, &skipped, &err), 1);
    CHECK_INT(got.step, 50);
    CHECK_INT(np, m.nparams);
    CHECK(state[0] == 50.0f && memcmp(state + 1, m.params + 1, (np - 1) * sizeof(float)) == 0);
    CHECK(memcmp(&got.cfg, &cfg, sizeof(cfg)) == 0);
    free(state);
    /* Flip one byte of the newest: it is skipped and the one before is used. */
    FILE *f = fopen(path, "r+b");
    fseek(f, 100, SEEK_SET);
    int ch = fgetc(f);
    fseek(f, 100, SEEK_SET);
    fputc(ch ^ 1, f);
    fclose(f);
    free(path);
    CHECK_INT(ckpt_load_latest(dir, &got, &state, &np, &path, &skipped, &err), 1);
    CHECK_INT(got.step, 40);
    CHECK_INT(skipped, 1);
    CHECK(state[0] == 40.0f);
    free(state);
    free(path);
    char *cmd = xasprintf("rm -rf %s", dir);
    CHECK_INT(system(cmd), 0);
    free(cmd);
    CHECK_INT(ckpt_load_latest(dir, &got, &state, &np, &path, &skipped, &err), 0); /* none */
    model_release(&m);
}

int main(void)
{
    make_batch();
    test_gradients();
    test_training_and_determinism();
    test_checkpoints();
    return check_done();
}
