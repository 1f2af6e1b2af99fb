/*
 * cli_jobs: `trainyard jobs`, `status`, `events`, `cancel`. Lists are fetched page by page
 * (next_cursor, after) and printed as one table or one JSON document {"items": [...]}.
 */
#include "server/cli/cli_internal.h"
#include "server/cli/cli_out.h"
#include "core/clock.h"
#include "core/jsonx.h"
#include "core/parse.h"
#include "core/xalloc.h"

struct column {
    const char *header;
    const char *paths;
    char how;
};

/* Prints items as a table of cols (n of them). */
static void print_table(struct cli *c, const json_t *items, const struct column *cols, size_t n)
{
    const char *head[16];
    for (size_t k = 0; k < n; k++)
        head[k] = cols[k].header;
    struct cli_table t;
    cli_table_init(&t, n, head);
    size_t i;
    json_t *item;
    json_array_foreach(items, i, item)
    {
        struct buf cell[16];
        const char *cells[16];
        for (size_t k = 0; k < n; k++) {
            buf_init(&cell[k]);
            cli_cell(&cell[k], item, cols[k].paths, cols[k].how, c->now_ns);
            cells[k] = buf_cstr(&cell[k]);
        }
        cli_table_add(&t, cells);
        for (size_t k = 0; k < n; k++)
            buf_release(&cell[k]);
    }
    struct buf out = BUF_INIT;
    cli_table_render(&t, &out);
    fputs(buf_cstr(&out), stdout);
    buf_release(&out);
    cli_table_release(&t);
}

int cli_cmd_jobs(struct cli *c)
{
    int64_t limit = 50;
    if (c->a.limit && parse_int64(c->a.limit, 1, 100000, &limit) < 0)
        return cli_fail(c, CLI_USAGE, "--limit must be a number from 1 to 100000");
    json_t *all = json_array();
    struct buf path = BUF_INIT;
    char *cursor = NULL;
    int rc = 0;
    do {
        buf_reset(&path);
        buf_printf(&path, "/v1/jobs?limit=%lld",
                   (long long)(limit - (int64_t)json_array_size(all) < 1000
                                   ? limit - (int64_t)json_array_size(all)
                                   : 1000));
        cli_query(&path, "state", c->a.state);
        cli_query(&path, "selector", c->a.selector);
        cli_query(&path, "name", c->a.name);
        cli_query(&path, "cursor", cursor);
        free(cursor);
        cursor = NULL;
        json_t *page = NULL;
        rc = cli_get(c, buf_cstr(&path), &page);
        json_array_extend(all, json_object_get(page, "items"));
        const char *next = jsonx_str(page, "next_cursor");
        cursor = next ? xstrdup(next) : NULL;
        json_decref(page);
    } while (rc == 0 && cursor && (int64_t)json_array_size(all) < limit);
    free(cursor);
    buf_release(&path);
    if (rc == 0 && c->json) {
        json_t *doc = json_pack("{s:O}", "items", all);
        cli_print_json(stdout, doc);
        json_decref(doc);
    } else if (rc == 0) {
        static const struct column cols[] = {
            { "ID", "id", 't' },
            { "NAME", "name", 't' },
            { "STATE", "state", 't' },
            { "RANKS", "nranks", 't' },
            { "RESTARTS", "restarts", 't' },
            { "AGE", "created_at", 'a' },
            { "REASON", "reason", 't' },
        };
        print_table(c, all, cols, sizeof(cols) / sizeof(cols[0]));
    }
    json_decref(all);
    return rc;
}

static void field(const char *name, const char *value)
{
    printf("%-15s%s\n", name, value && *value ? value : "-");
}

static void status_text(struct cli *c, const json_t *job)
{
    struct buf b = BUF_INIT;
    field("id:", jsonx_str(job, "id"));
    field("name:", jsonx_str(job, "name"));
    buf_printf(&b, "%s", jsonx_str(job, "state"));
    if (jsonx_str(job, "reason") && *jsonx_str(job, "reason"))
        buf_printf(&b, " (%s)", jsonx_str(job, "reason"));
    field("state:", buf_cstr(&b));
    field("message:", jsonx_str(job, "message"));
    field("executor:", jsonx_str(job, "executor"));
    field("owner:", jsonx_str(job, "owner"));
    static const char *const times[][2] = { { "created:", "created_at" },
                                            { "started:", "started_at" },
                                            { "finished:", "finished_at" } };
    for (size_t i = 0; i < 3; i++) {
        buf_reset(&b);
        if (jsonx_str(job, times[i][1])) {
            cli_reltime_str(&b, jsonx_str(job, times[i][1]), c->now_ns);
            buf_printf(&b, " (%s)", jsonx_str(job, times[i][1]));
        }
        field(times[i][0], buf_cstr(&b));
    }
    buf_reset(&b);
    cli_cell(&b, job, "restarts", 't', c->now_ns);
    field("restarts:", buf_cstr(&b));
    const json_t *ff = json_object_get(job, "first_failure");
    if (json_is_object(ff)) {
        buf_reset(&b);
        buf_printf(&b, "rank %lld", (long long)jsonx_int(ff, "rank", -1));
        if (json_is_integer(json_object_get(ff, "exit_code")))
            buf_printf(&b, ", exit code %lld", (long long)jsonx_int(ff, "exit_code", 0));
        if (json_is_integer(json_object_get(ff, "signal")))
            buf_printf(&b, ", signal %lld", (long long)jsonx_int(ff, "signal", 0));
        if (jsonx_str(ff, "reason"))
            buf_printf(&b, " (%s)", jsonx_str(ff, "reason"));
        field("first failure:", buf_cstr(&b));
    }
    buf_reset(&b);
    const char *k;
    json_t *v;
    json_object_foreach(json_object_get(job, "labels"), k, v)
        buf_printf(&b, "%s%s=%s", b.len ? "," : "", k, json_string_value(v));
    field("labels:", buf_cstr(&b));
    buf_release(&b);
    static const struct column cols[] = {
        { "RANK", "rank", 't' },          { "STATE", "state", 't' },
        { "EXIT", "exit_code", 't' },     { "SIGNAL", "signal", 't' },
        { "RESTARTS", "restarts", 't' },  { "NODE", "node|pod|pid", 't' },
        { "STARTED", "started_at", 'a' }, { "REASON", "reason", 't' },
    };
    const json_t *ranks = json_object_get(job, "ranks");
    if (json_array_size(ranks)) {
        printf("\n");
        print_table(c, ranks, cols, sizeof(cols) / sizeof(cols[0]));
    }
}

