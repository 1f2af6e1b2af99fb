/*
 * cli: `trainyard <command>` for everything but the daemon's own subcommands: the command
 * table, help, settings, and the one HTTP client of the process (core/httpc: retries, backoff,
 * Retry-After, streams). It does not format (cli_out.c); each command lives in its own file.
 * Single-threaded.
 */
#include "server/cli/cli.h"

#include "server/cli/cli_args.h"
#include "server/cli/cli_internal.h"
#include "core/clock.h"
#include "core/xalloc.h"

struct command {
    const char *name;
    int (*run)(struct cli *c);
    int min_pos, max_pos;
    const char *args;
    const char *summary;
};

static const struct command commands[] = {
    { "submit", cli_cmd_submit, 0, 1, "FILE|-",
      "submit a job spec (JSON or YAML); prints the job id" },
    { "jobs", cli_cmd_jobs, 0, 0, "", "list jobs, newest first" },
    { "status", cli_cmd_status, 1, 1, "ID", "a job, its ranks and its first failure" },
    { "logs", cli_cmd_logs, 1, 1, "ID", "the merged log of every rank (-f: follow)" },
    { "events", cli_cmd_events, 1, 1, "ID", "the job's timeline" },
    { "diagnosis", cli_cmd_diagnosis, 1, 1, "ID", "which rank failed first, and why" },
    { "cancel", cli_cmd_cancel, 1, 1, "ID", "cancel a job" },
    { "suspend", cli_cmd_suspend, 1, 1, "ID",
      "suspend a job: SIGTERM and the grace period to checkpoint, its GPUs back to the queue" },
    { "resume", cli_cmd_resume, 1, 1, "ID",
      "let a suspended job start again, from its checkpoint" },
    { "wait", cli_cmd_wait, 1, 1, "ID", "wait for a job to end; exit status = its result" },
    { "nodes", cli_cmd_nodes, 0, 0, "", "the cluster's nodes (Kubernetes executor)" },
    { "templates", cli_cmd_templates, 0, 0, "", "job templates" },
    { "triggers", cli_cmd_triggers, 0, 0, "", "S3 triggers" },
    { "policies", cli_cmd_policies, 0, 0, "", "cluster policies: what tokens' jobs may use" },
    { "queues", cli_cmd_queues, 0, 0, "",
      "queues: priority, GPU quota, what they use and wait for" },
    { "usage", cli_cmd_usage, 0, 1, "[ID]", "GPU-hours and cost, grouped; or one job's" },
};
#define NCOMMANDS (sizeof(commands) / sizeof(commands[0]))

static const char exit_help[] =
    "exit status:\n"
    "  0 done (with --wait/wait: the job succeeded)   1 the job failed\n"
    "  2 bad command line, config or spec file       3 the job was cancelled\n"
    "  4 the job stalled                             5 the job was preempted\n"
    "  6 wait --timeout passed                       7 lost connection to the daemon\n"
    "  8 the daemon refused the request (its error is shown)\n";

void cli_usage(FILE *out)
{
    fprintf(out, "\nclient (talks to a daemon; docs/cli.md):\n");
    for (size_t i = 0; i < NCOMMANDS; i++) {
        char left[40];
        snprintf(left, sizeof(left), "%s %s", commands[i].name, commands[i].args);
        fprintf(out, "  %-16s %s\n", left, commands[i].summary);
    }
    fprintf(out, "\nclient options (any command; `trainyard <command> --help` for its own):\n");
    cli_args_help(out, NULL);
    fprintf(out,
            "settings come from the flag, else TRAINYARD_URL / TRAINYARD_TOKEN / ..., else the\n"
            "config file (~/.config/trainyard/config.yaml: url, token, cacert, output,\n"
            "retry_for); the URL defaults to http://127.0.0.1:8080.\n\n%s",
            exit_help);
}

static void command_help(FILE *out, const struct command *cmd)
{
    fprintf(out, "usage: trainyard %s %s [options]\n  %s\n\n", cmd->name, cmd->args, cmd->summary);
    fprintf(out, "options:\n");
    cli_args_help(out, cmd->name);
    cli_args_help(out, NULL);
    if (strcmp(cmd->name, "submit") == 0 || strcmp(cmd->name, "wait") == 0)
        fprintf(out, "\n%s", exit_help);
}

