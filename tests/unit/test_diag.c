/* Unit tests of server/diag/diag: the per-job API the ingest path calls (torchrun prefixes,
 * deduplication, limits, samples, stall findings, events) and the JSON it returns. The
 * first-failure rules on whole jobs are in test_diag_cases.c. */
#include "tests/unit/check.h"

#include <math.h>
#include <stdlib.h>

#include "core/clock.h"
#include "core/jsonx.h"
#include "core/utf8.h"
#include "server/diag/diag.h"
#include "server/diag/progparse.h"

#define T0 (1714564800LL * NS_PER_SEC)

static int64_t seq;

static size_t feed(struct diag *d, int rank, double t, const char *line,
                   struct progress_sample *out, size_t max)
{
    struct diag_line ln = { rank, ++seq, T0 + (int64_t)(t * 1e9), line, strlen(line) };
    return diag_feed(d, &ln, out, max);
}

static json_t *finding(json_t *j, size_t i)
{
    return json_array_get(json_object_get(j, "findings"), i);
}

static void test_empty(void)
{
    struct diag *d = diag_new(NULL);
    json_t *j = diag_json(d);
    CHECK(json_is_null(json_object_get(j, "summary")));
    CHECK_INT(json_array_size(json_object_get(j, "findings")), 0);
    CHECK_INT(json_integer_value(json_object_get(j, "findings_dropped")), 0);
    json_decref(j);
    struct diag_summary s;
    diag_summarize(d, &s);
    CHECK(!s.found);
    CHECK_INT(s.rank, -1);
    diag_free(d);
    diag_free(NULL);
}

static void test_prefixes(void)
{
    struct diag *d = diag_new(NULL);
    diag_rank_info(d, 1, "job-worker-1", "node-b");
    feed(d, 1, 1.0, "[rank12]: Traceback (most recent call last):", NULL, 0);
    feed(d, 1, 1.0, "[rank12]:   File \"/app/train.py\", line 5, in <module>", NULL, 0);
    feed(d, 1, 1.0, "[default13]:Traceback (most recent call last):", NULL, 0);
    feed(d, 1, 1.0, "[rank12]:     step()", NULL, 0);
    feed(d, 1, 1.0, "[default13]:  File \"/app/train.py\", line 9, in <module>", NULL, 0);
    feed(d, 1, 1.1, "[default13]:ZeroDivisionError: division by zero", NULL, 0);
    feed(d, 1, 1.2, "[rank12]: ValueError: bad value", NULL, 0);
    json_t *j = diag_json(d);
    CHECK_INT(json_array_size(json_object_get(j, "findings")), 2);
    json_t *a = finding(j, 0), *b = finding(j, 1);
    CHECK_INT(jsonx_int(a, "rank", -1), 13);
    CHECK_INT(jsonx_int(a, "log_rank", -1), 1);
    CHECK_STR(jsonx_str(a, "pod"), "job-worker-1");
    CHECK_STR(jsonx_str(a, "summary"),
              "rank 13 failed with ZeroDivisionError: division by zero (train.py:9 in <module>) "
              "on node node-b");
    CHECK_INT(jsonx_int(b, "rank", -1), 12);
    json_t *exc = json_object_get(b, "exception");
    CHECK_STR(jsonx_str(exc, "type"), "ValueError");
    CHECK_STR(jsonx_str(exc, "message"), "bad value");
    json_t *fr = json_array_get(json_object_get(exc, "frames"), 0);
    CHECK_STR(jsonx_str(fr, "file"), "/app/train.py");
    CHECK_INT(jsonx_int(fr, "line", 0), 5);
    CHECK_STR(jsonx_str(fr, "function"), "<module>");
    CHECK_STR(jsonx_str(fr, "code"), "step()");
    CHECK_STR(jsonx_str(b, "source"), "traceback");
    /* Evidence: the "Traceback" line and the exception line. */
    json_t *ev = json_object_get(b, "evidence");
    CHECK_INT(json_array_size(ev), 2);
    CHECK_INT(json_integer_value(json_array_get(ev, 0)), seq - 6);
    CHECK_INT(json_integer_value(json_array_get(ev, 1)), seq);
    /* Not a prefix: kept as text. */
    feed(d, 2, 2.0, "[rank]: SIGSEGV", NULL, 0);
    feed(d, 2, 2.0, "[rank3] SIGBUS received", NULL, 0);
    json_decref(j);
    j = diag_json(d);
    CHECK_INT(json_array_size(json_object_get(j, "findings")), 4);
    json_decref(j);
    diag_free(d);
}

