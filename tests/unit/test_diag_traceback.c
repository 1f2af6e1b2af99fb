/* Unit tests of server/diag/traceback (Python tracebacks, torchrun ChildFailedError reports)
 * and server/diag/ending (rank endings and platform events). */
#include "tests/unit/check.h"

#include <stdlib.h>

#include "server/diag/ending.h"
#include "server/diag/traceback.h"

static enum traceback_event feed(struct traceback *tb, int64_t seq, const char *line)
{
    return traceback_feed(tb, seq, line, strlen(line));
}

static void test_python_traceback(void)
{
    struct traceback *tb = traceback_new();
    traceback_start(tb, 10);
    CHECK(traceback_active(tb));
    CHECK_INT(feed(tb, 11, "  File \"/workspace/train.py\", line 212, in <module>"),
              TRACEBACK_CONSUMED);
    CHECK_INT(feed(tb, 12, "    main()"), TRACEBACK_CONSUMED);
    CHECK_INT(feed(tb, 13, "  File \"/workspace/train.py\", line 180, in main"),
              TRACEBACK_CONSUMED);
    CHECK_INT(feed(tb, 14, "    loss = model(batch).loss"), TRACEBACK_CONSUMED);
    CHECK_INT(feed(tb, 15, "           ^^^^^^^^^^^^"), TRACEBACK_CONSUMED);
    /* Interleaved output of another process in the same stream is handed back. */
    CHECK_INT(feed(tb, 16, "ip-10-0-1-7:4242:4310 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1]"),
              TRACEBACK_NOT_MINE);
    CHECK_INT(feed(tb, 17, "INFO:root:still training"), TRACEBACK_NOT_MINE);
    CHECK_INT(feed(tb, 18,
                   "  File \"/usr/lib/python3/site-packages/torch/nn/modules/module."
                   "py\", line 1553, in _wrapped_call_impl"),
              TRACEBACK_CONSUMED);
    CHECK_INT(feed(tb, 19, "    return self._call_impl(*args, **kwargs)"), TRACEBACK_CONSUMED);
    CHECK_INT(feed(tb, 20,
                   "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 "
                   "GiB."),
              TRACEBACK_EXCEPTION);
    CHECK(!traceback_active(tb));
    const struct traceback_exc *e = traceback_exc(tb);
    CHECK_STR(e->type, "torch.OutOfMemoryError");
    CHECK_STR(e->message, "CUDA out of memory. Tried to allocate 2.00 GiB.");
    CHECK_INT(e->nframes, 3);
    CHECK_INT(e->omitted, 0);
    CHECK_STR(e->frames[0].file, "/workspace/train.py");
    CHECK_INT(e->frames[0].line, 212);
    CHECK_STR(e->frames[0].func, "<module>");
    CHECK_STR(e->frames[0].code, "main()");
    CHECK_STR(e->frames[1].code, "loss = model(batch).loss");
    CHECK_STR(e->frames[2].func, "_wrapped_call_impl");
    CHECK_INT(e->first_seq, 10);
    CHECK_INT(e->last_seq, 20);
    /* An idle machine takes nothing. */
    CHECK_INT(feed(tb, 21, "  File \"x.py\", line 1, in f"), TRACEBACK_NOT_MINE);
    traceback_free(tb);
}

/* PyTorch's re-raise of a DataLoader worker's exception: the original is the answer, with the
 * wrapper's message as context and the frames of both. */
static void test_rewrapped(void)
{
    struct traceback *tb = traceback_new();
    traceback_start(tb, 1);
    feed(tb, 2, "  File \"/workspace/train.py\", line 198, in <module>");
    feed(tb, 3, "    trainer.train()");
    feed(tb, 4, "  File \"/usr/lib/python3/site-packages/torch/_utils.py\", line 722, in reraise");
    CHECK_INT(feed(tb, 5, "KeyError: Caught KeyError in DataLoader worker process 3."),
              TRACEBACK_CONSUMED);
    CHECK_INT(feed(tb, 6, "Original Traceback (most recent call last):"), TRACEBACK_CONSUMED);
    feed(tb, 7, "  File \"/workspace/data.py\", line 88, in __getitem__");
    feed(tb, 8, "    text = row[\"input_text\"]");
    CHECK_INT(feed(tb, 9, "KeyError: 'input_text'"), TRACEBACK_EXCEPTION);
    const struct traceback_exc *e = traceback_exc(tb);
    CHECK_STR(e->type, "KeyError");
    CHECK_STR(e->message, "'input_text'");
    CHECK_STR(e->context, "Caught KeyError in DataLoader worker process 3.");
    CHECK_INT(e->nframes, 3);
    CHECK_STR(e->frames[0].code, "trainer.train()");
    CHECK_STR(e->frames[2].file, "/workspace/data.py");
    CHECK_STR(e->frames[2].code, "text = row[\"input_text\"]");
    CHECK_INT(e->last_seq, 9);
    /* A wrapper without its original: closed by the next line, which is not its own. */
    traceback_start(tb, 20);
    feed(tb, 21, "  File \"/workspace/train.py\", line 5, in <module>");
    CHECK_INT(feed(tb, 22, "ValueError: Caught ValueError in replica 0 on device 0."),
              TRACEBACK_CONSUMED);
    CHECK_INT(feed(tb, 23, "step 7"), TRACEBACK_EXCEPTION_BEFORE);
    CHECK_STR(traceback_exc(tb)->message, "Caught ValueError in replica 0 on device 0.");
    CHECK_INT(traceback_exc(tb)->last_seq, 22);
    CHECK(!traceback_active(tb));
    /* "Caught" of another kind is an ordinary message. */
    traceback_start(tb, 30);
    CHECK_INT(feed(tb, 31, "RuntimeError: Caught exception in all_reduce: peer went away"),
              TRACEBACK_EXCEPTION);
    traceback_free(tb);
}

