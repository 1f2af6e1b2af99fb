/* Unit tests of server/diag/stall (stall limit from the job's own cadence, stragglers) and
 * server/diag/retry (restart decisions from a diagnosis and a policy). */
#include "tests/unit/check.h"

#include <math.h>

#include "core/clock.h"
#include "server/diag/retry.h"
#include "server/diag/stall.h"

#define S NS_PER_SEC

struct timeline {
    int64_t steps[64], times[64];
    double durs[64];
};

/* n advances of `every` seconds starting at t0, one step each. */
static void cadence(struct timeline *tl, struct stall_rank *r, int rank, size_t n, int64_t t0,
                    double every)
{
    memset(r, 0, sizeof(*r));
    for (size_t i = 0; i < n; i++) {
        tl->steps[i] = (int64_t)i + 1;
        tl->times[i] = t0 + (int64_t)(every * (double)i * (double)S);
    }
    r->rank = rank;
    r->steps = tl->steps;
    r->times = tl->times;
    r->n = n;
    r->last_line_ns = n ? tl->times[n - 1] : 0;
    r->last_seq = (int64_t)n;
}

static void test_stall_limit(void)
{
    struct stall_options o;
    stall_options_default(&o);
    struct timeline tl;
    struct stall_rank r;
    struct stall_result res;
    int64_t t0 = 1000 * S;
    cadence(&tl, &r, 0, 21, t0, 10); /* 20 intervals of 10 s; last advance t0 + 200 s */
    int64_t last = t0 + 200 * S;
    stall_check(&r, 1, last + 60 * S, &o, &res);
    CHECK(!res.stalled);
    CHECK_INT(res.basis, STALL_BASIS_STEPS);
    CHECK_INT(res.limit_ns, 300 * S); /* the floor: 5 x 10 s is below 5 min */
    CHECK_INT(res.interval_pct_ns, 10 * S);
    CHECK_INT(res.intervals, 20);
    CHECK_INT(res.last_step, 21);
    CHECK_INT(res.last_progress_ns, last);
    stall_check(&r, 1, last + 301 * S, &o, &res);
    CHECK(res.stalled);
    CHECK_INT(res.idle_ns, 301 * S);

    /* A slow job (2 min per logged step) gets a proportionally longer limit. */
    cadence(&tl, &r, 0, 21, t0, 120);
    last = t0 + 2400 * S;
    stall_check(&r, 1, last + 500 * S, &o, &res);
    CHECK(!res.stalled);
    CHECK_INT(res.limit_ns, 600 * S);
    stall_check(&r, 1, last + 601 * S, &o, &res);
    CHECK(res.stalled);

    /* p90: two slow checkpoint intervals out of twenty do not raise the limit; three do. */
    cadence(&tl, &r, 0, 21, t0, 10);
    for (size_t i = 5; i < 21; i++)
        tl.times[i] += 90 * S; /* interval 4->5 is 100 s */
    for (size_t i = 12; i < 21; i++)
        tl.times[i] += 90 * S; /* interval 11->12 too */
    stall_check(&r, 1, tl.times[20], &o, &res);
    CHECK_INT(res.interval_pct_ns, 10 * S);
    for (size_t i = 17; i < 21; i++)
        tl.times[i] += 90 * S;
    stall_check(&r, 1, tl.times[20], &o, &res);
    CHECK_INT(res.interval_pct_ns, 100 * S);
    CHECK_INT(res.limit_ns, 500 * S);

    /* Custom options: floor 1 min, k = 3. */
    o.floor_ns = 60 * S;
    o.k = 3;
    cadence(&tl, &r, 0, 21, t0, 10);
    stall_check(&r, 1, t0 + 200 * S + 61 * S, &o, &res);
    CHECK_INT(res.limit_ns, 60 * S);
    CHECK(res.stalled);
}

