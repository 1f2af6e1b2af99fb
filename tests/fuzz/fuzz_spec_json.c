/* fuzz_spec_json: a job spec as POST /v1/jobs receives it in JSON (bounded parse, validation). */
#include "server/core/jsonx.h"
#include "tests/fuzz/spec_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct err err;
    err_init(&err);
    json_t *doc = jsonx_loadb((const char *)data, size, fuzz_limits.max_json_depth, &err);
    FUZZ_ASSERT(doc || err_is_set(&err));
    err_release(&err);
    if (doc) {
        fuzz_spec_check(doc, size % 2 == 0);
        json_decref(doc);
    }
    return 0;
}
