/*
 * Unit tests of the worker's reports to the daemon: metrics parsing (metrics.c), the reporter's
 * heartbeats against the fake daemon, buffering and drop-oldest while the daemon is down, the
 * background thread and the final heartbeat with the exit status, and `run` end to end (the
 * command's progress lines arrive as metrics, its exit code comes back).
 */
#include "tests/unit/check.h"

#include <stdlib.h>

#include "core/clock.h"
#include "tests/unit/test_worker_fakedaemon.h"
#include "worker/metrics.h"
#include "worker/reporter.h"
#include "worker/run.h"

static int parse(const char *line, struct metric_kv *kv, int64_t *step)
{
    return metrics_parse_line(line, strlen(line), kv, 16, step);
}

static void test_metrics(void)
{
    struct metric_kv kv[16];
    int64_t step;
    CHECK_INT(
        parse("{'loss': 2.31, 'grad_norm': 0.8, 'learning_rate': 0.001, 'epoch': 0.1}", kv, &step),
        4);
    CHECK_STR(kv[0].name, "loss");
    CHECK(kv[0].value == 2.31);
    CHECK_STR(kv[2].name, "learning_rate");
    CHECK(kv[2].value == 0.001);
    CHECK_INT(step, -1);
    CHECK_INT(parse("  {\"loss\": 1e-3, \"step\": 40, \"note\": \"x, y\"}\r", kv, &step), 1);
    CHECK_INT(step, 40);
    CHECK(kv[0].value == 1e-3);
    CHECK_INT(parse("{'loss': tensor(0.5, device='cuda:0'), 'epoch': 1.0}", kv, &step), 2);
    CHECK(kv[0].value == 0.5 && kv[1].value == 1.0);
    CHECK_INT(parse("{'train_runtime': '0:01:02', 'train_loss': 1.5}", kv, &step), 1);
    CHECK_STR(kv[0].name, "train_loss");
    CHECK_INT(parse("step=10 loss=1.23 lr=3e-4, tokens/s=99", kv, &step), 3);
    CHECK_INT(step, 10);
    CHECK_STR(kv[1].name, "lr");
    CHECK_STR(kv[2].name, "tokens/s");
    CHECK_INT(parse("Downloading file=model.bin", kv, &step), 0);
    CHECK_INT(parse("{not a dict", kv, &step), 0);
    CHECK_INT(parse("", kv, &step), 0);
}

static json_t *hb(struct fake_daemon *f, size_t i)
{
    pthread_mutex_lock(&f->mu);
    json_t *h = json_array_get(f->heartbeats, i);
    pthread_mutex_unlock(&f->mu);
    return h;
}

/* The daemon is down first: reports are kept (bounded), dropped oldest first, and the count
 * reaches the daemon once it is back. */
static void test_buffering(void)
{
    struct err err;
    err_init(&err);
    int port = fake_free_port();
    char url[64];
    snprintf(url, sizeof(url), "http://127.0.0.1:%d", port);
    struct reporter *r = reporter_new(url, "tok", "job1", 3, 5, &err);
    for (int i = 1; i <= 8; i++)
        reporter_add(r, "loss", i, 10.0 - i, clock_now_ns());
    int64_t t0 = clock_mono_ns();
    CHECK_INT(reporter_flush(r, &err), -1); /* nobody listens */
    CHECK_INT(err.code, ERR_UNAVAILABLE);
    CHECK(clock_mono_ns() - t0 < 3 * NS_PER_SEC);
    err_release(&err);
    struct reporter_stats st;
    reporter_stats(r, &st);
    CHECK_INT(st.pending, 5);
    CHECK_INT(st.dropped_total, 3);

    struct fake_daemon f;
    CHECK_INT(fake_start(&f, port, "tok"), 0);
    CHECK_INT(reporter_flush(r, &err), 0);
    json_t *h = hb(&f, 0), *m = json_object_get(h, "metrics");
    CHECK_INT(json_integer_value(json_object_get(h, "_rank")), 3);
    CHECK_INT(jsonx_int(h, "dropped", -1), 3);
    CHECK_INT(jsonx_int(h, "step", -1), 8);
    CHECK(jsonx_str(h, "time") != NULL);
    CHECK_INT(json_array_size(m), 5);
    CHECK_INT(jsonx_int(json_array_get(m, 0), "step", -1), 4); /* 1..3 were the oldest */
    CHECK_STR(jsonx_str(json_array_get(m, 0), "name"), "loss");
    CHECK(json_real_value(json_object_get(json_array_get(m, 4), "value")) == 2.0);
    reporter_add(r, "loss", 9, 1.0, clock_now_ns());
    CHECK_INT(reporter_flush(r, &err), 0);
    CHECK_INT(jsonx_int(hb(&f, 1), "dropped", -1), 0); /* reported once, then reset */

    /* A backlog goes out in batches of at most 1000. */
    struct reporter *big = reporter_new(url, "tok", "job1", 0, 5000, &err);
    for (int i = 0; i < 2500; i++)
        reporter_add(big, "x", i, i, clock_now_ns());
    CHECK_INT(reporter_flush(big, &err), 0);
    CHECK_INT(json_array_size(f.heartbeats), 5);
    CHECK_INT(json_array_size(json_object_get(hb(&f, 2), "metrics")), 1000);
    CHECK_INT(json_array_size(json_object_get(hb(&f, 4), "metrics")), 500);
    reporter_stats(big, &st);
    CHECK_INT(st.sent, 2500);
    CHECK_INT(st.pending, 0);
    reporter_free(big);

    /* A wrong token is refused and the metrics stay queued. */
    struct reporter *bad = reporter_new(url, "wrong", "job1", 0, 10, &err);
    reporter_add(bad, "x", 1, 1, clock_now_ns());
    CHECK_INT(reporter_flush(bad, &err), -1);
    CHECK_INT(err.code, ERR_UPSTREAM);
    err_release(&err);
    reporter_stats(bad, &st);
    CHECK_INT(st.pending, 1);
    reporter_free(bad);
    reporter_free(r);
    fake_stop(&f);
}