static void test_deep_traceback(void)
{
    struct traceback *tb = traceback_new();
    traceback_start(tb, 1);
    char line[128];
    for (int i = 0; i < 1000; i++) {
        snprintf(line, sizeof(line), "  File \"/w/rec.py\", line %d, in f%d", i + 1, i);
        CHECK_INT(feed(tb, 2 + i, line), TRACEBACK_CONSUMED);
        CHECK_INT(feed(tb, 2 + i, "    return f(n - 1)"), TRACEBACK_CONSUMED);
    }
    CHECK_INT(feed(tb, 5000, "  [Previous line repeated 996 more times]"), TRACEBACK_CONSUMED);
    CHECK_INT(feed(tb, 5001, "RecursionError: maximum recursion depth exceeded"),
              TRACEBACK_EXCEPTION);
    const struct traceback_exc *e = traceback_exc(tb);
    CHECK_INT(e->nframes, TRACEBACK_FRAMES);
    CHECK_INT(e->omitted, 1000 - TRACEBACK_FRAMES);
    CHECK_STR(e->frames[0].func, "f0");
    CHECK_STR(e->frames[TRACEBACK_HEAD - 1].func, "f2");
    CHECK_STR(e->frames[TRACEBACK_HEAD].func, "f992"); /* the tail is the last 8, in order */
    CHECK_STR(e->frames[TRACEBACK_FRAMES - 1].func, "f999");
    CHECK_INT(e->frames[TRACEBACK_FRAMES - 1].line, 1000);
    traceback_free(tb);
}

static void test_exception_lines(void)
{
    size_t tl, mo;
    const char *l1 = "ValueError: bad shape";
    CHECK(traceback_parse_exception(l1, strlen(l1), &tl, &mo));
    CHECK_INT(tl, 10);
    CHECK_STR(l1 + mo, "bad shape");
    const char *l2 = "KeyboardInterrupt";
    CHECK(traceback_parse_exception(l2, strlen(l2), &tl, &mo));
    CHECK_INT(tl, strlen(l2));
    const char *l3 = "torch._dynamo.exc.Unsupported: call_function";
    CHECK(traceback_parse_exception(l3, strlen(l3), &tl, &mo));
    CHECK_INT(tl, strlen("torch._dynamo.exc.Unsupported"));
    static const char *const not_exc[] = { "INFO:root:hello",
                                           "E0501 12:00:00 x.cpp:1] boom",
                                           "Epoch 1: loss 2",
                                           "[rank0]: x",
                                           "  File \"a\"",
                                           "ncclSystemError x",
                                           "" };
    for (size_t i = 0; i < sizeof(not_exc) / sizeof(not_exc[0]); i++)
        CHECK(!traceback_parse_exception(not_exc[i], strlen(not_exc[i]), &tl, &mo));
}

/* A stream that opened a traceback and never finished it gives up eventually. */
static void test_abandon(void)
{
    struct traceback *tb = traceback_new();
    traceback_start(tb, 1);
    for (int i = 0; i < 100 && traceback_active(tb); i++)
        feed(tb, 2 + i, "[2024-05-01 12:00:00] unrelated output");
    CHECK(!traceback_active(tb));
    traceback_free(tb);
}