static void test_dedupe_and_limits(void)
{
    struct diag_options o;
    diag_options_default(&o);
    o.max_findings = 4;
    struct diag *d = diag_new(&o);
    for (int i = 0; i < 100; i++)
        feed(d, 0, 1.0 + i,
             "h:1:2 [0] NCCL WARN NET/IB : Got completion from peer 10.0.0.2<1> "
             "with error 12, opcode 0",
             NULL, 0);
    CHECK_INT(diag_nfindings(d), 1);
    json_t *j = diag_json(d);
    json_t *f = finding(j, 0);
    CHECK_INT(jsonx_int(f, "count", 0), 100);
    CHECK_INT(json_array_size(json_object_get(f, "evidence")), DIAG_EVIDENCE_MAX);
    CHECK_INT(jsonx_int(f, "last_seq", 0), seq);
    CHECK_STR(jsonx_str(f, "detail"), "10.0.0.2<1>");
    json_decref(j);
    for (int r = 1; r <= 10; r++)
        feed(d, r, 200.0, "Fatal Python error: Aborted", NULL, 0);
    CHECK_INT(diag_nfindings(d), 4);
    j = diag_json(d);
    CHECK_INT(json_integer_value(json_object_get(j, "findings_dropped")), 7);
    json_decref(j);
    /* Ranks outside what a job can have are ignored by the tracker, not a crash. */
    feed(d, -1, 300.0, "step=1 loss=2", NULL, 0);
    feed(d, 1 << 20, 300.0, "step=1 loss=2", NULL, 0);
    diag_free(d);
}

static void test_samples_and_nan(void)
{
    struct diag *d = diag_new(NULL);
    struct progress_sample s[4];
    CHECK_INT(feed(d, 3, 1.0, "step=10 loss=2.5 lr=1e-4 tokens_per_sec=9000 grad_norm=1.1", s, 4),
              4);
    CHECK_STR(s[0].name, "loss");
    CHECK_INT(s[0].step, 10);
    CHECK_INT(s[0].rank, 3);
    CHECK_INT(s[0].seq, seq);
    CHECK_INT(s[0].time_ns, T0 + NS_PER_SEC);
    CHECK_INT(feed(d, 3, 2.0, "step=20 loss=2.4 lr=1e-4", NULL, 0), 0);
    CHECK_INT(diag_nfindings(d), 0);
    feed(d, 3, 3.0, "step=30 loss=nan lr=1e-4", s, 4);
    feed(d, 3, 4.0, "step=40 loss=nan lr=1e-4", s, 4);
    CHECK_INT(diag_nfindings(d), 1);
    struct diag_summary sum;
    diag_summarize(d, &sum);
    CHECK_INT(sum.kind, DIAG_NAN_LOSS);
    CHECK_STR(sum.text, "rank 3: the loss became NaN or infinite (loss = nan at step 30)");
    struct progress_state st;
    progress_state(diag_progress(d), &st);
    CHECK_INT(st.step, 40);
    CHECK(st.has_loss && isnan(st.loss));
    json_t *pj = progress_state_json(&st);
    CHECK_STR(jsonx_str(pj, "loss"), "nan");
    json_decref(pj);
    diag_free(d);
}

