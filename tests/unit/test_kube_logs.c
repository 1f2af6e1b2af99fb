/*
 * kube logs: the durable position of a pod's log and the dedupe it drives. The API server
 * cuts sinceTime to whole seconds, so a resumed stream repeats the earlier lines of that
 * second, and several lines may share one timestamp: each must be stored exactly once.
 */
#include "tests/unit/check.h"

#include "core/clock.h"
#include "server/kube/client.h"
#include "server/kube/logs.h"

struct line {
    int64_t ts;
    const char *text;
};

/* Feeds a stream into the position; appends what is taken to out. */
static void feed(const struct line *l, size_t n, int64_t *pos_ts, int *pos_n, char *out,
                 size_t size)
{
    int seen = 0;
    for (size_t i = 0; i < n; i++) {
        if (kube_log_take(l[i].ts, pos_ts, pos_n, &seen)) {
            size_t used = strlen(out);
            snprintf(out + used, size - used, "%s ", l[i].text);
        }
    }
}

static void resume_dedupe(void)
{
    const int64_t s = 1700000000LL * NS_PER_SEC;
    /* Three lines in the same nanosecond, others in the same second. */
    const struct line all[] = { { s + 1, "a" }, { s + 5, "b" }, { s + 5, "c" },
                                { s + 5, "d" }, { s + 9, "e" }, { s + NS_PER_SEC, "f" } };
    int64_t ts = 0;
    int n = 0;
    char got[256] = "";
    feed(all, 3, &ts, &n, got, sizeof(got)); /* the stream drops after "c" */
    CHECK_STR(got, "a b c ");
    CHECK(ts == s + 5 && n == 2);
    /* Resumed from the whole second: everything again, only "d" onwards is new. */
    feed(all, 6, &ts, &n, got, sizeof(got));
    CHECK_STR(got, "a b c d e f ");
    CHECK(ts == s + NS_PER_SEC && n == 1);
    feed(all, 6, &ts, &n, got, sizeof(got)); /* a daemon restart reading it all again */
    CHECK_STR(got, "a b c d e f ");
}

static void parse(void)
{
    int64_t ts, want;
    const char line[] = "2026-11-22T05:07:44.123456789Z [rank 0] step 1";
    long off = kube_log_parse_ts(line, strlen(line), &ts);
    CHECK_INT(off, 31);
    CHECK(clock_parse("2026-11-22T05:07:44.123456789Z", &want) == 0 && ts == want);
    CHECK(kube_log_parse_ts("no timestamp here", 17, &ts) < 0);
    CHECK(kube_log_parse_ts("2026-11-22T05:07:44Z", 20, &ts) < 0); /* cut by limitBytes */
}

static void container_status(void)
{
    json_t *pod = json_loads(
        "{\"status\":{\"phase\":\"Running\",\"containerStatuses\":[{\"name\":\"side\",\"state\":{"
        "\"running\":{}}},{\"name\":\"pytorch\",\"restartCount\":1,\"containerID\":\"c://2\","
        "\"state\":{\"running\":{\"startedAt\":\"2026-11-22T05:00:00Z\"}},\"lastState\":{"
        "\"terminated\":{\"exitCode\":137,\"reason\":\"OOMKilled\",\"containerID\":\"c://1\"}}}]}}",
        0, NULL);
    struct kube_cstatus st;
    kube_cstatus_from_pod(pod, "pytorch", &st);
    CHECK(st.known && st.running && !st.terminated && !st.final);
    CHECK_STR(st.cur_id, "c://2");
    CHECK_STR(st.last_id, "c://1");
    kube_cstatus_from_pod(pod, "missing", &st);
    CHECK(!st.known);
    json_decref(pod);
}

static void classify(void)
{
    char verb[32], res[64];
    struct {
        const char *method, *path, *verb, *res;
    } cases[] = {
        { "GET", "/api/v1/namespaces/ml/pods?labelSelector=a", "list", "pods" },
        { "GET", "/api/v1/namespaces/ml/pods?watch=true&resourceVersion=5", "watch", "pods" },
        { "GET", "/api/v1/namespaces/ml/pods/p-0/log?follow=true", "get", "pods/log" },
        { "GET", "/api/v1/nodes?limit=500", "list", "nodes" },
        { "POST", "/apis/kubeflow.org/v1/namespaces/ml/pytorchjobs", "create", "pytorchjobs" },
        { "PATCH", "/api/v1/namespaces/ml/secrets/x-token", "patch", "secrets" },
        { "DELETE", "/apis/trainer.kubeflow.org/v1alpha1/namespaces/ml/trainjobs/t", "delete",
          "trainjobs" },
        { "GET", "/openapi/v3/apis/trainer.kubeflow.org/v1alpha1", "get", "openapi" },
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        kube_classify(cases[i].method, cases[i].path, verb, sizeof(verb), res, sizeof(res));
        CHECK_STR(verb, cases[i].verb);
        CHECK_STR(res, cases[i].res);
    }
}

static void status_errors(void)
{
    struct err err;
    err_init(&err);
    const char forbidden[] =
        "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"status\":\"Failure\",\"message\":\"admission "
        "webhook \\\"validator.pytorchjob.training-operator.kubeflow.org\\\" denied the request: "
        "x\",\"reason\":\"Forbidden\",\"code\":403}";
    kube_status_err(403, forbidden, strlen(forbidden), &err);
    CHECK_INT(err.code, ERR_FORBIDDEN);
    CHECK_STR(err.reason, "Forbidden");
    CHECK(strstr(err.msg, "denied the request: x") != NULL);
    err_release(&err);
    const char invalid[] = "{\"kind\":\"Status\",\"message\":\"TrainJob \\\"x\\\" is invalid\","
                           "\"reason\":\"Invalid\",\"details\":{\"causes\":[{\"field\":\"spec."
                           "trainer.numNodes\",\"message\":\"must be >= 0\"}]},\"code\":422}";
    kube_status_err(422, invalid, strlen(invalid), &err);
    CHECK_INT(err.code, ERR_VALIDATION);
    CHECK(strstr(err.msg, "spec.trainer.numNodes: must be >= 0") != NULL);
    err_release(&err);
    const char busy[] = "{\"kind\":\"Status\",\"reason\":\"TooManyRequests\",\"details\":{"
                        "\"retryAfterSeconds\":7},\"code\":429}";
    kube_status_err(429, busy, strlen(busy), &err);
    CHECK_INT(err.code, ERR_RATE_LIMITED);
    CHECK_INT(err.retry_after, 7);
    err_release(&err);
    kube_status_err(404, "404 page not found\n", 19, &err);
    CHECK_INT(err.code, ERR_NOT_FOUND);
    CHECK(strstr(err.msg, "404 page not found") != NULL);
    err_release(&err);
    kube_status_err(401, "{\"kind\":\"Status\",\"reason\":\"Unauthorized\"}", 41, &err);
    CHECK_INT(err.code, ERR_UPSTREAM); /* the daemon's credentials, not the user's */
    err_release(&err);
}

int main(void)
{
    resume_dedupe();
    parse();
    container_status();
    classify();
    status_errors();
    return check_done();
}
