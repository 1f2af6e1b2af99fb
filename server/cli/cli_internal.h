/*
 * cli_internal: what the CLI's files share: the context every command gets (its parsed options,
 * the HTTP client, the output mode; cli.c fills it, the commands only read it), the request
 * helpers that turn answers into exit statuses, and one entry point per command. Not for use
 * outside server/cli/.
 */
#ifndef TY_CLI_INTERNAL_H
#define TY_CLI_INTERNAL_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "server/cli/cli.h"
#include "server/cli/cli_args.h"
#include "core/buf.h"
#include "core/httpc.h"

struct cli {
    struct cli_args a;
    struct httpc *http;   /* to the daemon: base URL, token, CA, retry budget and notices */
    int64_t retry_for_ns; /* --retry-for, also the budget of a follow's reconnections */
    bool json;            /* --output json */
    int64_t now_ns;       /* for relative times */
    json_t *config;       /* the config file's document, or NULL */
    /* Said after a 404 "no such path": the route is not on this daemon (yet). */
    const char *hint_404;
};

/* Prints "trainyard: <message>" on stderr and, with --output json, a problem-shaped document
 * {"type": "urn:trainyard:cli:<kind>", "title", "detail", "exit_status"} on stdout so that the
 * output stays one JSON document. Returns code. */
int cli_fail(struct cli *c, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* An informational line on stderr (not with --quiet). */
void cli_note(struct cli *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* The Accept header of every JSON request (NULL-terminated, for httpc_request.headers). */
extern const char *const cli_accept_json[];
/* The body bound of the CLI's answers: a page of 2000 log lines fits with room to spare. */
#define CLI_BODY_MAX (64u << 20)

/* Sends rq. Returns 0 when an answer arrived (resp), CLI_LOST (reported) when none did, CLI_API
 * (reported) when it was over CLI_BODY_MAX. */
int cli_send(struct cli *c, const struct httpc_request *rq, struct httpc_response *resp);
/* Turns an answer into a document: 2xx JSON -> *doc (NULL for an empty body) and 0; anything
 * else is reported (the problem as the API says it) and CLI_API is returned. Caller decrefs. */
int cli_answer(struct cli *c, const struct httpc_response *resp, json_t **doc);
/* cli_send + cli_answer for a GET (retried). */
int cli_get(struct cli *c, const char *path, json_t **doc);

/* "/v1/jobs/<id escaped><suffix>" into out (reset first). */
void cli_job_path(struct buf *out, const char *id, const char *suffix);
/* Appends "&name=<value escaped>" (or "?name=" when out has no '?' yet); nothing for NULL. */
void cli_query(struct buf *out, const char *name, const char *value);

/* A cell for a table from item: paths are alternatives "a.b|c" (the first present wins);
 * how: 't' text, 'a' age (RFC 3339 as relative time), 'l' list (strings joined, or a count),
 * 'b' yes/no. Appends "-" when nothing is there. */
void cli_cell(struct buf *out, const json_t *item, const char *paths, char how, int64_t now);
/* Looks up a dotted path ("first_failure.rank"); borrowed, NULL when absent. */
json_t *cli_lookup(const json_t *v, const char *path);

/* Reports a finished (or stalled) job: the diagnosis summary (GET /v1/jobs/{id}/diagnosis, or
 * the job's reason/message/first_failure when the daemon has no diagnosis), as text or as one
 * JSON document {"job", "diagnosis", "result", "exit_status"}. Returns the job's exit status. */
int cli_report(struct cli *c, const json_t *job);
/* Polls the job until it is done or timeout_ns passes (0: no limit). 0 with *job_out (caller
 * decrefs), or CLI_TIMEOUT / CLI_LOST / CLI_API (reported). */
int cli_wait_job(struct cli *c, const char *id, int64_t timeout_ns, json_t **job_out);
/* Prints the diagnosis of a job for people (used by `diagnosis` and cli_report). */
void cli_print_diagnosis(struct cli *c, const json_t *job, const json_t *diag);
/* The diagnosis document of job: the route's answer, or one built from the job when the
 * daemon has no diagnosis route (404). NULL when the daemon could not be asked (reported when
 * report is true). New reference. */
json_t *cli_fetch_diagnosis(struct cli *c, const json_t *job, bool report, int *rc);

/* Follows the merged log of job id until it ends, resuming after drops and daemon restarts
 * without losing or repeating a line. 0, or CLI_LOST / CLI_API (reported). */
int cli_follow_logs(struct cli *c, const char *id);

/* The commands: each returns an exit status. */
int cli_cmd_submit(struct cli *c);
int cli_cmd_jobs(struct cli *c);
int cli_cmd_status(struct cli *c);
int cli_cmd_events(struct cli *c);
int cli_cmd_diagnosis(struct cli *c);
int cli_cmd_cancel(struct cli *c);
int cli_cmd_wait(struct cli *c);
int cli_cmd_logs(struct cli *c);
int cli_cmd_nodes(struct cli *c);
int cli_cmd_templates(struct cli *c);
int cli_cmd_triggers(struct cli *c);
int cli_cmd_policies(struct cli *c);
int cli_cmd_queues(struct cli *c);
int cli_cmd_suspend(struct cli *c);
int cli_cmd_resume(struct cli *c);
int cli_cmd_usage(struct cli *c);

#endif
