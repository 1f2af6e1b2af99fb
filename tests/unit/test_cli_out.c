/* test_cli_out: the CLI's tables, relative times, problem rendering, exit statuses and SSE
 * parsing (server/cli/cli_out.c, cli_wait.c, cli_sse.c). Its HTTP client: test_httpc.c. */
#include "server/cli/cli.h"
#include "server/cli/cli_out.h"
#include "server/cli/cli_sse.h"
#include "core/clock.h"
#include "tests/unit/check.h"

static void tables(void)
{
    const char *const head[] = { "ID", "NAME", "STATE" };
    struct cli_table t;
    cli_table_init(&t, 3, head);
    cli_table_add(&t, (const char *const[]){ "k3v9x2m1q7pa", "train", "running" });
    cli_table_add(&t, (const char *const[]){ "a1", "", NULL });
    struct buf out = BUF_INIT;
    cli_table_render(&t, &out);
    /* Columns as wide as their widest cell, two spaces apart, no trailing blanks, "-" for
     * empty cells. */
    CHECK_STR(buf_cstr(&out), "ID            NAME   STATE\n"
                              "k3v9x2m1q7pa  train  running\n"
                              "a1            -      -\n");
    cli_table_release(&t);

    /* Widths count characters, not bytes; control characters cannot break a row. */
    const char *const h2[] = { "NAME", "MESSAGE" };
    cli_table_init(&t, 2, h2);
    cli_table_add(&t, (const char *const[]){ "données", "line one\nline\ttwo\x1b[31m" });
    cli_table_add(&t, (const char *const[]){ "x", "bad \xff byte" });
    buf_reset(&out);
    cli_table_render(&t, &out);
    CHECK_STR(buf_cstr(&out), "NAME     MESSAGE\n"
                              "données  line one line two [31m\n"
                              "x        bad ? byte\n");
    cli_table_release(&t);

    /* Long cells are cut with "..." at max_width characters, UTF-8 kept whole. */
    cli_table_init(&t, 2, h2);
    t.max_width = 10;
    cli_table_add(&t, (const char *const[]){ "ééééééééééééé", "0123456789" });
    cli_table_add(&t, (const char *const[]){ "a", "0123456789A" });
    buf_reset(&out);
    cli_table_render(&t, &out);
    CHECK_STR(buf_cstr(&out), "NAME        MESSAGE\n"
                              "ééééééé...  0123456789\n"
                              "a           0123456...\n");
    cli_table_release(&t);
    buf_release(&out);
}

static const char *rel(int64_t delta_s)
{
    static struct buf b;
    buf_reset(&b);
    int64_t now = 1000000 * NS_PER_SEC;
    cli_reltime(&b, now - delta_s * NS_PER_SEC, now);
    return buf_cstr(&b);
}

static const char *dur(int64_t ns)
{
    static struct buf b;
    buf_reset(&b);
    cli_duration(&b, ns);
    return buf_cstr(&b);
}

static void times(void)
{
    CHECK_STR(rel(0), "just now");
    CHECK_STR(rel(42), "42s ago");
    CHECK_STR(rel(60), "1m ago");
    CHECK_STR(rel(312), "5m12s ago");
    CHECK_STR(rel(700), "11m ago");
    CHECK_STR(rel(3600 * 3 + 300), "3h5m ago");
    CHECK_STR(rel(86400 * 4 + 7200), "4d2h ago");
    CHECK_STR(rel(86400 * 40 + 7200), "40d ago");
    CHECK_STR(rel(-30), "in 30s");
    CHECK_STR(rel(-3), "just now"); /* the daemon's clock a little ahead, not the future */
    CHECK_STR(dur(850 * NS_PER_MS), "850ms");
    CHECK_STR(dur(80 * NS_PER_SEC), "1m20s");
    CHECK_STR(dur(-5), "0ms");
    struct buf b = BUF_INIT;
    cli_reltime_str(&b, "not a time", 0);
    cli_reltime_str(&b, NULL, 0);
    cli_reltime_str(&b, "2026-11-22T03:00:00Z", 1795316400LL * NS_PER_SEC + 90 * NS_PER_SEC);
    CHECK_STR(buf_cstr(&b), "--1m30s ago");
    buf_release(&b);
}

/* The cause line says what a restart can do only as far as the diagnosis knows it. */
static void restart_words(void)
{
    CHECK_STR(cli_restart_words("retryable", "nccl_timeout"), "a restart may help");
    CHECK(strstr(cli_restart_words("deterministic", "cuda_oom"), "will not help") != NULL);
    /* a plain exit 5, a hang: nobody knows; "will not help" would be a guess */
    CHECK(strstr(cli_restart_words("unknown", "exit"), "will not") == NULL);
    CHECK(strstr(cli_restart_words("unknown", "hang"), "may help if the hang was transient"));
    CHECK(cli_restart_words(NULL, "exit") == NULL);
}

