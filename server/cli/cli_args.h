/*
 * cli_args: parsing the CLI's command line and finding its settings (flag, environment, config
 * file). Strings in struct cli_args are borrowed from argv.
 */
#ifndef TY_CLI_ARGS_H
#define TY_CLI_ARGS_H

#include <jansson.h>
#include <stdio.h>

#include "server/cli/cli_internal.h"
#include "core/err.h"

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
