/* Unit tests of the store's resourceVersions, history window and watch-expiry arithmetic,
 * and of the JSON patch formats (tests/kube/store.c, tests/kube/patch.c). */
#include "tests/kube/patch.h"
#include "tests/kube/store.h"
#include "tests/kube/world.h"
#include "tests/unit/check.h"

static json_t *pod(const char *name)
{
    return json_pack("{s:{s:s, s:s}, s:{}}", "metadata", "name", name, "namespace", "default",
                     "spec");
}

static void test_versions_and_history(void)
{
    const struct resource *pods = resource_lookup("", "v1", "pods");
    struct store *s = store_new(4);
    int64_t start = store_rv(s);
    CHECK(store_create(s, pods, pod("a"), NULL) != NULL);
    CHECK_INT(store_rv(s), start + 1);
    CHECK_STR(kstr(kpath(store_get(s, pods, "default", "a"), "metadata"), "resourceVersion"),
              "1001");
    struct err err;
    err_init(&err);
    CHECK(store_create(s, pods, pod("a"), &err) == NULL);
    CHECK_STR(err.reason, "AlreadyExists");
    CHECK_STR(err.msg, "pods \"a\" already exists");
    err_release(&err);
    const struct store_event *e = store_event_after(s, start);
    CHECK(e && e->type == STORE_ADDED && e->rv == start + 1);
    CHECK(store_event_after(s, start + 1) == NULL); /* nothing newer yet */
    for (int i = 0; i < 5; i++) {
        json_t *copy = json_deep_copy(store_get(s, pods, "default", "a"));
        json_object_set_new(kobj(copy, "metadata"), "labels", json_pack("{s:i}", "n", i));
        CHECK(store_replace(s, pods, copy, NULL) != NULL);
    }
    /* 6 events, 4 kept: a watch from start (needs start+1) is too old, start+2 is fine */
    CHECK(store_oldest_rv(s) == start + 2);
    CHECK(store_event_after(s, start) == NULL);
    e = store_event_after(s, start + 2);
    CHECK(e && e->type == STORE_MODIFIED && e->rv == start + 3 && e->prev != NULL);
    CHECK(store_remove(s, pods, "default", "a", NULL) != NULL);
    e = store_event_after(s, store_rv(s) - 1);
    CHECK(e && e->type == STORE_DELETED);
    store_compact(s);
    CHECK_INT(store_oldest_rv(s), store_rv(s));
    CHECK(store_event_after(s, store_rv(s) - 1) == NULL);
    store_free(s);
}

static void test_generate_name_and_list_order(void)
{
    const struct resource *pods = resource_lookup("", "v1", "pods");
    struct store *s = store_new(16);
    json_t *p = json_pack("{s:{s:s, s:s}}", "metadata", "generateName", "job-", "namespace", "b");
    json_t *stored = store_create(s, pods, p, NULL);
    CHECK(stored && strlen(kstr(kpath(stored, "metadata"), "name")) == 9);
    store_create(s, pods, pod("z"), NULL);
    store_create(s, pods, pod("m"), NULL);
    size_t n;
    json_t **all = store_list(s, pods, NULL, &n);
    CHECK_INT(n, 3);
    CHECK_STR(kstr(kpath(all[0], "metadata"), "namespace"), "b");
    CHECK_STR(kstr(kpath(all[1], "metadata"), "name"), "m");
    store_list_free(all, n);
    all = store_list(s, pods, "default", &n);
    CHECK_INT(n, 2);
    store_list_free(all, n);
    store_free(s);
}

static void test_patches(void)
{
    json_t *doc = json_loads("{\"a\":{\"b\":1,\"c\":2},\"l\":[1,2]}", 0, NULL);
    json_t *mp = json_loads("{\"a\":{\"b\":null,\"d\":3},\"l\":[9]}", 0, NULL);
    patch_merge(&doc, mp);
    char *out = json_dumps(doc, JSON_SORT_KEYS | JSON_COMPACT);
    CHECK_STR(out, "{\"a\":{\"c\":2,\"d\":3},\"l\":[9]}");
    free(out);
    json_t *ops = json_loads("[{\"op\":\"add\",\"path\":\"/l/-\",\"value\":5},"
                             "{\"op\":\"replace\",\"path\":\"/a/c\",\"value\":7},"
                             "{\"op\":\"remove\",\"path\":\"/a/d\"},"
                             "{\"op\":\"add\",\"path\":\"/x~1y\",\"value\":true}]",
                             0, NULL);
    CHECK(patch_json(&doc, ops, NULL) == 0);
    out = json_dumps(doc, JSON_SORT_KEYS | JSON_COMPACT);
    CHECK_STR(out, "{\"a\":{\"c\":7},\"l\":[9,5],\"x/y\":true}");
    free(out);
    json_t *bad = json_loads("[{\"op\":\"test\",\"path\":\"/a/c\",\"value\":1}]", 0, NULL);
    CHECK(patch_json(&doc, bad, NULL) < 0);
    json_decref(bad);
    json_decref(ops);
    json_decref(mp);
    json_decref(doc);
}

int main(void)
{
    test_versions_and_history();
    test_generate_name_and_list_order();
    test_patches();
    return check_done();
}
