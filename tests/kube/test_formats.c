/* Unit tests of the wire formats the test API server must get exactly right: ages in tables,
 * log timestamps, Status bodies, bearer tokens, and the events.k8s.io/v1 conversion. */
#include "core/clock.h"
#include "tests/kube/auth.h"
#include "core/jsonx.h"
#include "tests/kube/eventsv1.h"
#include "tests/kube/store.h"
#include "tests/kube/status.h"
#include "tests/kube/table.h"
#include "tests/kube/world.h"
#include "tests/unit/check.h"

static const char *age(int64_t secs)
{
    static char out[32];
    return table_age(secs * NS_PER_SEC, out);
}

static void test_ages(void)
{
    /* k8s.io/apimachinery/pkg/util/duration.HumanDuration */
    CHECK_STR(age(0), "0s");
    CHECK_STR(age(119), "119s");
    CHECK_STR(age(120), "2m");
    CHECK_STR(age(125), "2m5s");
    CHECK_STR(age(600), "10m");
    CHECK_STR(age(3 * 3600), "3h");
    CHECK_STR(age(3 * 3600 + 60), "3h1m");
    CHECK_STR(age(9 * 3600), "9h");
    CHECK_STR(age(50 * 3600), "2d2h");
    CHECK_STR(age(10 * 86400), "10d");
    CHECK_STR(age(800 * 86400), "2y");
}

static void test_times(void)
{
    char out[40];
    int64_t t = 1795300000LL * NS_PER_SEC;
    CHECK_STR(ktime(t + 999, out), "2026-11-21T22:26:40Z");
    CHECK_STR(ktime_nano(t, out), "2026-11-21T22:26:40Z");
    CHECK_STR(ktime_nano(t + 120000000, out), "2026-11-21T22:26:40.12Z"); /* trailing zeros go */
    CHECK_STR(ktime_nano(t + 1, out), "2026-11-21T22:26:40.000000001Z");
}

static void test_status(void)
{
    struct err err;
    err_init(&err);
    const struct resource *jobs = resource_lookup("kubeflow.org", "v1", "pytorchjobs");
    store_not_found(&err, jobs, "x");
    json_t *st = status_from_err(&err, jobs, "x");
    char *text = json_dumps(st, JSON_COMPACT);
    CHECK_STR(text, "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":"
                    "\"Failure\",\"message\":\"pytorchjobs.kubeflow.org \\\"x\\\" not found\","
                    "\"reason\":\"NotFound\",\"code\":404,\"details\":{\"name\":\"x\",\"group\":"
                    "\"kubeflow.org\",\"kind\":\"pytorchjobs\"}}");
    free(text);
    json_decref(st);
    err_release(&err);
    err_init(&err);
    err_field(&err, "spec.runtimeRef.name", "Required value");
    st = status_from_err(&err, resource_lookup("trainer.kubeflow.org", "v1alpha1", "trainjobs"),
                         "t");
    CHECK_INT(jsonx_int(st, "code", 0), 422);
    CHECK_STR(kstr(st, "reason"), "Invalid");
    CHECK_STR(
        kstr(st, "message"),
        "TrainJob.trainer.kubeflow.org \"t\" is invalid: spec.runtimeRef.name: Required value");
    CHECK_STR(kstr(json_array_get(kpath(st, "details.causes"), 0), "field"),
              "spec.runtimeRef.name");
    CHECK_STR(kstr(kpath(st, "details"), "kind"), "TrainJob");
    json_decref(st);
    err_release(&err);
}

static void test_tokens(void)
{
    struct world w;
    world_init(&w, 16);
    w.auth = auth_new(60);
    char token[160], header[200];
    snprintf(header, sizeof(header), "Bearer %s", auth_mint(w.auth, -1, token));
    CHECK(auth_check(&w, header) == 0);
    CHECK(auth_check(&w, NULL) < 0);
    CHECK(auth_check(&w, token) < 0); /* no "Bearer " */
    header[strlen(header) - 1] ^= 1;  /* a wrong signature */
    CHECK(auth_check(&w, header) < 0);
    snprintf(header, sizeof(header), "Bearer %s", auth_mint(w.auth, 0, token));
    CHECK(auth_check(&w, header) == 0); /* ttl 0: no expiry */
    auth_revoke(w.auth);
    CHECK(auth_check(&w, header) == 0); /* issued in the same second as the revoke: kept */
    auth_free(w.auth);
    world_release(&w);
}

static void test_eventsv1(void)
{
    json_t *core = json_loads(
        "{\"metadata\":{\"name\":\"p.1\",\"namespace\":\"default\"},\"involvedObject\":{\"kind\":"
        "\"Pod\",\"name\":\"p\"},\"reason\":\"Started\",\"message\":\"Started container c\","
        "\"source\":{\"component\":\"kubelet\",\"host\":\"n1\"},\"count\":2,\"type\":\"Normal\","
        "\"reportingComponent\":\"kubelet\","
        "\"firstTimestamp\":\"2026-01-01T00:00:00Z\",\"lastTimestamp\":\"2026-01-01T00:00:05Z\"}",
        0, NULL);
    json_t *e = eventsv1_from_core(core);
    CHECK_STR(kstr(e, "apiVersion"), "events.k8s.io/v1");
    CHECK_STR(kstr(e, "note"), "Started container c");
    CHECK_STR(kstr(kpath(e, "regarding"), "name"), "p");
    CHECK_STR(kstr(e, "reportingController"), "kubelet");
    CHECK_STR(kstr(e, "reportingInstance"), "n1");
    CHECK_INT(jsonx_int(e, "deprecatedCount", 0), 2);
    CHECK_STR(kstr(e, "deprecatedLastTimestamp"), "2026-01-01T00:00:05Z");
    struct selector s;
    selector_init(&s);
    CHECK(selector_parse_fields(&s, "regarding.name=p,reportingController=kubelet", NULL) == 0);
    eventsv1_map_fields(&s);
    CHECK(selector_match_fields(&s, core));
    selector_release(&s);
    json_decref(e);
    json_decref(core);
}

int main(void)
{
    test_ages();
    test_times();
    test_status();
    test_tokens();
    test_eventsv1();
    return check_done();
}