static void test_stall_and_events(void)
{
    struct diag *d = diag_new(NULL);
    for (int i = 0; i < 10; i++) {
        feed(d, 0, i * 10.0, "step=1 loss=2", NULL, 0);
    }
    struct stall_rank tl[4];
    size_t n = progress_timelines(diag_progress(d), tl, 4);
    struct stall_options o;
    stall_options_default(&o);
    struct stall_result r;
    stall_check(tl, n, T0 + 3600 * NS_PER_SEC, &o, &r);
    CHECK(r.stalled);
    diag_stall(d, &r);
    struct diag_summary s;
    diag_summarize(d, &s);
    CHECK_INT(s.kind, DIAG_HANG);
    CHECK_INT(s.rank, -1);
    CHECK(strncmp(s.text, "the job stopped making progress (no step for", 44) == 0);
    /* A stall verdict that is not stalled adds nothing. */
    r.stalled = false;
    diag_stall(d, &r);
    CHECK_INT(diag_nfindings(d), 1);
    /* A job-level event names no rank; an irrelevant one is ignored. */
    struct ending_event ev = { .rank = -1, .time_ns = T0, .reason = "Pulled" };
    diag_event(d, &ev);
    CHECK_INT(diag_nfindings(d), 1);
    ev.reason = "DeadlineExceeded";
    ev.node = "n7";
    ev.message = "Job was active longer than specified deadline";
    diag_event(d, &ev);
    diag_summarize(d, &s);
    CHECK_INT(s.kind, DIAG_DEADLINE);
    CHECK_STR(s.node, "n7");
    CHECK_STR(s.text, "the job reached its time limit (Job was active longer than specified "
                      "deadline)");
    json_t *j = diag_summary_json(&s);
    CHECK(json_is_null(json_object_get(j, "rank")));
    CHECK_STR(jsonx_str(j, "cause"), "deadline");
    CHECK_STR(jsonx_str(j, "reason"), "DeadlineExceeded");
    CHECK_STR(jsonx_str(j, "pattern"), "event");
    json_decref(j);
    diag_free(d);
}

/* Whatever bytes the logs contain, the JSON is valid UTF-8 throughout. */
static void test_hostile_bytes(void)
{
    struct diag *d = diag_new(NULL);
    feed(d, 0, 1.0, "Traceback (most recent call last):", NULL, 0);
    feed(d, 0, 1.0,
         "  File \"/w/\xff\xfe"
         ".py\", line 1, in \x80"
         "f",
         NULL, 0);
    feed(d, 0, 1.0, "    x = \"\x01\x02\x1b[31m\"", NULL, 0);
    feed(d, 0, 1.1,
         "RuntimeError: CUDA error: bad \xc3"
         "( thing \xe2\x82",
         NULL, 0);
    static char big[20000];
    memset(big, 'a', sizeof(big) - 1);
    memcpy(big + 100, "No space left on device: '/data/", 32);
    feed(d, 1, 2.0, big, NULL, 0);
    char nul[] = "abc\0def SIGSEGV";
    struct diag_line ln = { 2, ++seq, T0 + 3 * NS_PER_SEC, nul, sizeof(nul) - 1 };
    diag_feed(d, &ln, NULL, 0);
    json_t *j = diag_json(d);
    char *txt = json_dumps(j, JSON_COMPACT);
    CHECK(txt != NULL);
    CHECK(txt && utf8_valid(txt, strlen(txt)));
    CHECK_INT(json_array_size(json_object_get(j, "findings")), 3);
    json_t *exc = json_object_get(finding(j, 0), "exception");
    CHECK(json_is_object(exc));
    CHECK_STR(jsonx_str(json_array_get(json_object_get(exc, "frames"), 0), "file"), "/w/??.py");
    const char *detail = jsonx_str(finding(j, 1), "detail");
    CHECK(detail && strlen(detail) <= CLASSIFY_DETAIL_MAX && strstr(detail, "...") != NULL);
    free(txt);
    json_decref(j);
    diag_free(d);
}

/* Endings: time 0 (unknown) never makes an ending the earliest; exit 0 adds nothing. */
static void test_endings(void)
{
    struct diag *d = diag_new(NULL);
    struct ending ok = { .rank = 0, .exited = true, .exit_code = 0 };
    diag_ending(d, &ok);
    CHECK_INT(diag_nfindings(d), 0);
    struct ending e1 = { .rank = 1, .exited = true, .exit_code = 2, .node = "n1" };
    struct ending e2 = {
        .rank = 2, .exited = true, .exit_code = 3, .time_ns = T0 + 5, .pod = "p2", .node = "n2"
    };
    diag_ending(d, &e1);
    diag_ending(d, &e2);
    struct diag_summary s;
    diag_summarize(d, &s);
    CHECK_INT(s.rank, 2);
    CHECK(s.has_exit);
    CHECK_INT(s.exit_code, 3);
    CHECK_STR(s.pod, "p2");
    CHECK_STR(s.text, "rank 2 failed (exit code 3) on node n2");
    json_t *j = diag_summary_json(&s);
    CHECK_INT(jsonx_int(j, "exit_code", 0), 3);
    CHECK(json_is_null(json_object_get(j, "signal")));
    CHECK_STR(jsonx_str(j, "retry_class"), "unknown");
    CHECK(json_is_false(json_object_get(j, "retryable")));
    CHECK_INT(json_array_size(json_object_get(j, "ranks")), 2);
    json_decref(j);
    diag_free(d);
}