static void problems(void)
{
    struct buf b = BUF_INIT;
    const char *p = "{\"type\":\"urn:trainyard:problem:validation\",\"title\":\"Unprocessable "
                    "Content\",\"status\":422,\"detail\":\"the request has invalid fields\","
                    "\"errors\":[{\"pointer\":\"/resources/gpus\",\"detail\":\"must be between 0 "
                    "and 64\"},{\"pointer\":\"\",\"detail\":\"bad\"}]}";
    cli_problem_text(&b, 422, p, strlen(p));
    CHECK_STR(buf_cstr(&b), "trainyard: the request has invalid fields (HTTP 422 Unprocessable "
                            "Content)\n"
                            "  /resources/gpus: must be between 0 and 64\n"
                            "  (document): bad\n");
    buf_reset(&b);
    cli_problem_text(&b, 502, "<html>bad gateway</html>\nmore", 30);
    CHECK_STR(buf_cstr(&b), "trainyard: HTTP 502 Bad Gateway: <html>bad gateway</html>\n");
    buf_reset(&b);
    cli_problem_text(&b, 500, "{\"detail\":\"internal\",\"request_id\":\"r1\"}", 39);
    CHECK_STR(buf_cstr(&b), "trainyard: internal (HTTP 500 Internal Server Error)\n"
                            "  request id: r1\n");
    buf_release(&b);
}

static int code_of(const char *job, bool *done)
{
    json_t *j = json_loads(job, 0, NULL);
    int rc = cli_job_exit(j, done);
    json_decref(j);
    return rc;
}

static void exit_statuses(void)
{
    bool done;
    CHECK_INT(code_of("{\"state\":\"succeeded\"}", &done), CLI_OK);
    CHECK(done);
    CHECK_INT(code_of("{\"state\":\"failed\"}", &done), CLI_FAILED);
    CHECK_INT(code_of("{\"state\":\"cancelled\"}", &done), CLI_CANCELLED);
    CHECK_INT(code_of("{\"state\":\"preempted\"}", &done), CLI_PREEMPTED);
    CHECK_INT(code_of("{\"state\":\"cancelled\",\"reason\":\"Stalled\"}", &done), CLI_STALLED);
    CHECK_INT(code_of("{\"state\":\"running\",\"stalled\":true}", &done), CLI_STALLED);
    CHECK(done);
    CHECK_INT(code_of("{\"state\":\"running\",\"stalled\":{\"stalled\":true}}", &done),
              CLI_STALLED);
    code_of("{\"state\":\"running\",\"stalled\":false}", &done);
    CHECK(!done);
    code_of("{\"state\":\"cancelling\"}", &done);
    CHECK(!done);
    code_of("{\"state\":\"queued\"}", &done);
    CHECK(!done);
    /* Distinct statuses, as documented. */
    CHECK(CLI_FAILED != CLI_CANCELLED && CLI_STALLED != CLI_PREEMPTED && CLI_LOST != CLI_API &&
          CLI_TIMEOUT != CLI_LOST && CLI_USAGE == 2);
}

struct events {
    struct buf log;
    int stop_after;
};

static int record(void *ctx, const struct cli_sse_event *ev)
{
    struct events *e = ctx;
    buf_printf(&e->log, "[%s|%s|%.*s]", ev->id, ev->event, (int)ev->data_len, ev->data);
    return --e->stop_after == 0 ? 7 : 0;
}

static void sse(void)
{
    static const char stream[] = ": keep-alive\n\n"
                                 "id: 1\nevent: line\ndata: {\"seq\":1}\n\n"
                                 "id: 2\r\nevent: line\r\ndata: {\"seq\":2}\r\n\r\n"
                                 "data:a\ndata: b\n\n"
                                 "event: end\ndata: {\"state\":\"failed\"}\n\n"
                                 "id: 9\ndata: partial";
    const char *want = "[1|line|{\"seq\":1}][2|line|{\"seq\":2}][|message|a\nb]"
                       "[|end|{\"state\":\"failed\"}]";
    size_t len = sizeof(stream) - 1;
    /* Split in two at every position: the events are the same, and the partial one at the
     * end (a dropped connection) is never delivered. */
    bool all_same = true;
    for (size_t cut = 0; cut <= len; cut++) {
        struct events e = { BUF_INIT, -1 };
        struct cli_sse s;
        cli_sse_init(&s, record, &e);
        cli_sse_feed(&s, stream, cut);
        cli_sse_feed(&s, stream + cut, len - cut);
        if (strcmp(buf_cstr(&e.log), want) != 0) {
            all_same = false;
            fprintf(stderr, "cut %zu: %s\n", cut, buf_cstr(&e.log));
        }
        cli_sse_release(&s);
        buf_release(&e.log);
    }
    CHECK(all_same);
    /* One byte at a time, then a reset drops the partial event. */
    struct events e = { BUF_INIT, -1 };
    struct cli_sse s;
    cli_sse_init(&s, record, &e);
    for (size_t i = 0; i < len; i++)
        cli_sse_feed(&s, stream + i, 1);
    cli_sse_reset(&s);
    cli_sse_feed(&s, "\n\ndata: after\n\n", 15);
    CHECK_STR(buf_cstr(&e.log), "[1|line|{\"seq\":1}][2|line|{\"seq\":2}][|message|a\nb]"
                                "[|end|{\"state\":\"failed\"}][|message|after]");
    cli_sse_release(&s);
    buf_release(&e.log);
    /* A callback's non-zero answer stops the feed and is returned. */
    struct events e2 = { BUF_INIT, 2 };
    cli_sse_init(&s, record, &e2);
    CHECK_INT(cli_sse_feed(&s, stream, len), 7);
    CHECK_STR(buf_cstr(&e2.log), "[1|line|{\"seq\":1}][2|line|{\"seq\":2}]");
    cli_sse_release(&s);
    buf_release(&e2.log);
}

int main(void)
{
    restart_words();
    tables();
    times();
    problems();
    exit_statuses();
    sse();
    return check_done();
}
