/*
 * cli_diag: a job's diagnosis for the CLI. GET /v1/jobs/{id}/diagnosis (docs/diagnosis.md)
 * when the daemon serves it; when it answers 404 for a job that exists (a daemon without the
 * route), a document of the same shape is built from the job's reason, message and
 * first_failure, marked "source": "job". Printing is the short summary people read in CI logs.
 */
#include "server/cli/cli_internal.h"
#include "server/cli/cli_out.h"
#include "core/jsonx.h"

static json_t *from_job(const json_t *job)
{
    const json_t *ff = json_object_get(job, "first_failure");
    const char *reason = jsonx_str(job, "reason");
    json_t *summary = json_null();
    if (json_is_object(ff) || (reason && *reason)) {
        summary = json_object();
        json_object_set_new(summary, "cause", json_null());
        jsonx_set_str(summary, "reason", reason && *reason ? reason : jsonx_str(ff, "reason"));
        static const char *const copied[][2] = {
            { "rank", "rank" }, { "node", "node" },           { "time", "at" },
            { "pod", "pod" },   { "exit_code", "exit_code" }, { "signal", "signal" }
        };
        for (size_t i = 0; i < sizeof(copied) / sizeof(copied[0]); i++) {
            json_t *v = json_object_get(ff, copied[i][1]);
            json_object_set(summary, copied[i][0], v ? v : json_null());
        }
        jsonx_set_str(summary, "summary", jsonx_str(job, "message"));
    }
    return json_pack("{s:o,s:[],s:s}", "summary", summary, "findings", "source", "job");
}

json_t *cli_fetch_diagnosis(struct cli *c, const json_t *job, bool report, int *rc)
{
    struct buf path = BUF_INIT;
    cli_job_path(&path, jsonx_str(job, "id"), "/diagnosis");
    struct httpc_request rq = { .url = buf_cstr(&path), .headers = cli_accept_json, .retry = true };
    struct httpc_response resp;
    httpc_response_init(&resp);
    json_t *doc = NULL;
    struct err err;
    err_init(&err);
    *rc = 0;
    if (httpc_do(c->http, &rq, &resp, &err) < 0) {
        cli_note(c, "no diagnosis: %s", err.msg);
        doc = from_job(job);
    } else if (resp.status == 404) {
        doc = from_job(job);
    } else if (!report && (resp.status < 200 || resp.status > 299)) {
        cli_note(c, "no diagnosis: the daemon answered HTTP %ld", resp.status);
        doc = from_job(job);
    } else {
        *rc = cli_answer(c, &resp, &doc);
    }
    err_release(&err);
    httpc_response_release(&resp);
    buf_release(&path);
    return doc;
}

static void ranks_list(struct buf *out, const json_t *arr)
{
    size_t i;
    json_t *e;
    json_array_foreach(arr, i, e)
        buf_printf(out, "%s%lld", i ? ", " : "", (long long)json_integer_value(e));
}

/* "rank 2 (exit code 3) on node h, 5s ago" */
static void where(struct cli *c, struct buf *out, const json_t *s)
{
    const json_t *rank = json_object_get(s, "rank");
    if (json_is_integer(rank))
        buf_printf(out, "rank %lld", (long long)json_integer_value(rank));
    else
        buf_puts(out, "the job");
    json_int_t code = json_integer_value(json_object_get(s, "exit_code"));
    json_int_t sig = json_integer_value(json_object_get(s, "signal"));
    if (json_is_integer(json_object_get(s, "exit_code")))
        buf_printf(out, " (exit code %lld)", (long long)code);
    else if (sig)
        buf_printf(out, " (signal %lld)", (long long)sig);
    if (jsonx_str(s, "node"))
        buf_printf(out, " on node %s", jsonx_str(s, "node"));
    if (jsonx_str(s, "time")) {
        buf_puts(out, ", ");
        cli_reltime_str(out, jsonx_str(s, "time"), c->now_ns);
    }
}

void cli_print_diagnosis(struct cli *c, const json_t *job, const json_t *diag)
{
    const json_t *s = json_object_get(diag, "summary");
    if (!json_is_object(s)) {
        printf("  no failure found\n");
        return;
    }
    struct buf b = BUF_INIT;
    const char *text = jsonx_str(s, "summary"), *cause = jsonx_str(s, "cause");
    if (text && *text && cause)
        printf("  diagnosis: %s\n", text);
    const char *restart = cli_restart_words(jsonx_str(s, "retry_class"), cause);
    if (cause && restart)
        printf("  cause: %s (%s)\n", cause, restart);
    else if (cause)
        printf("  cause: %s\n", cause);
    where(c, &b, s);
    printf("  first failure: %s\n", buf_cstr(&b));
    const json_t *ranks = json_object_get(s, "ranks"), *suspects = json_object_get(s, "suspects");
    if (json_array_size(ranks) > 1) {
        buf_reset(&b);
        ranks_list(&b, ranks);
        printf("  ranks with the same cause: %s\n", buf_cstr(&b));
    }
    if (json_array_size(suspects)) {
        buf_reset(&b);
        ranks_list(&b, suspects);
        printf("  suspects (hung or died first): %s\n", buf_cstr(&b));
    }
    const json_t *lr = json_object_get(s, "log_rank");
    if (!json_is_integer(lr))
        lr = json_object_get(s, "rank");
    if (json_is_integer(lr))
        printf("  its log: trainyard logs %s --rank %lld --tail 50\n", jsonx_str(job, "id"),
               (long long)json_integer_value(lr));
    buf_release(&b);
}

static void findings_table(struct cli *c, const json_t *diag)
{
    const json_t *findings = json_object_get(diag, "findings");
    if (!json_array_size(findings))
        return;
    const char *const head[] = { "TIME", "RANK", "NODE", "KIND", "ROLE", "COUNT", "SUMMARY" };
    struct cli_table t;
    cli_table_init(&t, 7, head);
    t.max_width = 100;
    size_t i;
    json_t *f;
    json_array_foreach(findings, i, f)
    {
        static const struct {
            const char *path;
            char how;
        } cols[] = { { "time", 'a' }, { "rank", 't' },  { "node", 't' },   { "kind", 't' },
                     { "role", 't' }, { "count", 't' }, { "summary", 't' } };
        struct buf cell[7];
        const char *cells[7];
        for (size_t k = 0; k < 7; k++) {
            buf_init(&cell[k]);
            cli_cell(&cell[k], f, cols[k].path, cols[k].how, c->now_ns);
            cells[k] = buf_cstr(&cell[k]);
        }
        cli_table_add(&t, cells);
        for (size_t k = 0; k < 7; k++)
            buf_release(&cell[k]);
    }
    struct buf out = BUF_INIT;
    cli_table_render(&t, &out);
    printf("\n%s", buf_cstr(&out));
    buf_release(&out);
    cli_table_release(&t);
}

int cli_cmd_diagnosis(struct cli *c)
{
    struct buf path = BUF_INIT;
    json_t *job = NULL, *diag = NULL;
    cli_job_path(&path, c->a.pos[0], "");
    int rc = cli_get(c, buf_cstr(&path), &job);
    if (rc == 0)
        diag = cli_fetch_diagnosis(c, job, true, &rc);
    if (rc == 0 && c->json) {
        cli_print_json(stdout, diag);
    } else if (rc == 0) {
        printf("job %s (%s) %s\n", jsonx_str(job, "id"), jsonx_str(job, "name"),
               jsonx_str(job, "state"));
        cli_print_diagnosis(c, job, diag);
        findings_table(c, diag);
    }
    json_decref(job);
    json_decref(diag);
    buf_release(&path);
    return rc;
}