/* One rank's exceptions: the same type repeats into one finding, another type is its own. */
static void test_exception_identity(void)
{
    struct diag *d = diag_new(NULL);
    for (int i = 0; i < 3; i++) {
        feed(d, 4, 10.0 * i, "Traceback (most recent call last):", NULL, 0);
        feed(d, 4, 10.0 * i, "  File \"/w/up.py\", line 3, in push", NULL, 0);
        feed(d, 4, 10.0 * i, "ConnectionError: upload failed", NULL, 0);
    }
    feed(d, 4, 40.0, "Traceback (most recent call last):", NULL, 0);
    feed(d, 4, 40.0, "  File \"/w/train.py\", line 9, in step", NULL, 0);
    feed(d, 4, 40.0, "KeyError: 'labels'", NULL, 0);
    json_t *j = diag_json(d);
    CHECK_INT(json_array_size(json_object_get(j, "findings")), 2);
    CHECK_INT(jsonx_int(finding(j, 0), "count", 0), 3);
    CHECK_STR(jsonx_str(json_object_get(finding(j, 1), "exception"), "type"), "KeyError");
    json_decref(j);
    diag_free(d);
}

/* Every prefix of every known line, and random bytes, through the whole per-line path from
 * exact-size copies: boundary reads show up under AddressSanitizer, crashes anywhere. */
static void test_truncations(void)
{
    static const char *const extra[] = {
        "{'loss': 1.5, 'grad_norm': 0.2, 'learning_rate': 1e-05, 'epoch': 0.5}",
        " 45%|████▌     | 450/1000 [01:23<01:40,  5.43it/s, loss=2.31, lr=1e-4]",
        " iteration      100/  500000 | consumed samples: 51200 | lm loss: 7.1E+00 |",
        "epoch=0/micro_step=400/global_step=100, RunningAvgSamplesPerSec=25.02, MemAllocated=4GB",
        "steps: 100 loss: 2.3456 iter time (s): 0.512 samples/sec: 62.500",
        "[rank12]: step=10 loss=nan lr=1e-4",
        "[default3]:Traceback (most recent call last):",
        "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ",
    };
    size_t n;
    const struct diag_pattern *t = patterns_table(&n);
    struct diag *d = diag_new(NULL);
    struct progress_sample s[8];
    struct progparse pp;
    size_t lines = 0;
    for (size_t i = 0; i < n + sizeof(extra) / sizeof(extra[0]); i++) {
        const char *line = i < n ? t[i].example : extra[i - n];
        size_t len = strlen(line);
        for (size_t k = 0; k <= len; k++) {
            char *copy = malloc(k ? k : 1);
            memcpy(copy, line, k);
            classify_line(copy, k, NULL);
            progparse_line(copy, k, &pp);
            seq++;
            struct diag_line ln = { (int)(i % 4), seq, T0 + (int64_t)seq, copy, k };
            diag_feed(d, &ln, s, 8);
            free(copy);
            lines++;
        }
    }
    unsigned x = 12345;
    for (int i = 0; i < 20000; i++) {
        char buf[96];
        size_t k = (size_t)(i % 96);
        for (size_t j = 0; j < k; j++) {
            x = x * 1103515245u + 12345u;
            static const char alphabet[] = "{'|%=:[]rank0123456789 .eE-nan";
            unsigned r = x >> 16;
            buf[j] = i % 3 ? alphabet[r % (sizeof(alphabet) - 1)] : (char)(r & 0xff);
        }
        char *copy = malloc(k ? k : 1);
        memcpy(copy, buf, k);
        seq++;
        struct diag_line ln = { i % 7, seq, T0 + (int64_t)seq, copy, k };
        diag_feed(d, &ln, s, 8);
        free(copy);
    }
    json_t *j = diag_json(d);
    char *txt = json_dumps(j, JSON_COMPACT);
    CHECK(txt && utf8_valid(txt, strlen(txt)));
    CHECK(lines > 5000);
    free(txt);
    json_decref(j);
    diag_free(d);
}

int main(void)
{
    test_empty();
    test_prefixes();
    test_dedupe_and_limits();
    test_samples_and_nan();
    test_stall_and_events();
    test_hostile_bytes();
    test_endings();
    test_exception_identity();
    test_truncations();
    return check_done();
}