static void test_stall_bases(void)
{
    struct stall_options o;
    stall_options_default(&o);
    struct timeline tl;
    struct stall_rank r[2];
    struct stall_result res;
    int64_t t0 = 1000 * S;
    /* Too few intervals: the startup limit (model loading, compilation) applies. */
    cadence(&tl, &r[0], 0, 3, t0, 10);
    stall_check(r, 1, t0 + 20 * S + 29 * 60 * S, &o, &res);
    CHECK(!res.stalled);
    CHECK_INT(res.limit_ns, 30 * 60 * S);
    stall_check(r, 1, t0 + 20 * S + 31 * 60 * S, &o, &res);
    CHECK(res.stalled);
    /* No steps at all: log output must keep moving. */
    struct stall_rank quiet = { .rank = 0, .last_line_ns = t0, .last_seq = 9 };
    stall_check(&quiet, 1, t0 + 10 * 60 * S, &o, &res);
    CHECK_INT(res.basis, STALL_BASIS_OUTPUT);
    CHECK(!res.stalled);
    CHECK_INT(res.last_step, -1);
    stall_check(&quiet, 1, t0 + 31 * 60 * S, &o, &res);
    CHECK(res.stalled);
    /* Nothing printed yet: nothing to judge. */
    struct stall_rank none = { .rank = 0 };
    stall_check(&none, 1, t0 + 1000 * 60 * S, &o, &res);
    CHECK_INT(res.basis, STALL_BASIS_NONE);
    CHECK(!res.stalled);
    stall_check(NULL, 0, t0, &o, &res);
    CHECK(!res.stalled);
    /* The step counter stuck while the log keeps talking (NCCL retries, warnings): stalled. */
    struct timeline tl2;
    cadence(&tl, &r[0], 0, 21, t0, 10);
    cadence(&tl2, &r[1], 1, 21, t0, 10);
    r[1].last_line_ns = t0 + 200 * S + 400 * S; /* rank 1 still prints */
    stall_check(r, 2, t0 + 200 * S + 401 * S, &o, &res);
    CHECK(res.stalled);
    CHECK_INT(res.basis, STALL_BASIS_STEPS);
    json_t *j = stall_json(&res, r, 2, NULL, 0);
    CHECK(json_is_true(json_object_get(j, "stalled")));
    CHECK_STR(json_string_value(json_object_get(j, "basis")), "steps");
    CHECK_INT(json_array_size(json_object_get(j, "ranks")), 2);
    CHECK_INT(json_integer_value(json_object_get(j, "last_step")), 21);
    json_decref(j);
}

static void test_stragglers(void)
{
    struct stall_options o;
    stall_options_default(&o);
    struct timeline tl[8];
    struct stall_rank r[8];
    /* Reported step durations: rank 5 takes twice as long. */
    for (int i = 0; i < 8; i++) {
        cadence(&tl[i], &r[i], i, 0, 0, 0);
        for (int k = 0; k < 10; k++)
            tl[i].durs[k] = (i == 5 ? 2.0 : 1.0) + 0.01 * k;
        r[i].durations = tl[i].durs;
        r[i].ndurations = 10;
    }
    struct stall_straggler s[8];
    size_t n = stall_stragglers(r, 8, &o, s, 8);
    CHECK_INT(n, 1);
    CHECK_INT(s[0].rank, 5);
    CHECK(fabs(s[0].ratio - 2.0) < 0.05);
    CHECK(fabs(s[0].median_s - 1.045) < 0.01);
    /* 1.4x is not a straggler at the default factor 1.5. */
    for (int k = 0; k < 10; k++)
        tl[5].durs[k] = 1.4;
    CHECK_INT(stall_stragglers(r, 8, &o, s, 8), 0);
    /* Derived from the step timelines when no durations are reported; slowest first. */
    for (int i = 0; i < 8; i++) {
        double every = i == 2 ? 3.0 : i == 6 ? 2.0 : 1.0;
        cadence(&tl[i], &r[i], i, 20, 0, every);
    }
    n = stall_stragglers(r, 8, &o, s, 8);
    CHECK_INT(n, 2);
    CHECK_INT(s[0].rank, 2);
    CHECK_INT(s[1].rank, 6);
    CHECK(fabs(s[0].ratio - 3.0) < 1e-6);
    CHECK_INT(stall_stragglers(r, 8, &o, s, 1), 1);
    /* Too few ranks to compare. */
    CHECK_INT(stall_stragglers(r, 2, &o, s, 8), 0);
    json_t *j = stall_json(&(struct stall_result){ 0 }, r, 0, s, 1);
    CHECK_INT(json_integer_value(
                  json_object_get(json_array_get(json_object_get(j, "stragglers"), 0), "rank")),
              2);
    json_decref(j);
}

