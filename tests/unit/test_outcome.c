/*
 * Tests of server/control/outcome: the spec's restart object mapped onto the retry policy (never,
 * on_failure, exit_code, `on` lists, budgets, node avoidance), stall limits from the spec's
 * health object, and the decisions that follow for the failures users meet most.
 */
#include "check.h"
#include "core/clock.h"
#include "server/control/outcome.h"

static void view(const char *spec_text, json_t **spec, struct spec_view *v)
{
    *spec = json_loads(spec_text, 0, NULL);
    spec_view(*spec, v);
}

static struct diag_summary summary(enum diag_kind kind, const char *node)
{
    struct diag_summary s = {
        .found = true, .kind = kind, .role = DIAG_CAUSE, .rank = 3, .log_rank = 3, .node = node
    };
    s.retry = kinds_retry_of(kind, DIAG_RETRY_KIND);
    s.node_fault = kinds_info(kind)->node_fault;
    return s;
}

static bool restarts(const char *spec_text, enum diag_kind kind, int restarts_done)
{
    json_t *spec;
    struct spec_view v;
    view(spec_text, &spec, &v);
    struct retry_policy p;
    outcome_policy(&v, &p);
    struct diag_summary s = summary(kind, "ip-10-0-1-7");
    struct retry_decision d;
    retry_decide(&s, &p, restarts_done, 0, &d);
    json_decref(spec);
    return d.restart;
}

static void test_policies(void)
{
    /* never (the default): nothing restarts. */
    CHECK(!restarts("{\"restart\":{}}", DIAG_NCCL_TIMEOUT, 0));
    CHECK(!restarts("{}", DIAG_PREEMPTION, 0));
    /* on_failure: retryable and unexplained failures, never deterministic ones or hangs. */
    const char *of = "{\"restart\":{\"policy\":\"on_failure\",\"max_restarts\":2}}";
    CHECK(restarts(of, DIAG_NCCL_TIMEOUT, 0));
    CHECK(restarts(of, DIAG_XID, 1));
    CHECK(restarts(of, DIAG_EXIT, 0));
    CHECK(!restarts(of, DIAG_NCCL_TIMEOUT, 2)); /* budget spent */
    CHECK(!restarts(of, DIAG_CUDA_OOM, 0));
    CHECK(!restarts(of, DIAG_PYTHON_EXCEPTION, 0));
    CHECK(!restarts(of, DIAG_NAN_LOSS, 0));
    CHECK(!restarts(of, DIAG_HANG, 0));
    /* Preemptions have their own budget: max_restarts 0 does not stop them. */
    CHECK(restarts("{\"restart\":{\"policy\":\"on_failure\"}}", DIAG_PREEMPTION, 0));
    /* `on` replaces the policy's categories. */
    const char *on =
        "{\"restart\":{\"on\":[\"nccl_timeout\",\"deterministic\"],\"max_restarts\":1}}";
    CHECK(restarts(on, DIAG_NCCL_TIMEOUT, 0));
    CHECK(restarts(on, DIAG_CUDA_OOM, 0));
    CHECK(!restarts(on, DIAG_XID, 0));
    CHECK(!restarts(on, DIAG_PREEMPTION, 0));
    CHECK(restarts("{\"restart\":{\"on\":[\"hang\"],\"max_restarts\":1}}", DIAG_HANG, 0));
}

static void test_avoid_node(void)
{
    json_t *spec;
    struct spec_view v;
    struct retry_policy p;
    struct retry_decision d;
    struct diag_summary s = summary(DIAG_XID, "ip-10-0-1-7");
    view("{\"restart\":{\"policy\":\"on_failure\",\"max_restarts\":1}}", &spec, &v);
    outcome_policy(&v, &p);
    retry_decide(&s, &p, 0, 0, &d);
    CHECK(d.restart);
    CHECK_STR(d.avoid_node, "ip-10-0-1-7");
    CHECK_STR(retry_category_name(d.category), "node_failure");
    json_decref(spec);
    view("{\"restart\":{\"policy\":\"on_failure\",\"max_restarts\":1,"
         "\"avoid_failed_nodes\":false}}",
         &spec, &v);
    outcome_policy(&v, &p);
    retry_decide(&s, &p, 0, 0, &d);
    CHECK(d.restart);
    CHECK_STR(d.avoid_node, "");
    json_decref(spec);
    /* A preflight failure blames the node too. */
    s = summary(DIAG_PREFLIGHT, "ip-10-0-1-9");
    view("{\"restart\":{\"on\":[\"node_failure\"],\"max_restarts\":1}}", &spec, &v);
    outcome_policy(&v, &p);
    retry_decide(&s, &p, 0, 0, &d);
    CHECK(d.restart);
    CHECK_STR(d.avoid_node, "ip-10-0-1-9");
    json_decref(spec);
}

static void test_budgets_and_stall(void)
{
    json_t *spec;
    struct spec_view v;
    struct retry_policy p;
    view("{\"restart\":{\"policy\":\"on_failure\",\"max_restarts\":4,\"max_preemptions\":2}}",
         &spec, &v);
    outcome_policy(&v, &p);
    CHECK_INT(p.max_restarts, 4);
    CHECK_INT(p.max_preemptions, 2);
    struct diag_summary s = summary(DIAG_PREEMPTION, NULL);
    struct retry_decision d;
    retry_decide(&s, &p, 0, 2, &d);
    CHECK(!d.restart);
    CHECK(d.preempted); /* ends `preempted`, not `failed` */
    json_decref(spec);

    struct stall_options o;
    view("{}", &spec, &v);
    outcome_stall_options(&v, 0, &o);
    CHECK_INT(o.floor_ns, 5 * 60 * NS_PER_SEC); /* the library's */
    outcome_stall_options(&v, 120 * NS_PER_SEC, &o);
    CHECK_INT(o.floor_ns, 120 * NS_PER_SEC); /* the daemon's --stall-floor */
    json_decref(spec);
    view("{\"health\":{\"stall_after_seconds\":30,\"startup_seconds\":600}}", &spec, &v);
    outcome_stall_options(&v, 120 * NS_PER_SEC, &o);
    CHECK_INT(o.floor_ns, 30 * NS_PER_SEC);
    CHECK_INT(o.startup_ns, 600 * NS_PER_SEC);
    CHECK_STR(v.on_stall, "none");
    json_decref(spec);
    view("{\"health\":{\"stall_after_seconds\":30,\"startup_seconds\":10}}", &spec, &v);
    outcome_stall_options(&v, 0, &o);
    CHECK_INT(o.startup_ns, 30 * NS_PER_SEC); /* never below the floor */
    json_decref(spec);
}

int main(void)
{
    test_policies();
    test_avoid_node();
    test_budgets_and_stall();
    return check_done();
}
