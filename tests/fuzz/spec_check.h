/*
 * spec_check: what the two spec targets do after parsing (JSON or YAML): validate with the
 * daemon's default limits, then check that the canonical spec is a fixed point (validating it
 * again gives the same document) and that the views of the input and of the canonical spec
 * agree.
 */
#ifndef TY_FUZZ_SPEC_CHECK_H
#define TY_FUZZ_SPEC_CHECK_H

#include "job/spec.h"
#include "core/jsonx.h"
#include "tests/default_limits.h"
#include "tests/fuzz/fuzz.h"

/* The views of the input and of its canonical form agree on what the daemon acts on. */
static inline void fuzz_views_agree(const struct spec_view *a, const struct spec_view *b)
{
    FUZZ_ASSERT(strcmp(a->name, b->name) == 0 && strcmp(a->executor, b->executor) == 0);
    FUZZ_ASSERT(a->nranks == b->nranks && a->priority == b->priority && a->suspend == b->suspend);
    FUZZ_ASSERT(strcmp(a->restart_policy, b->restart_policy) == 0);
    FUZZ_ASSERT(a->max_restarts == b->max_restarts && a->max_preemptions == b->max_preemptions);
    FUZZ_ASSERT(json_equal(a->labels, b->labels) || (!a->labels && !json_object_size(b->labels)));
}

static inline void fuzz_spec_check(const json_t *doc, bool kubernetes)
{
    struct spec_options opts = { .limits = &default_limits()->spec,
                                 .default_executor = "local",
                                 .local_enabled = true,
                                 .kubernetes_enabled = kubernetes,
                                 .local_slots = 8 };
    struct err err;
    err_init(&err);
    struct buf text = BUF_INIT, again = BUF_INIT;
    struct spec_view v, cv, av;
    int rc = spec_check(doc, &opts, &text, &v, &err);
    FUZZ_ASSERT(rc == 0 ? !err_is_set(&err) && text.len : err_is_set(&err) && !text.len);
    err_release(&err);
    if (rc < 0) {
        buf_release(&text);
        return;
    }
    FUZZ_ASSERT(v.name && v.executor && v.nranks >= 1);
    /* The text is JSON, and a fixed point: checking the canonical spec gives it again. */
    json_t *spec = jsonx_loadb(text.data, text.len, 2048, NULL);
    FUZZ_ASSERT(spec);
    spec_view(spec, &cv);
    fuzz_views_agree(&v, &cv);
    err_init(&err);
    if (spec_check(spec, &opts, &again, &av, &err) < 0)
        fprintf(stderr, "canonical spec %s rejected: %s\n", buf_cstr(&text), err.msg);
    json_t *redone = jsonx_loadb(again.data, again.len, 2048, NULL);
    FUZZ_ASSERT(redone && json_equal(redone, spec)); /* "executor" may move: a default goes last */
    fuzz_views_agree(&v, &av);
    json_decref(redone);
    err_release(&err);
    buf_release(&text);
    buf_release(&again);
    json_decref(spec);
}

#endif
