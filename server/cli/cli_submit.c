/*
 * cli_submit: `trainyard submit`. The spec is read and parsed here (JSON or YAML), --set
 * overrides are applied (cli_set.c) and the result is sent as JSON, so that what the daemon
 * stores is exactly what was printed by --dry-run. Every submission carries an Idempotency-Key
 * (the user's, or a fresh random one), which is what makes retrying it safe: a retry after a
 * lost answer gets the job the first attempt created, never a second job.
 * --template NAME posts {"values": {...}} (from --set NAME=VALUE) to
 * POST /v1/templates/{name}/jobs instead.
 */
#include "server/cli/cli_args.h"
#include "server/cli/cli_internal.h"
#include "server/cli/cli_out.h"
#include "server/cli/cli_set.h"
#include "core/crypto.h"
#include "core/jsonx.h"
#include "core/xalloc.h"

/* The request body: the spec with overrides, or the template's values. NULL: reported. */
static char *build_body(struct cli *c, int *rc)
{
    struct err err;
    err_init(&err);
    json_t *doc = NULL;
    char *body = NULL;
    if (c->a.template_name) {
        json_t *values = json_object();
        for (size_t i = 0; i < c->a.nsets && !err_is_set(&err); i++) {
            const char *eq = strchr(c->a.sets[i], '=');
            if (!eq || eq == c->a.sets[i])
                err_set(&err, ERR_INVALID, "--set %s: expected NAME=VALUE", c->a.sets[i]);
            else
                json_object_setn_new(values, c->a.sets[i], (size_t)(eq - c->a.sets[i]),
                                     json_string(eq + 1));
        }
        doc = json_pack("{s:o}", "values", values);
    } else {
        doc = cli_spec_load(c->a.pos[0], &err);
        for (size_t i = 0; doc && i < c->a.nsets && !err_is_set(&err); i++)
            cli_set_apply(doc, c->a.sets[i], &err);
    }
    if (err_is_set(&err))
        *rc = cli_fail(c, CLI_USAGE, "%s", err.msg);
    else
        body = jsonx_dumps(doc);
    json_decref(doc);
    err_release(&err);
    return body;
}

static void submit_path(struct cli *c, struct buf *path)
{
    if (c->a.template_name) {
        c->hint_404 = "this daemon cannot submit from templates (POST /v1/templates/{name}/jobs "
                      "comes with triggers, issue 8)";
        buf_puts(path, "/v1/templates/");
        httpc_escape(path, c->a.template_name);
        buf_puts(path, "/jobs");
    } else {
        buf_puts(path, "/v1/jobs");
    }
    if (c->a.dry_run)
        buf_puts(path, "?dry_run=true");
}

/* POSTs the submission; 0 with *job, or an exit status (reported). */
static int post(struct cli *c, const char *body, const char *key, json_t **job)
{
    struct buf path = BUF_INIT;
    submit_path(c, &path);
    char idem[320];
    snprintf(idem, sizeof(idem), "Idempotency-Key: %s", key ? key : "");
    const char *headers[] = { cli_accept_json[0], "Content-Type: application/json",
                              key ? idem : NULL, NULL };
    struct httpc_request rq = { .method = "POST",
                                .url = buf_cstr(&path),
                                .headers = headers,
                                .body = body,
                                .body_len = strlen(body),
                                /* Safe to repeat: the key (or a dry run, which stores nothing). */
                                .retry = key != NULL || c->a.dry_run };
    struct httpc_response resp;
    httpc_response_init(&resp);
    int rc = cli_send(c, &rq, &resp);
    if (rc == 0)
        rc = cli_answer(c, &resp, job);
    if (rc == 0 && !c->a.dry_run && resp.status == 200 && resp.attempts > 1)
        cli_note(c, "the daemon already had this submission (Idempotency-Key %s)", key);
    if (rc == 0 && !json_is_object(*job))
        rc = cli_fail(c, CLI_API, "the daemon's answer is not a job");
    httpc_response_release(&resp);
    buf_release(&path);
    return rc;
}

static int check_args(struct cli *c, int64_t *timeout)
{
    struct err err;
    err_init(&err);
    int rc = CLI_OK;
    if (c->a.template_name && c->a.npos)
        rc = cli_fail(c, CLI_USAGE, "give a spec file or --template, not both");
    else if (!c->a.template_name && !c->a.npos)
        rc = cli_fail(c, CLI_USAGE,
                      "usage: trainyard submit FILE|- [options] "
                      "(or --template NAME)");
    else if (c->a.dry_run && (c->a.wait || c->a.follow))
        rc = cli_fail(c, CLI_USAGE, "--dry-run stores nothing to follow or wait for");
    else if (c->a.timeout && cli_duration_arg("--timeout", c->a.timeout, timeout, &err) < 0)
        rc = cli_fail(c, CLI_USAGE, "%s", err.msg);
    else if (c->a.idempotency_key && !*c->a.idempotency_key)
        rc = cli_fail(c, CLI_USAGE, "--idempotency-key must not be empty");
    err_release(&err);
    return rc;
}

/* After the job was accepted: print it, then follow and/or wait. */
static int after_submit(struct cli *c, json_t *job, int64_t timeout)
{
    const char *id = jsonx_str(job, "id");
    if (c->a.dry_run || (c->json && !c->a.wait && !c->a.follow)) {
        cli_print_json(stdout, job);
        return CLI_OK;
    }
    if (!id)
        return cli_fail(c, CLI_API, "the daemon's answer has no job id");
    if (!c->json) {
        printf("%s\n", id);
        fflush(stdout);
    }
    int rc = CLI_OK;
    if (c->a.follow)
        rc = cli_follow_logs(c, id);
    if (rc == CLI_OK && c->a.wait) {
        json_t *final = NULL;
        rc = cli_wait_job(c, id, timeout, &final);
        if (rc == CLI_OK)
            rc = cli_report(c, final);
        json_decref(final);
    }
    return rc;
}

int cli_cmd_submit(struct cli *c)
{
    int64_t timeout = 0;
    int rc = check_args(c, &timeout);
    if (rc != CLI_OK)
        return rc;
    char *body = build_body(c, &rc);
    if (!body)
        return rc;
    /* A fresh key per run: a re-run of the pipeline step is a new submission unless the user
     * gives the key (e.g. "$CI_PIPELINE_ID-train"). */
    char fresh[48], hex[33];
    unsigned char rnd[16];
    crypto_random(rnd, sizeof(rnd));
    crypto_hex(rnd, sizeof(rnd), hex);
    snprintf(fresh, sizeof(fresh), "cli-%s", hex);
    const char *key = c->a.idempotency_key ? c->a.idempotency_key : fresh;
    json_t *job = NULL;
    rc = post(c, body, c->a.dry_run ? NULL : key, &job);
    if (rc == CLI_OK)
        rc = after_submit(c, job, timeout);
    json_decref(job);
    free(body);
    return rc;
}
