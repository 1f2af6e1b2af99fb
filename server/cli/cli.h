/*
 * cli: the trainyard client, the same binary as the daemon. `trainyard submit job.yaml --wait`
 * and friends talk to a daemon's API (server URL and token from flags, TRAINYARD_URL and
 * TRAINYARD_TOKEN, or ~/.config/trainyard/config.yaml) and turn its answers into tables, JSON
 * documents and exit statuses for CI pipelines. docs/cli.md is the manual.
 */
#ifndef TY_CLI_H
#define TY_CLI_H

#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>

/* Exit statuses: part of the CLI's contract (docs/cli.md, `trainyard --help`). */
enum cli_exit {
    CLI_OK = 0,        /* done; with --wait: the job succeeded */
    CLI_FAILED = 1,    /* the job failed */
    CLI_USAGE = 2,     /* bad command line, config or spec file */
    CLI_CANCELLED = 3, /* the job was cancelled */
    CLI_STALLED = 4,   /* the job stalled (flagged stalled, or ended for that reason) */
    CLI_PREEMPTED = 5, /* the job was preempted */
    CLI_TIMEOUT = 6,   /* wait --timeout passed while the job was still going */
    CLI_LOST = 7,      /* no answer from the daemon within --retry-for */
    CLI_API = 8,       /* the daemon refused the request (its problem+json is shown) */
};

/* argv[0] is the command ("submit", "jobs", ...) or a global option. Returns the exit status. */
int cli_main(int argc, char **argv);

/* Prints the client part of `trainyard --help`. */
void cli_usage(FILE *out);

/* The exit status a job's JSON calls for; *done is false while it runs (and is not stalled). */
int cli_job_exit(const json_t *job, bool *done);

#endif
