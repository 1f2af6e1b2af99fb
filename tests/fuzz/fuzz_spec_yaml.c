/* fuzz_spec_yaml: a job spec sent as application/yaml (YAML to JSON with alias and depth
 * budgets, then validation). */
#include "core/yamljson.h"
#include "tests/fuzz/spec_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct err err;
    err_init(&err);
    json_t *doc = yamljson_load((const char *)data, size, default_limits()->max_json_depth,
                                default_limits()->max_body_bytes, &err);
    FUZZ_ASSERT(doc || err_is_set(&err));
    err_release(&err);
    if (doc) {
        fuzz_spec_check(doc, size % 2 == 0);
        json_decref(doc);
    }
    return 0;
}