static struct diag_summary summary(enum diag_kind kind, enum diag_retry retry, bool node_fault,
                                   const char *node)
{
    struct diag_summary s;
    memset(&s, 0, sizeof(s));
    s.found = kind != DIAG_KIND_NONE;
    s.kind = kind;
    s.retry = retry;
    s.node_fault = node_fault;
    s.node = node;
    return s;
}

static void test_retry(void)
{
    struct retry_policy p;
    retry_policy_default(&p);
    struct retry_decision d;
    struct diag_summary oom = summary(DIAG_CUDA_OOM, DIAG_DETERMINISTIC, false, "n1");
    retry_decide(&oom, &p, 0, 0, &d);
    CHECK(!d.restart);
    CHECK_INT(d.category, RETRY_DETERMINISTIC);
    CHECK_STR(d.reason, "deterministic failures are not restarted by the policy");
    p.on_deterministic = true; /* asked for */
    retry_decide(&oom, &p, 0, 0, &d);
    CHECK(d.restart);
    CHECK_STR(d.avoid_node, "");
    retry_policy_default(&p);

    struct diag_summary pre = summary(DIAG_PREEMPTION, DIAG_RETRYABLE, false, "spot-1");
    retry_decide(&pre, &p, 3, 0, &d); /* failure restarts used up: preemptions count apart */
    CHECK(d.restart);
    CHECK(d.preempted);
    CHECK_INT(d.category, RETRY_PREEMPTION);
    retry_decide(&pre, &p, 0, 10, &d);
    CHECK(!d.restart);
    CHECK(d.preempted);
    CHECK_STR(d.reason, "preemption: 10 of 10 preemption restarts used");
    struct diag_summary ev = summary(DIAG_EVICTION, DIAG_RETRYABLE, false, NULL);
    CHECK_INT(retry_categorize(&ev), RETRY_PREEMPTION);

    struct diag_summary xid = summary(DIAG_XID, DIAG_RETRYABLE, true, "ip-10-0-1-7");
    retry_decide(&xid, &p, 1, 0, &d);
    CHECK(d.restart);
    CHECK_INT(d.category, RETRY_NODE_FAILURE);
    CHECK_STR(d.avoid_node, "ip-10-0-1-7");
    CHECK_STR(d.reason, "node_failure: restart 2 of 3, avoiding node ip-10-0-1-7");
    p.avoid_node = false;
    retry_decide(&xid, &p, 1, 0, &d);
    CHECK_STR(d.avoid_node, "");
    retry_policy_default(&p);
    retry_decide(&xid, &p, 3, 0, &d);
    CHECK(!d.restart);
    /* An application Xid (13) is not the node's fault and not retryable. */
    struct diag_summary xid13 = summary(DIAG_XID, DIAG_DETERMINISTIC, false, "n");
    CHECK_INT(retry_categorize(&xid13), RETRY_DETERMINISTIC);
}