int cli_cmd_status(struct cli *c)
{
    struct buf path = BUF_INIT;
    json_t *job = NULL;
    cli_job_path(&path, c->a.pos[0], "");
    int rc = cli_get(c, buf_cstr(&path), &job);
    if (rc == 0 && c->json)
        cli_print_json(stdout, job);
    else if (rc == 0)
        status_text(c, job);
    json_decref(job);
    buf_release(&path);
    return rc;
}

int cli_cmd_events(struct cli *c)
{
    struct buf path = BUF_INIT;
    json_t *all = json_array();
    int64_t after = 0;
    size_t got;
    int rc;
    do {
        cli_job_path(&path, c->a.pos[0], "/events?limit=1000");
        buf_printf(&path, "&after=%lld", (long long)after);
        json_t *page = NULL;
        rc = cli_get(c, buf_cstr(&path), &page);
        json_t *items = json_object_get(page, "items");
        got = json_array_size(items);
        if (got)
            after = jsonx_int(json_array_get(items, got - 1), "seq", after + 1);
        json_array_extend(all, items);
        json_decref(page);
    } while (rc == 0 && got == 1000);
    if (rc == 0 && c->json) {
        json_t *doc = json_pack("{s:O}", "items", all);
        cli_print_json(stdout, doc);
        json_decref(doc);
    } else if (rc == 0) {
        static const struct column cols[] = {
            { "AGE", "time", 'a' },      { "TYPE", "type", 't' },       { "RANK", "rank", 't' },
            { "REASON", "reason", 't' }, { "MESSAGE", "message", 't' },
        };
        print_table(c, all, cols, sizeof(cols) / sizeof(cols[0]));
    }
    json_decref(all);
    buf_release(&path);
    return rc;
}

int cli_cmd_cancel(struct cli *c)
{
    struct buf path = BUF_INIT;
    cli_job_path(&path, c->a.pos[0], "/cancel");
    /* Cancelling twice is harmless, so the request may be retried. */
    struct httpc_request rq = {
        .method = "POST", .url = buf_cstr(&path), .headers = cli_accept_json, .retry = true
    };
    struct httpc_response resp;
    httpc_response_init(&resp);
    json_t *job = NULL;
    int rc = cli_send(c, &rq, &resp);
    if (rc == 0 && resp.status == 409 && resp.attempts > 1) {
        /* An earlier attempt may have cancelled it and lost the answer: look. */
        cli_job_path(&path, c->a.pos[0], "");
        rc = cli_get(c, buf_cstr(&path), &job);
        const char *state = jsonx_str(job, "state");
        if (rc == 0 && (!state || strncmp(state, "cancel", 6) != 0)) {
            json_decref(job);
            job = NULL;
            rc = cli_answer(c, &resp, &job);
        }
    } else if (rc == 0) {
        rc = cli_answer(c, &resp, &job);
    }
    if (rc == 0 && c->json)
        cli_print_json(stdout, job);
    else if (rc == 0)
        printf("job %s: %s\n", jsonx_str(job, "id"), jsonx_str(job, "state"));
    json_decref(job);
    httpc_response_release(&resp);
    buf_release(&path);
    return rc;
}

static const struct column node_cols[] = {
    { "NAME", "name", 't' },
    { "INSTANCE", "instance_type", 't' },
    { "ZONE", "zone", 't' },
    { "CAPACITY", "capacity_type", 't' },
    { "GPUS", "allocatable.nvidia.com/gpu|capacity.nvidia.com/gpu", 't' },
    { "READY", "ready|conditions.Ready", 't' },
    { "CORDONED", "cordoned|unschedulable", 'b' },
    { "JOBS", "jobs", 'l' },
};

