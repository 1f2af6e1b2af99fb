/*
 * Tests of job/spec: the canonical text spec_check() writes, byte for byte. The store keeps that
 * text and Idempotency-Key retries compare its hash, so a change in its order, defaults or
 * number formatting would turn a retry across an upgrade into a 409: these cases pin it.
 */
#include "job/spec.h"
#include "check.h"
#include "core/jsonx.h"
#include "core/xalloc.h"
#include "tests/default_limits.h"

/* Their limits are the daemon's defaults, set in main. */
static struct spec_options local = { .default_executor = "local",
                                     .local_enabled = true,
                                     .local_slots = 8 };
static struct spec_options kube = { .default_executor = "kubernetes", .kubernetes_enabled = true };

/* The canonical text of input, or "" when spec_check() rejects it; *doc is the parsed input,
 * which the view borrows from. */
static char *canonical(const char *input, const struct spec_options *o, struct spec_view *v,
                       json_t **doc)
{
    *doc = jsonx_loadb(input, strlen(input), 32, NULL);
    struct buf out = BUF_INIT;
    buf_puts(&out, "");
    spec_check(*doc, o, &out, v, NULL);
    return buf_detach(&out, NULL);
}

static void check_canonical(const char *input, const struct spec_options *o, const char *want)
{
    json_t *doc;
    struct spec_view v;
    char *got = canonical(input, o, &v, &doc);
    CHECK_STR(got, want);
    free(got);
    json_decref(doc);
}

static void test_defaults_and_order(void)
{
    /* Defaults filled in, schema order whatever the input's, the daemon's executor last. */
    check_canonical("{\"command\":[\"python\",\"train.py\"],\"name\":\"ft\"}", &local,
                    "{\"name\":\"ft\",\"command\":[\"python\",\"train.py\"],\"nodes\":1,"
                    "\"procs_per_node\":1,\"restart\":{\"policy\":\"never\",\"max_restarts\":0,"
                    "\"max_preemptions\":10,\"avoid_failed_nodes\":true},\"priority\":0,"
                    "\"suspend\":false,\"executor\":\"local\"}");
    /* null reads as absent; a given executor keeps its place in the schema. */
    check_canonical("{\"name\":\"ft\",\"executor\":\"local\",\"command\":[\"x\"],\"nodes\":null,"
                    "\"restart\":{\"policy\":\"on_failure\",\"max_restarts\":2},\"labels\":{"
                    "\"team\":\"nlp\",\"a\":\"b\"},\"suspend\":true,\"priority\":-3}",
                    &local,
                    "{\"name\":\"ft\",\"command\":[\"x\"],\"nodes\":1,\"procs_per_node\":1,"
                    "\"restart\":{\"policy\":\"on_failure\",\"max_restarts\":2,"
                    "\"max_preemptions\":10,\"avoid_failed_nodes\":true},\"priority\":-3,"
                    "\"labels\":{\"team\":\"nlp\",\"a\":\"b\"},\"suspend\":true,"
                    "\"executor\":\"local\"}");
}

static void test_values(void)
{
    /* Quantities become strings; escapes as jansson writes them; documents kept as given. */
    check_canonical(
        "{\"name\":\"k\",\"image\":\"i\",\"resources\":{\"cpu\":8,\"memory\":2.5,\"shm\":\"1Gi\"},"
        "\"env\":{\"A\":\"tab\\there \\\"q\\\" "
        "\\u00e9\\u0001\",\"T\":{\"key\":\"k\",\"secret\":\"s\"}},"
        "\"kubernetes\":{\"tolerations\":[{\"key\":\"g\",\"operator\":\"Exists\"}],"
        "\"manifest\":{\"b\":[1,2.5,true,null],\"a\":{}}}}",
        &kube,
        "{\"name\":\"k\",\"image\":\"i\",\"env\":{\"A\":\"tab\\there \\\"q\\\" \xc3\xa9\\u0001\","
        "\"T\":{\"secret\":\"s\",\"key\":\"k\"}},\"nodes\":1,\"procs_per_node\":1,"
        "\"resources\":{\"cpu\":\"8\",\"memory\":\"2.5\",\"shm\":\"1Gi\"},\"restart\":{"
        "\"policy\":\"never\",\"max_restarts\":0,\"max_preemptions\":10,"
        "\"avoid_failed_nodes\":true},\"priority\":0,\"suspend\":false,\"kubernetes\":{"
        "\"kind\":\"PyTorchJob\",\"tolerations\":[{\"key\":\"g\",\"operator\":\"Exists\"}],"
        "\"manifest\":{\"b\":[1,2.5,true,null],\"a\":{}}},\"executor\":\"kubernetes\"}");
}