static const char *const torchrun_report[] = {
    "Traceback (most recent call last):",
    "  File \"/usr/local/bin/torchrun\", line 8, in <module>",
    "    sys.exit(main())",
    "  File \"/usr/lib/python3/site-packages/torch/distributed/run.py\", line 919, in main",
    "    run(args)",
    "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ",
    "============================================================",
    "train.py FAILED",
    "------------------------------------------------------------",
    "Failures:",
    "[1]:",
    "  time      : 2024-05-01_12:00:04",
    "  host      : ip-10-0-1-9.ec2.internal",
    "  rank      : 6 (local_rank: 6)",
    "  exitcode  : -6 (pid: 4401)",
    "  error_file: <N/A>",
    "  traceback : Signal 6 (SIGABRT) received by PID 4401",
    "------------------------------------------------------------",
    "Root Cause (first observed failure):",
    "[0]:",
    "  time      : 2024-05-01_12:00:01",
    "  host      : ip-10-0-1-9.ec2.internal",
    "  rank      : 13 (local_rank: 5)",
    "  exitcode  : 1 (pid: 4400)",
    "  error_file: /tmp/torchelastic_x/attempt_0/5/error.json",
    "  traceback : Traceback (most recent call last):",
    "    File \"/usr/lib/python3/site-packages/torch/distributed/elastic/multiprocessing/errors/"
    "__init__.py\", line 355, in wrapper",
    "      return f(*args, **kwargs)",
    "    File \"/workspace/train.py\", line 97, in main",
    "      loss.backward()",
    "  torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.50 GiB. GPU 5 has a "
    "total capacity of 79.15 GiB of which 402.00 MiB is free.",
    "",
    "============================================================",
};

static void test_torchrun(void)
{
    struct traceback *tb = traceback_new();
    size_t n = sizeof(torchrun_report) / sizeof(torchrun_report[0]);
    traceback_start(tb, 100);
    enum traceback_event ev = TRACEBACK_NOT_MINE;
    for (size_t i = 1; i < n; i++) {
        ev = feed(tb, 100 + (int64_t)i, torchrun_report[i]);
        if (i < n - 1)
            CHECK_INT(ev, TRACEBACK_CONSUMED);
    }
    CHECK_INT(ev, TRACEBACK_TORCHRUN);
    CHECK(!traceback_active(tb));
    const struct traceback_report *r = traceback_report(tb);
    CHECK_INT(r->n, 2);
    CHECK_INT(r->first_seq, 105);
    CHECK(!r->failures[0].root);
    CHECK_INT(r->failures[0].rank, 6);
    CHECK_INT(r->failures[0].exitcode, -6);
    CHECK(r->failures[0].pat == NULL); /* "Signal 6 (SIGABRT)" is not a log signature */
    const struct traceback_failure *root = &r->failures[1];
    CHECK(root->root);
    CHECK_INT(root->rank, 13);
    CHECK_INT(root->local_rank, 5);
    CHECK(root->has_exit);
    CHECK_INT(root->exitcode, 1);
    CHECK_STR(root->host, "ip-10-0-1-9.ec2.internal");
    CHECK_STR(root->time, "2024-05-01_12:00:01");
    CHECK(root->pat && strcmp(root->pat->id, "cuda_oom") == 0);
    CHECK_STR(root->detail, "1.50 GiB");
    CHECK_INT(root->seq, 100 + 19);
    traceback_free(tb);

    /* A ChildFailedError mention without a report after it is dropped quickly. */
    tb = traceback_new();
    traceback_start_torchrun(tb, 1);
    CHECK_INT(feed(tb, 2, "something else"), TRACEBACK_CONSUMED);
    feed(tb, 3, "and more");
    feed(tb, 4, "and more");
    CHECK_INT(feed(tb, 5, "x"), TRACEBACK_NOT_MINE);
    CHECK(!traceback_active(tb));
    traceback_free(tb);
}

/* Lines are byte ranges, not C strings: nothing may read past them. Each line is fed from a
 * heap copy of exactly its length, so AddressSanitizer catches any over-read. */
static void test_unterminated(void)
{
    static const char *const lines[] = {
        "Traceback (most recent call last):",
        "  File \"a.py\", line 1, in f",
        "    ^^^^^^",
        "",
        "    x",
        "ValueError: v",
    };
    struct traceback *tb = traceback_new();
    traceback_start(tb, 1);
    for (size_t i = 1; i < sizeof(lines) / sizeof(lines[0]); i++) {
        size_t n = strlen(lines[i]);
        char *copy = malloc(n ? n : 1);
        memcpy(copy, lines[i], n);
        traceback_feed(tb, (int64_t)i, copy, n);
        free(copy);
    }
    CHECK_STR(traceback_exc(tb)->type, "ValueError");
    size_t n = sizeof(torchrun_report) / sizeof(torchrun_report[0]);
    traceback_start(tb, 100);
    enum traceback_event ev = TRACEBACK_NOT_MINE;
    for (size_t i = 1; i < n; i++) {
        size_t len = strlen(torchrun_report[i]);
        char *copy = malloc(len ? len : 1);
        memcpy(copy, torchrun_report[i], len);
        ev = traceback_feed(tb, 100 + (int64_t)i, copy, len);
        free(copy);
    }
    CHECK_INT(ev, TRACEBACK_TORCHRUN);
    CHECK_INT(traceback_report(tb)->n, 2);
    traceback_free(tb);
}

