/* mpatch: the merge patches kubesim sends and re-applies (RFC 7386), and what it leaves out. */
#include "tests/kube/sim/mpatch.h"
#include "tests/unit/check.h"

static json_t *J(const char *text)
{
    json_t *v = json_loads(text, 0, NULL);
    CHECK(v != NULL);
    return v;
}

static bool same(const json_t *a, const char *expected)
{
    json_t *e = J(expected);
    bool ok = json_equal(a, e);
    if (!ok) {
        char *got = json_dumps(a, JSON_COMPACT | JSON_SORT_KEYS);
        fprintf(stderr, "got %s, expected %s\n", got, expected);
        free(got);
    }
    json_decref(e);
    return ok;
}

static void test_diff(void)
{
    json_t *from = J("{\"kind\":\"Pod\",\"metadata\":{\"name\":\"p\",\"uid\":\"1\","
                     "\"resourceVersion\":\"5\",\"labels\":{\"a\":\"1\",\"b\":\"2\"}},"
                     "\"status\":{\"phase\":\"Pending\",\"conditions\":[{\"type\":\"A\"}],"
                     "\"hostIP\":\"x\"}}");
    json_t *to =
        J("{\"kind\":\"Pod\",\"metadata\":{\"name\":\"p\",\"uid\":\"9\","
          "\"resourceVersion\":\"77\",\"deletionTimestamp\":\"t\",\"labels\":{\"a\":\"1\"}},"
          "\"status\":{\"phase\":\"Running\",\"conditions\":[{\"type\":\"A\"},{\"type\":\"B\"}],"
          "\"podIP\":null}}");
    json_t *d = mpatch_diff(from, to);
    /* changed and removed members; arrays whole; a null that was absent is no change; what the
     * server owns (uid, resourceVersion, deletionTimestamp, kind) left out */
    CHECK(same(d, "{\"metadata\":{\"labels\":{\"b\":null}},\"status\":{\"phase\":\"Running\","
                  "\"conditions\":[{\"type\":\"A\"},{\"type\":\"B\"}],\"hostIP\":null}}"));
    json_t *back = json_deep_copy(from);
    mpatch_apply(back, d);
    json_t *again = mpatch_diff(back, to);
    CHECK(mpatch_empty(again)); /* applying the diff gives what it was made from */
    json_decref(again);
    json_decref(back);
    json_decref(d);
    d = mpatch_diff(from, from);
    CHECK(mpatch_empty(d));
    json_decref(d);
    json_decref(from);
    json_decref(to);
}

/* The rebase the mirror does: a newer server version plus our unsent changes. */
static void test_rebase(void)
{
    json_t *base = J("{\"spec\":{\"suspend\":false},\"status\":{\"phase\":\"Pending\"}}");
    json_t *mine = J("{\"spec\":{\"suspend\":false},\"status\":{\"phase\":\"Running\"}}");
    json_t *newer = J("{\"spec\":{\"suspend\":true},\"status\":{\"phase\":\"Pending\"}}");
    json_t *d = mpatch_diff(base, mine);
    mpatch_apply(newer, d);
    CHECK(same(newer, "{\"spec\":{\"suspend\":true},\"status\":{\"phase\":\"Running\"}}"));
    /* applying the same patch twice changes nothing more */
    mpatch_apply(newer, d);
    CHECK(same(newer, "{\"spec\":{\"suspend\":true},\"status\":{\"phase\":\"Running\"}}"));
    json_decref(d);
    json_decref(base);
    json_decref(mine);
    json_decref(newer);
}

static void test_apply_copies(void)
{
    json_t *target = J("{}");
    json_t *patch = J("{\"a\":[1,2],\"o\":{\"x\":1,\"gone\":null}}");
    mpatch_apply(target, patch);
    json_array_append_new(json_object_get(target, "a"), json_integer(3));
    CHECK(json_array_size(json_object_get(patch, "a")) == 2); /* the patch is not shared */
    CHECK(same(json_object_get(target, "o"), "{\"x\":1}"));
    json_decref(target);
    json_decref(patch);
}

int main(void)
{
    test_diff();
    test_rebase();
    test_apply_copies();
    return check_done();
}
