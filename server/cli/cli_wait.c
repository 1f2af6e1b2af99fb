/*
 * cli_wait: waiting for a job and turning its result into the CLI's exit status (the contract
 * in cli.h). Waiting polls GET /v1/jobs/{id}, a little slower the longer it waits; each poll
 * survives daemon outages up to --retry-for (core/httpc.c). A job flagged `stalled` (issue 7)
 * ends the wait at once with CLI_STALLED even though it is still "running": CI should not hang
 * on a hung job. Single-threaded.
 */
#include "server/cli/cli_args.h"
#include "server/cli/cli_internal.h"
#include "server/cli/cli_out.h"
#include "core/clock.h"
#include "core/jsonx.h"
#include "core/xalloc.h"

static bool is_stalled(const json_t *job)
{
    const json_t *s = json_object_get(job, "stalled");
    const char *reason = jsonx_str(job, "reason"), *state = jsonx_str(job, "state");
    return json_is_true(s) || (json_is_object(s) && jsonx_bool(s, "stalled", false)) ||
           (state && strcmp(state, "stalled") == 0) || (reason && strcmp(reason, "Stalled") == 0);
}

int cli_job_exit(const json_t *job, bool *done)
{
    const char *state = jsonx_str(job, "state");
    *done = true;
    if (!state)
        return CLI_API;
    if (strcmp(state, "succeeded") == 0)
        return CLI_OK;
    if (is_stalled(job))
        return CLI_STALLED;
    if (strcmp(state, "failed") == 0)
        return CLI_FAILED;
    if (strcmp(state, "cancelled") == 0)
        return CLI_CANCELLED;
    if (strcmp(state, "preempted") == 0)
        return CLI_PREEMPTED;
    *done = false;
    return CLI_OK;
}

static const char *result_name(int code)
{
    switch (code) {
    case CLI_OK:
        return "succeeded";
    case CLI_FAILED:
        return "failed";
    case CLI_CANCELLED:
        return "cancelled";
    case CLI_STALLED:
        return "stalled";
    case CLI_PREEMPTED:
        return "preempted";
    default:
        return "unknown";
    }
}

int cli_wait_job(struct cli *c, const char *id, int64_t timeout_ns, json_t **job_out)
{
    struct buf path = BUF_INIT;
    cli_job_path(&path, id, "");
    int64_t start = clock_mono_ns(), interval_ms = 250;
    int rc;
    for (;;) {
        json_t *job = NULL;
        rc = cli_get(c, buf_cstr(&path), &job);
        if (rc != 0)
            break;
        bool done;
        cli_job_exit(job, &done);
        if (done) {
            *job_out = job;
            break;
        }
        int64_t waited = clock_mono_ns() - start;
        if (timeout_ns && waited >= timeout_ns) {
            rc = cli_fail(c, CLI_TIMEOUT, "job %s is still %s after %lld s", id,
                          jsonx_str(job, "state"), (long long)(waited / NS_PER_SEC));
            json_decref(job);
            break;
        }
        json_decref(job);
        int64_t sleep_ms = interval_ms;
        if (timeout_ns && waited + sleep_ms * NS_PER_MS > timeout_ns)
            sleep_ms = (timeout_ns - waited) / NS_PER_MS + 1;
        clock_sleep_ms(sleep_ms);
        interval_ms = interval_ms * 3 / 2 > 2000 ? 2000 : interval_ms * 3 / 2;
    }
    buf_release(&path);
    return rc;
}

static void report_text(struct cli *c, const json_t *job, const json_t *diag, int code)
{
    struct buf took = BUF_INIT;
    int64_t started, finished;
    const char *s = jsonx_str(job, "started_at"), *f = jsonx_str(job, "finished_at");
    if (s && f && clock_parse(s, &started) == 0 && clock_parse(f, &finished) == 0) {
        buf_puts(&took, " after ");
        cli_duration(&took, finished - started);
    }
    const char *reason = jsonx_str(job, "reason"), *message = jsonx_str(job, "message");
    printf("job %s (%s) %s%s", jsonx_str(job, "id"), jsonx_str(job, "name"), result_name(code),
           buf_cstr(&took));
    if (code != CLI_OK && reason && *reason)
        printf(": %s", reason);
    if (code != CLI_OK && message && *message)
        printf(": %s", message);
    printf("\n");
    if (code != CLI_OK && code != CLI_CANCELLED)
        cli_print_diagnosis(c, job, diag);
    buf_release(&took);
}

int cli_report(struct cli *c, const json_t *job)
{
    bool done;
    int code = cli_job_exit(job, &done);
    json_t *diag = NULL;
    c->now_ns = clock_now_ns(); /* the wait took a while: "5s ago", not "in 2s" */
    /* a cancel is what someone asked for, not a failure to diagnose */
    if (code != CLI_OK && code != CLI_CANCELLED) {
        int ignored;
        diag = cli_fetch_diagnosis(c, job, false, &ignored);
    }
    if (c->json) {
        json_t *doc =
            json_pack("{s:O,s:O,s:s,s:i}", "job", job, "diagnosis", diag ? diag : json_null(),
                      "result", result_name(code), "exit_status", code);
        cli_print_json(stdout, doc);
        json_decref(doc);
    } else {
        report_text(c, job, diag, code);
    }
    json_decref(diag);
    fflush(stdout);
    return code;
}

int cli_cmd_wait(struct cli *c)
{
    int64_t timeout = 0;
    struct err err;
    err_init(&err);
    if (c->a.timeout && cli_duration_arg("--timeout", c->a.timeout, &timeout, &err) < 0) {
        int rc = cli_fail(c, CLI_USAGE, "%s", err.msg);
        err_release(&err);
        return rc;
    }
    json_t *job = NULL;
    int rc = cli_wait_job(c, c->a.pos[0], timeout, &job);
    if (rc == 0)
        rc = cli_report(c, job);
    json_decref(job);
    return rc;
}