static void classify_end(const struct ending *e, struct ending_class *c)
{
    ending_classify(e, c);
}

static void test_endings(void)
{
    struct ending_class c;
    struct ending e = { .rank = 3, .exited = true, .exit_code = 0 };
    classify_end(&e, &c);
    CHECK_INT(c.kind, DIAG_KIND_NONE);
    e.exit_code = 1;
    classify_end(&e, &c);
    CHECK_INT(c.kind, DIAG_EXIT);
    CHECK_INT(c.role, DIAG_SYMPTOM);
    CHECK_STR(c.detail, "exit code 1");
    /* Kubernetes reports SIGKILL as exit code 137. */
    e.exit_code = 137;
    classify_end(&e, &c);
    CHECK_INT(c.kind, DIAG_KILLED);
    CHECK_INT(c.signal, 9);
    CHECK_STR(c.detail, "exit code 137, SIGKILL");
    e.reason = "OOMKilled";
    classify_end(&e, &c);
    CHECK_INT(c.kind, DIAG_HOST_OOM);
    CHECK_INT(c.role, DIAG_CAUSE);
    /* Local processes: a signal. */
    struct ending l = { .rank = 1, .signal = 11 };
    classify_end(&l, &c);
    CHECK_INT(c.kind, DIAG_SEGFAULT);
    CHECK_INT(c.role, DIAG_CAUSE);
    CHECK_STR(c.detail, "signal 11 (SIGSEGV)");
    l.signal = 7;
    classify_end(&l, &c);
    CHECK_INT(c.kind, DIAG_BUS_ERROR);
    l.signal = 15;
    classify_end(&l, &c);
    CHECK_INT(c.kind, DIAG_TERMINATED);
    CHECK_INT(c.role, DIAG_SYMPTOM);
    /* Stopped by trainyard: a consequence, whatever the signal. */
    l.stopped = true;
    classify_end(&l, &c);
    CHECK_INT(c.role, DIAG_CONSEQUENCE);
    l.signal = 9;
    classify_end(&l, &c);
    CHECK_INT(c.kind, DIAG_KILLED);
    CHECK_INT(c.role, DIAG_CONSEQUENCE);
    /* Pod reasons beat container reasons and exit codes. */
    struct ending p = { .rank = 4,
                        .exited = true,
                        .exit_code = 143,
                        .reason = "Error",
                        .pod_reason = "PreemptionByScheduler" };
    classify_end(&p, &c);
    CHECK_INT(c.kind, DIAG_PREEMPTION);
    p.pod_reason = "Evicted";
    p.message = "The node was low on resource: memory.";
    classify_end(&p, &c);
    CHECK_INT(c.kind, DIAG_EVICTION);
    CHECK_STR(c.detail, "The node was low on resource: memory.");
    struct ending lost = { .rank = 2, .lost = true };
    classify_end(&lost, &c);
    CHECK_INT(c.kind, DIAG_NODE_LOST);
    CHECK_INT(kinds_info(c.kind)->node_fault, 1);
    struct ending dl = {
        .rank = 0, .exited = true, .exit_code = 137, .pod_reason = "DeadlineExceeded"
    };
    classify_end(&dl, &c);
    CHECK_INT(c.kind, DIAG_DEADLINE);
}

static void test_events(void)
{
    struct ending_class c;
    struct ending_event ev = { .rank = -1,
                               .reason = "FailedScheduling",
                               .message =
                                   "0/8 nodes are available: 8 Insufficient nvidia.com/gpu." };
    CHECK(ending_classify_event(&ev, &c));
    CHECK_INT(c.kind, DIAG_SCHEDULING);
    CHECK_STR(c.detail, "0/8 nodes are available: 8 Insufficient nvidia.com/gpu.");
    ev.reason = "ErrImagePull";
    ev.message = NULL;
    CHECK(ending_classify_event(&ev, &c));
    CHECK_INT(c.kind, DIAG_IMAGE_PULL);
    CHECK_STR(c.detail, "image pull failed");
    ev.reason = "SpotInterrupted";
    CHECK(ending_classify_event(&ev, &c));
    CHECK_INT(c.kind, DIAG_PREEMPTION);
    ev.reason = "Pulled";
    CHECK(!ending_classify_event(&ev, &c));
    CHECK_INT(c.kind, DIAG_KIND_NONE);
    ev.reason = NULL;
    CHECK(!ending_classify_event(&ev, &c));
}

int main(void)
{
    test_rewrapped();
    test_python_traceback();
    test_deep_traceback();
    test_exception_lines();
    test_abandon();
    test_torchrun();
    test_unterminated();
    test_endings();
    test_events();
    return check_done();
}
