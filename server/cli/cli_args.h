/*
 * cli_args: parsing the CLI's command line and finding its settings (flag, environment, config
 * file). Strings in struct cli_args are borrowed from argv.
 */
#ifndef TY_CLI_ARGS_H
#define TY_CLI_ARGS_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "core/err.h"

#define CLI_MAX_SETS 128
#define CLI_MAX_POS  4

/* Every option of every command; which command takes which is in cli.c's table. Strings are
 * borrowed from argv. */
struct cli_args {
    const char *command;
    const char *pos[CLI_MAX_POS];
    size_t npos;
    /* global */
    const char *url, *token, *config, *output, *cacert, *retry_for;
    bool help, quiet;
    /* submit */
    const char *sets[CLI_MAX_SETS];
    size_t nsets;
    const char *template_name, *idempotency_key, *timeout;
    bool dry_run, follow, wait;
    /* jobs */
    const char *state, *selector, *name, *limit;
    /* logs */
    const char *rank, *grep, *tail, *stream, *attempt, *since, *until;
    bool strip_ansi, timestamps;
    /* usage (cli_usage.c) */
    const char *from, *to, *by, *owner, *queue, *executor, *label;
};

/* Fills a from argv (argv[0] included: it is the command or an option). ERR_INVALID for an
 * unknown option, a missing value, or an option the command does not take. */
int cli_args_parse(int argc, char **argv, struct cli_args *a, struct err *err);
/* Prints the options of command (NULL: the global ones), one a line. */
void cli_args_help(FILE *out, const char *command);

/* The config file as a document (new reference), or NULL when there is none (err unset) or it
 * is bad (err set). *warning (caller frees, may be NULL) tells of a token others may read. */
json_t *cli_config_load(const struct cli_args *a, char **warning, struct err *err);
/* The first of flag, getenv(env_name), config[key], def. Borrowed. */
const char *cli_setting(const char *flag, const char *env_name, const json_t *config,
                        const char *key, const char *def);
/* A positive duration ("30s", "10m"); ERR_INVALID naming what. */
int cli_duration_arg(const char *what, const char *text, int64_t *ns, struct err *err);

#endif