static void test_view_and_rejection(void)
{
    struct spec_view v;
    json_t *doc;
    char *text = canonical("{\"name\":\"ft\",\"command\":[\"x\"],\"nodes\":2,\"procs_per_node\":3,"
                           "\"labels\":{\"team\":\"nlp\"}}",
                           &(struct spec_options){ .limits = &default_limits()->spec,
                                                   .default_executor = "local",
                                                   .local_enabled = true },
                           &v, &doc);
    CHECK(text[0] == '{');
    CHECK_STR(v.name, "ft");
    CHECK_STR(v.executor, "local"); /* the daemon's default, though the input has none */
    CHECK_INT(v.nranks, 6);
    CHECK_STR(jsonx_str(v.labels, "team"), "nlp");
    free(text);
    json_decref(doc);
    /* Rejected without an err to report into: still rejected, and out left as it was. */
    text = canonical("{\"name\":\"ft\",\"command\":[\"x\"],\"nodes\":0}", &local, &v, &doc);
    CHECK_STR(text, "");
    free(text);
    json_decref(doc);
    text = canonical("{\"name\":\"ft\",\"command\":[\"x\"],\"bogus\":1}", &local, &v, &doc);
    CHECK_STR(text, "");
    free(text);
    json_decref(doc);
    /* Every bad field is listed, by JSON pointer. */
    doc = json_loads("{\"name\":\"Bad\",\"nodes\":\"2\",\"resources\":{\"gpus\":-1}}", 0, NULL);
    struct buf out = BUF_INIT;
    struct err err;
    err_init(&err);
    CHECK_INT(spec_check(doc, &local, &out, &v, &err), -1);
    CHECK_INT(err.nfields, 3);
    CHECK_STR(err.nfields == 3 ? err.fields[2].pointer : NULL, "/resources/gpus");
    CHECK_INT(out.len, 0);
    err_release(&err);
    buf_release(&out);
    json_decref(doc);
}

/* Issue 17: resources.memory took -0.0 (stored as "-0") and 1e300, which no quantity holds. */
static void test_quantities(void)
{
    static const char *const bad[] = { "-0.0", "1e300",  "-1",       "9223372036854775807",
                                       "1e17", "\"-0\"", "\"1e300\"" };
    char text[256];
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        snprintf(text, sizeof(text),
                 "{\"name\":\"q\",\"command\":[\"x\"],\"resources\":{\"memory\":%s}}", bad[i]);
        json_t *doc = json_loads(text, 0, NULL);
        struct spec_view v;
        struct buf out = BUF_INIT;
        struct err err;
        err_init(&err);
        if (spec_check(doc, &local, &out, &v, &err) == 0)
            fprintf(stderr, "memory %s accepted\n", bad[i]);
        CHECK_STR(err.nfields ? err.fields[0].pointer : "", "/resources/memory");
        err_release(&err);
        buf_release(&out);
        json_decref(doc);
    }
    struct spec_view v;
    json_t *doc;
    char *ok = canonical("{\"name\":\"q\",\"command\":[\"x\"],\"resources\":{\"memory\":0.5}}",
                         &local, &v, &doc);
    CHECK(strstr(ok, "\"memory\":\"0.5\"") != NULL);
    free(ok);
    json_decref(doc);
}

/* The pointer of the only bad field of input, or "" when it is accepted (or has several). */
static char *only_bad_field(const char *input)
{
    json_t *doc = json_loads(input, 0, NULL);
    struct buf out = BUF_INIT;
    struct spec_view v;
    struct err err;
    err_init(&err);
    spec_check(doc, &local, &out, &v, &err);
    char *ptr = xstrdup(err.nfields == 1 ? err.fields[0].pointer : "");
    err_release(&err);
    buf_release(&out);
    json_decref(doc);
    return ptr;
}

/* restart.backoff_seconds and max_backoff_seconds: kept when given, absent (the daemon's) when
 * not; the longest wait may not be shorter than the first. */
static void test_backoff_fields(void)
{
    struct spec_view v;
    json_t *doc;
    char *text = canonical("{\"name\":\"b\",\"command\":[\"x\"],\"restart\":{"
                           "\"max_backoff_seconds\":600,\"backoff_seconds\":0}}",
                           &local, &v, &doc);
    CHECK(strstr(text, "\"avoid_failed_nodes\":true,\"backoff_seconds\":0,"
                       "\"max_backoff_seconds\":600}") != NULL);
    CHECK_INT(v.backoff_seconds, 0);
    CHECK_INT(v.max_backoff_seconds, 600);
    free(text);
    json_decref(doc);
    text = canonical("{\"name\":\"b\",\"command\":[\"x\"]}", &local, &v, &doc);
    CHECK(strstr(text, "backoff") == NULL);
    CHECK_INT(v.backoff_seconds, -1);
    CHECK_INT(v.max_backoff_seconds, -1);
    free(text);
    json_decref(doc);
    static const char *const bad[][2] = {
        { "{\"backoff_seconds\":60,\"max_backoff_seconds\":30}", "/restart/max_backoff_seconds" },
        { "{\"backoff_seconds\":-1}", "/restart/backoff_seconds" },
        { "{\"backoff_seconds\":86401}", "/restart/backoff_seconds" },
        { "{\"max_backoff_seconds\":0}", "/restart/max_backoff_seconds" },
        { "{\"backoff_seconds\":\"10s\"}", "/restart/backoff_seconds" },
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        char input[256];
        snprintf(input, sizeof(input), "{\"name\":\"b\",\"command\":[\"x\"],\"restart\":%s}",
                 bad[i][0]);
        char *ptr = only_bad_field(input);
        CHECK_STR(ptr, bad[i][1]);
        free(ptr);
    }
}

int main(void)
{
    local.limits = kube.limits = &default_limits()->spec;
    test_defaults_and_order();
    test_values();
    test_view_and_rejection();
    test_quantities();
    test_backoff_fields();
    return check_done();
}
