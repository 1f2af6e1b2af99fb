/*
 * spec_check: what the two spec targets do after parsing (JSON or YAML): validate with the
 * daemon's default limits, then check that the canonical spec is a fixed point (validating it
 * again gives the same document) and that every view of it can be taken.
 */
#ifndef TY_FUZZ_SPEC_CHECK_H
#define TY_FUZZ_SPEC_CHECK_H

#include "api/spec.h"
#include "server/core/jsonx.h"
#include "tests/fuzz/fuzz.h"

/* The defaults of server/config.c. */
static const struct api_limits fuzz_limits = {
    .max_body_bytes = 1 << 20,
    .max_json_depth = 32,
    .max_string_bytes = 64 << 10,
    .max_ranks = 4096,
    .max_nodes = 1024,
    .max_procs_per_node = 64,
    .max_env = 256,
    .max_labels = 64,
    .max_args = 4096,
    .max_list_limit = 1000,
    .max_log_limit = 100000,
    .max_followers_per_client = 64,
};

static inline void fuzz_spec_check(const json_t *doc, bool kubernetes)
{
    struct spec_options opts = { .limits = &fuzz_limits,
                                 .default_executor = "local",
                                 .local_enabled = true,
                                 .kubernetes_enabled = kubernetes,
                                 .local_slots = 8 };
    struct err err;
    err_init(&err);
    json_t *spec = spec_validate(doc, &opts, &err);
    FUZZ_ASSERT(spec || err_is_set(&err));
    err_release(&err);
    if (!spec)
        return;
    struct spec_view v;
    spec_view(spec, &v);
    FUZZ_ASSERT(v.name && v.executor && v.nranks >= 1);
    char *text = jsonx_dumps(spec);
    err_init(&err);
    json_t *again = spec_validate(spec, &opts, &err);
    if (!again)
        fprintf(stderr, "canonical spec %s rejected: %s\n", text, err.msg);
    FUZZ_ASSERT(again && json_equal(again, spec));
    err_release(&err);
    free(text);
    json_decref(again);
    json_decref(spec);
}

#endif
