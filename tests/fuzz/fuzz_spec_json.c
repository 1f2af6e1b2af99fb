/* fuzz_spec_json: a job spec as POST /v1/jobs receives it in JSON (bounded parse, validation),
 * and the parsed document dumped by jsonx_dump against jansson: byte for byte where it holds no
 * real (stored specs, hashes); with reals, jsonx_dump writes the shortest form that reads back
 * (jsonx_put_real), so its text must parse back to an equal document. */
#include "core/jsonx.h"
#include "tests/fuzz/spec_check.h"

static bool has_real(const json_t *v)
{
    const char *key;
    json_t *item;
    size_t i;
    if (json_is_real(v))
        return true;
    if (json_is_object(v)) {
        json_object_foreach((json_t *)v, key, item) if (has_real(item)) return true;
    } else if (json_is_array(v)) {
        json_array_foreach(v, i, item) if (has_real(item)) return true;
    }
    return false;
}

static void check_dump(const json_t *doc)
{
    char *ours = jsonx_dumps(doc), *theirs = json_dumps(doc, JSON_COMPACT | JSON_ENCODE_ANY);
    if (!has_real(doc)) {
        FUZZ_ASSERT(!theirs || strcmp(ours, theirs) == 0);
    } else {
        json_t *back = json_loads(ours, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
        FUZZ_ASSERT(back && json_equal(back, doc));
        json_decref(back);
    }
    free(ours);
    free(theirs);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct err err;
    err_init(&err);
    json_t *doc = jsonx_loadb((const char *)data, size, default_limits()->max_json_depth, &err);
    FUZZ_ASSERT(doc || err_is_set(&err));
    err_release(&err);
    if (doc) {
        check_dump(doc);
        fuzz_spec_check(doc, size % 2 == 0);
        json_decref(doc);
    }
    return 0;
}