static const struct column template_cols[] = {
    { "NAME", "name", 't' },
    { "VARIABLES", "variables", 'l' },
    { "DESCRIPTION", "description", 't' },
    { "UPDATED", "updated_at|created_at", 'a' },
};

static const struct column trigger_cols[] = {
    { "ID", "id", 't' },
    { "NAME", "name", 't' },
    { "BUCKET", "rule.bucket|bucket", 't' },
    { "PREFIX", "rule.prefix|prefix", 't' },
    { "TEMPLATE", "template", 't' },
    { "ENABLED", "enabled", 'b' },
    { "CREATED", "created_at", 'a' },
};

static const struct column queue_cols[] = {
    { "NAME", "name", 't' },
    { "PRIORITY", "priority", 't' },
    { "GPU QUOTA", "gpu_quota", 't' },
    { "GPUS USED", "gpus_used", 't' },
    { "RUNNING", "running_jobs", 't' },
    { "WAITING", "waiting_jobs", 't' },
};

static const struct column policy_cols[] = {
    { "NAME", "name", 't' },
    { "TOKENS", "tokens", 't' },
    { "NAMESPACES", "namespaces", 't' },
    { "ACCOUNTS", "service_accounts", 't' },
    { "CLAIMS", "volume_claims", 't' },
    { "REGISTRIES", "image_registries", 't' },
    { "UPDATED", "updated_at", 'a' },
};

/* GET path (a list: {"items": [...], "next_cursor"?}) and print it. */
static int list(struct cli *c, const char *path0, const struct column *cols, size_t n)
{
    json_t *all = json_array(), *page = NULL;
    struct buf path = BUF_INIT;
    buf_puts(&path, path0);
    int rc;
    for (;;) {
        rc = cli_get(c, buf_cstr(&path), &page);
        json_t *items = json_is_array(page) ? page : json_object_get(page, "items");
        json_array_extend(all, items);
        const char *next = jsonx_str(page, "next_cursor");
        if (rc || !next || json_array_size(all) >= 100000)
            break;
        buf_reset(&path);
        buf_puts(&path, path0);
        cli_query(&path, "cursor", next);
        json_decref(page);
        page = NULL;
    }
    json_decref(page);
    buf_release(&path);
    if (rc == 0 && c->json) {
        json_t *doc = json_pack("{s:O}", "items", all);
        cli_print_json(stdout, doc);
        json_decref(doc);
    } else if (rc == 0) {
        print_table(c, all, cols, n);
    }
    json_decref(all);
    return rc;
}

int cli_cmd_nodes(struct cli *c)
{
    c->hint_404 =
        "this daemon does not list nodes (GET /v1/nodes comes with the Kubernetes executor)";
    return list(c, "/v1/nodes", node_cols, sizeof(node_cols) / sizeof(node_cols[0]));
}

int cli_cmd_templates(struct cli *c)
{
    c->hint_404 = "this daemon has no job templates (/v1/templates comes with triggers, issue 8)";
    return list(c, "/v1/templates", template_cols,
                sizeof(template_cols) / sizeof(template_cols[0]));
}

int cli_cmd_triggers(struct cli *c)
{
    c->hint_404 = "this daemon has no triggers (/v1/triggers comes with issue 8)";
    return list(c, "/v1/triggers", trigger_cols, sizeof(trigger_cols) / sizeof(trigger_cols[0]));
}

int cli_cmd_queues(struct cli *c)
{
    c->hint_404 = "this daemon has no queues (/v1/queues comes with issue 19)";
    return list(c, "/v1/queues", queue_cols, sizeof(queue_cols) / sizeof(queue_cols[0]));
}

/* POST /v1/jobs/ID/SUFFIX; prints the job's state (and why a queued one waits). A retry is
 * harmless: suspending a suspended job is, and resume refuses only a job already running. */
static int job_action(struct cli *c, const char *suffix)
{
    struct buf path = BUF_INIT;
    cli_job_path(&path, c->a.pos[0], suffix);
    struct httpc_request rq = {
        .method = "POST", .url = buf_cstr(&path), .headers = cli_accept_json, .retry = true
    };
    struct httpc_response resp;
    httpc_response_init(&resp);
    json_t *job = NULL;
    int rc = cli_send(c, &rq, &resp);
    if (rc == 0)
        rc = cli_answer(c, &resp, &job);
    if (rc == 0 && c->json)
        cli_print_json(stdout, job);
    else if (rc == 0)
        printf("job %s: %s (%s)\n", jsonx_str(job, "id"), jsonx_str(job, "state"),
               jsonx_str(job, "reason"));
    json_decref(job);
    httpc_response_release(&resp);
    buf_release(&path);
    return rc;
}

int cli_cmd_suspend(struct cli *c)
{
    return job_action(c, "/suspend");
}

int cli_cmd_resume(struct cli *c)
{
    return job_action(c, "/resume");
}

int cli_cmd_policies(struct cli *c)
{
    c->hint_404 = "this daemon has no cluster policies (/v1/policies comes with issue 17)";
    return list(c, "/v1/policies", policy_cols, sizeof(policy_cols) / sizeof(policy_cols[0]));
}
