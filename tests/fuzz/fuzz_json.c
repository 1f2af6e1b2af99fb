/* fuzz_json: jsonx_loadb, the parser every request body goes through, against jansson's
 * json_loadb with the flags it promises to match: both reject the input, or both build equal
 * values. Two exceptions, where ours is the stricter: jansson nests up to 2048 levels, ours to
 * the limit it is given; and jansson takes a raw NUL byte after a number or a literal for the end
 * of the input ("[1\0]" parses), where a raw NUL byte is invalid anywhere in JSON. */
#include "core/jsonx.h"
#include "tests/fuzz/fuzz.h"

enum { MAX_DEPTH = 64 };

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct err err;
    err_init(&err);
    json_t *ours = jsonx_loadb((const char *)data, size, MAX_DEPTH, &err);
    FUZZ_ASSERT(ours || err.code == ERR_INVALID);
    bool too_deep = !ours && strstr(err.msg, "nested deeper") != NULL;
    err_release(&err);
    json_t *theirs = json_loadb((const char *)data, size,
                                JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL | JSON_DECODE_ANY, NULL);
    if (memchr(data, '\0', size)) {
        FUZZ_ASSERT(!ours);
    } else if (!too_deep) {
        FUZZ_ASSERT(!ours == !theirs);
        FUZZ_ASSERT(!ours || json_equal(ours, theirs));
    }
    json_decref(ours);
    json_decref(theirs);
    return 0;
}