static void test_retry_infra(void)
{
    struct retry_policy p;
    retry_policy_default(&p);
    struct retry_decision d;
    struct diag_summary lost = summary(DIAG_NODE_LOST, DIAG_RETRYABLE, true, "n9");
    retry_decide(&lost, &p, 0, 0, &d);
    CHECK(d.restart);
    CHECK_STR(d.avoid_node, "n9");

    struct diag_summary nccl = summary(DIAG_NCCL_TIMEOUT, DIAG_RETRYABLE, false, "n2");
    retry_decide(&nccl, &p, 0, 0, &d);
    CHECK(d.restart);
    CHECK_INT(d.category, RETRY_NCCL);
    CHECK_STR(d.avoid_node, "");
    p.on_nccl = false;
    retry_decide(&nccl, &p, 0, 0, &d);
    CHECK(!d.restart);
    retry_policy_default(&p);

    struct diag_summary hang = summary(DIAG_HANG, DIAG_RETRY_UNKNOWN, false, NULL);
    retry_decide(&hang, &p, 0, 0, &d);
    CHECK(!d.restart);
    CHECK_INT(d.category, RETRY_HANG);
    p.on_hang = true;
    retry_decide(&hang, &p, 0, 0, &d);
    CHECK(d.restart);
    retry_policy_default(&p);

    struct diag_summary seg = summary(DIAG_SEGFAULT, DIAG_RETRY_UNKNOWN, false, NULL);
    retry_decide(&seg, &p, 0, 0, &d);
    CHECK(!d.restart);
    CHECK_INT(d.category, RETRY_UNKNOWN);
    struct diag_summary ecc94 = summary(DIAG_XID, DIAG_RETRYABLE, false, "n");
    CHECK_INT(retry_categorize(&ecc94), RETRY_TRANSIENT);
    struct diag_summary none = summary(DIAG_KIND_NONE, DIAG_RETRY_UNKNOWN, false, NULL);
    retry_decide(&none, &p, 0, 0, &d);
    CHECK(!d.restart);
    CHECK_INT(d.category, RETRY_NONE);
    json_t *j = retry_decision_json(&d);
    CHECK_STR(json_string_value(json_object_get(j, "category")), "none");
    CHECK(json_is_null(json_object_get(j, "avoid_node")));
    json_decref(j);
}

/* Which rank to look at: the one that went silent while the others still print; else the one
 * behind the others' step; the job's message names it with its last line. */
static void test_quiet_ranks(void)
{
    struct stall_options o;
    stall_options_default(&o);
    struct timeline tl[4];
    struct stall_rank r[4];
    int64_t t0 = 1714564800LL * S; /* 2024-05-01T12:00:00Z */
    for (int i = 0; i < 4; i++) {
        cadence(&tl[i], &r[i], i, 21, t0, 10); /* steps 1..21, the last at 12:03:20 */
        r[i].last_line = "step=21 loss=2.3";
        r[i].last_len = strlen(r[i].last_line);
    }
    int64_t now = t0 + 200 * S + 400 * S;
    for (int i = 0; i < 3; i++) { /* ranks 0-2 keep retrying NCCL; rank 3 printed nothing */
        r[i].last_line_ns = now - 5 * S;
        r[i].last_line = "NCCL WARN NET/Socket : peer closed";
        r[i].last_len = strlen(r[i].last_line);
    }
    struct stall_result res;
    stall_check(r, 4, now, &o, &res);
    CHECK(res.stalled);
    int q[8];
    CHECK_INT(stall_quiet(&res, r, 4, q, 8), 1);
    CHECK_INT(q[0], 3);
    char text[512];
    stall_summary(&res, r, 4, q, 1, text, sizeof(text));
    CHECK_STR(text, "rank 3 went quiet: its last line, at 12:03:20Z, was \"step=21 loss=2.3\"; no "
                    "training step since 12:03:20Z (step 21, limit 300 s)");
    json_t *j = stall_json(&res, r, 4, NULL, 0);
    CHECK_INT(json_integer_value(json_array_get(json_object_get(j, "quiet"), 0)), 3);
    CHECK_STR(json_string_value(json_object_get(j, "summary")), text);
    json_decref(j);

    /* Everyone silent at the same step: nothing tells them apart, and the message says so. */
    for (int i = 0; i < 4; i++)
        r[i].last_line_ns = t0 + 200 * S;
    stall_check(r, 4, now, &o, &res);
    CHECK_INT(stall_quiet(&res, r, 4, q, 8), 0);
    stall_summary(&res, r, 4, q, 0, text, sizeof(text));
    CHECK_STR(text,
              "every rank went quiet: no training step since 12:03:20Z (step 21, limit 300 s)");
    /* ... unless one is a step behind. */
    r[2].n = 20;
    stall_check(r, 4, now, &o, &res);
    CHECK_INT(stall_quiet(&res, r, 4, q, 8), 1);
    CHECK_INT(q[0], 2);
}

int main(void)
{
    test_quiet_ranks();
    test_stall_limit();
    test_stall_bases();
    test_stragglers();
    test_retry();
    test_retry_infra();
    return check_done();
}