static void test_thread_and_run(void)
{
    struct err err;
    err_init(&err);
    struct fake_daemon f;
    CHECK_INT(fake_start(&f, 0, "tok"), 0);
    char url[64];
    snprintf(url, sizeof(url), "http://127.0.0.1:%d", f.port);
    struct reporter *r = reporter_new(url, "tok", "job1", 1, 100, &err);
    CHECK_INT(reporter_start(r, 50, &err), 0);
    char *argv[] = { "sh", "-c",
                     "echo \"{'loss': 2.5, 'learning_rate': 0.1, 'epoch': 0.5}\"; "
                     "echo 'step=7 loss=1.25' >&2; sleep 0.3; exit 4",
                     NULL };
    struct run_opts o = { .argv = argv, .grace_ms = 1000, .reporter = r };
    CHECK_INT(run_child(&o, &err), 4);
    reporter_stop(r);
    size_t n = json_array_size(f.heartbeats);
    CHECK(n >= 2); /* periodic ones while it ran, then the final one */
    json_t *last = hb(&f, n - 1);
    CHECK_INT(jsonx_int(last, "exit_code", -1), 4);
    int seen_dict = 0, seen_kv = 0;
    for (size_t i = 0; i < n; i++) {
        size_t j;
        json_t *m;
        json_array_foreach(json_object_get(hb(&f, i), "metrics"), j, m)
        {
            double v = json_real_value(json_object_get(m, "value"));
            seen_dict +=
                !strcmp(jsonx_str(m, "name"), "loss") && v == 2.5 && jsonx_int(m, "step", 0) == 1;
            seen_kv +=
                !strcmp(jsonx_str(m, "name"), "loss") && v == 1.25 && jsonx_int(m, "step", 0) == 7;
        }
    }
    CHECK_INT(seen_dict, 1);
    CHECK_INT(seen_kv, 1);
    reporter_free(r);

    /* The preflight report goes to its own endpoint. */
    r = reporter_new(url, "tok", "job1", 2, 10, &err);
    CHECK_INT(reporter_send_preflight(r, "{\"ok\":true}", &err), 0);
    CHECK_INT(json_array_size(f.preflights), 1);
    CHECK_INT(jsonx_int(json_array_get(f.preflights, 0), "_rank", -1), 2);
    reporter_free(r);
    fake_stop(&f);

    /* Without a daemon the metrics are only counted; a command that cannot start is 127. */
    r = reporter_new(NULL, NULL, NULL, 0, 2, &err);
    char *missing[] = { "/nonexistent/trainer", NULL };
    o.argv = missing;
    o.reporter = r;
    CHECK_INT(run_child(&o, &err), 127);
    CHECK(strstr(err.msg, "/nonexistent/trainer") != NULL);
    err_release(&err);
    reporter_free(r);
}

int main(void)
{
    test_metrics();
    test_buffering();
    test_thread_and_run();
    return check_done();
}