static void notice(void *ctx, const char *msg)
{
    cli_note(ctx, "%s", msg);
}

/* Settings and the HTTP client. CLI_OK, or an exit status (reported). */
static int setup(struct cli *c)
{
    struct err err;
    err_init(&err);
    char *warning = NULL;
    c->config = cli_config_load(&c->a, &warning, &err);
    int64_t retry_for = 0;
    const char *output = cli_setting(c->a.output, "TRAINYARD_OUTPUT", c->config, "output", "text");
    c->json = strcmp(output, "json") == 0;
    if (!err_is_set(&err) && !c->json && strcmp(output, "text") != 0 &&
        strcmp(output, "table") != 0)
        err_set(&err, ERR_INVALID, "--output must be text or json (not %s)", output);
    const char *rf =
        cli_setting(c->a.retry_for, "TRAINYARD_RETRY_FOR", c->config, "retry_for", "60s");
    if (!err_is_set(&err))
        cli_duration_arg("--retry-for", rf, &retry_for, &err);
    const char *url = cli_setting(c->a.url, "TRAINYARD_URL", c->config, "url", NULL);
    if (!url || !*url)
        url = "http://127.0.0.1:8080";
    /* "host:port" means http. */
    char *base = strstr(url, "://") ? xstrdup(url) : xasprintf("http://%s", url);
    c->retry_for_ns = retry_for > 0 ? retry_for : 60 * NS_PER_SEC;
    struct httpc_options ho = {
        .base_url = base,
        .bearer = cli_setting(c->a.token, "TRAINYARD_TOKEN", c->config, "token", NULL),
        .ca_file = cli_setting(c->a.cacert, "TRAINYARD_CACERT", c->config, "cacert", NULL),
        .connect_timeout_ms = 5000,
        .timeout_ms = 30000,
        .max_body = CLI_BODY_MAX,
        .user_agent = "trainyard-cli/" TY_VERSION,
        .retry_for_ns = c->retry_for_ns,
        .notice = notice,
        .notice_ctx = c,
    };
    if (!err_is_set(&err))
        c->http = httpc_new(&ho, &err);
    free(base);
    if (warning)
        cli_note(c, "warning: %s", warning);
    free(warning);
    int rc = err_is_set(&err) ? cli_fail(c, CLI_USAGE, "%s", err.msg) : CLI_OK;
    err_release(&err);
    return rc;
}

static const struct command *find(const char *name)
{
    for (size_t i = 0; i < NCOMMANDS; i++)
        if (strcmp(commands[i].name, name) == 0)
            return &commands[i];
    return NULL;
}

static int run(struct cli *c, int argc, char **argv)
{
    struct err err;
    err_init(&err);
    int rc = cli_args_parse(argc, argv, &c->a, &err);
    c->json = c->a.output && strcmp(c->a.output, "json") == 0;
    const struct command *cmd = c->a.command ? find(c->a.command) : NULL;
    if (rc < 0 || !cmd) {
        if (rc == 0 && c->a.help && !c->a.command) {
            cli_usage(stdout);
            return CLI_OK;
        }
        rc = rc < 0 ? cli_fail(c, CLI_USAGE, "%s (trainyard --help lists the options)", err.msg)
             : c->a.command
                 ? cli_fail(c, CLI_USAGE, "unknown command '%s' (trainyard --help lists them)",
                            c->a.command)
                 : cli_fail(c, CLI_USAGE, "no command given (trainyard --help lists them)");
        err_release(&err);
        return rc;
    }
    if (c->a.help) {
        command_help(stdout, cmd);
        return CLI_OK;
    }
    if ((int)c->a.npos < cmd->min_pos || (int)c->a.npos > cmd->max_pos)
        return cli_fail(c, CLI_USAGE, "usage: trainyard %s %s [options]", cmd->name, cmd->args);
    rc = setup(c);
    if (rc == CLI_OK)
        rc = cmd->run(c);
    return rc;
}

int cli_main(int argc, char **argv)
{
    struct cli c;
    memset(&c, 0, sizeof(c));
    c.now_ns = clock_now_ns();
    int rc = run(&c, argc, argv);
    fflush(stdout);
    httpc_free(c.http);
    json_decref(c.config);
    return rc;
}
