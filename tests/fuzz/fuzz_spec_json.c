/* fuzz_spec_json: a job spec as POST /v1/jobs receives it in JSON (bounded parse, validation),
 * and the parsed document dumped by jsonx_dump and by jansson (they must agree). */
#include "core/jsonx.h"
#include "tests/fuzz/spec_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct err err;
    err_init(&err);
    json_t *doc = jsonx_loadb((const char *)data, size, default_limits()->max_json_depth, &err);
    FUZZ_ASSERT(doc || err_is_set(&err));
    err_release(&err);
    if (doc) {
        /* jsonx_dump writes what jansson writes, byte for byte (stored specs, hashes). */
        char *ours = jsonx_dumps(doc), *theirs = json_dumps(doc, JSON_COMPACT | JSON_ENCODE_ANY);
        FUZZ_ASSERT(!theirs || strcmp(ours, theirs) == 0);
        free(ours);
        free(theirs);
        fuzz_spec_check(doc, size % 2 == 0);
        json_decref(doc);
    }
    return 0;
}
