/*
 * jobtemplate: job templates, a job spec (JSON) with variables substituted at submit time.
 *
 *   {"name": "retrain-${S3_BUCKET}",
 *    "command": ["python", "train.py"],
 *    "args": ["--data", "${S3_URI}", "--lr", "${LR:-0.001}"],
 *    "env": {"EPOCHS": "${EPOCHS}"},
 *    "labels": {"dataset": "${S3_BUCKET}"},
 *    "variables": {"EPOCHS": {"default": "10", "description": "passes over the data"}}, ...}
 *
 * Syntax: ${NAME} or ${NAME:-default} (default used when the value is unset or empty); "$$" is a
 * literal "$"; a "$" not followed by "{" or "$" is literal (so "$HOME" passes through). NAME is
 * [A-Za-z_][A-Za-z0-9_]*. Values are inserted once, never re-scanned.
 *
 * Built-ins (set from the triggering event): S3_BUCKET, S3_KEY (decoded), S3_URI
 * (s3://bucket/key), OBJECT_SIZE, EVENT_TIME, S3_VERSION_ID, S3_ETAG. User variables are declared
 * in the template's "variables" object ("NAME": {"default": "x", "description": "..."}, or
 * "NAME": "x", or "NAME": null for a required one); a ${NAME:-default} declares NAME too.
 *
 * Where: only in name, command, args, env values and labels values. Anywhere else a variable is
 * an error at save time; strings outside those places are never changed.
 *
 * Injection: values reach a job only as whole argv elements and environment values, which no
 * shell parses. In command and args a variable must be the whole element ("${S3_URI}", not
 * "--data=${S3_URI}" nor "echo ${S3_KEY}"): text around a value is how it ends up inside a
 * script (`env sh -c`, `timeout 100 bash -c`, `python3 -c`) or an option, and no list of
 * shells finds every program that parses its arguments. Nor may a variable be the program
 * (command[0]), follow a flag whose argument is code (-c, -e, -E, --eval, ...), or set an env
 * variable programs read as code (BASH_ENV, LD_PRELOAD, PYTHONPATH, ...). At render time a
 * built-in (an object key, say) that starts with '-' is refused in argv: it would be an option.
 * In the name a value is folded to a DNS-1035 fragment (lower case, anything else becomes "-")
 * and the result must be a valid DNS-1035 label; in label values anything outside
 * [A-Za-z0-9._-] becomes "-" and the value is cut to 63 characters. A shell script (command
 * "sh -c SCRIPT", or a command given as one string) never gets substitutions; ${...} of a known
 * variable there is an error at save time, any other ${...} is left to the shell. Pass the value
 * through env and write "$S3_KEY" in the script, or as a positional parameter after it
 * (["sh", "-c", "cat \"$1\"", "sh", "${S3_KEY}"]).
 */
#ifndef TY_JOBTEMPLATE_H
#define TY_JOBTEMPLATE_H

#include <jansson.h>
#include <stddef.h>

#include "core/err.h"
#include "trigger/s3event.h"

struct jobtemplate_values {
    char **names;
    char **values;
    size_t n;
};

void jobtemplate_values_init(struct jobtemplate_values *v);
void jobtemplate_values_release(struct jobtemplate_values *v);
/* Sets (or replaces) name = value; both are copied. */
void jobtemplate_values_set(struct jobtemplate_values *v, const char *name, const char *value);
/* Sets the built-ins from an upload event. */
void jobtemplate_values_from_event(struct jobtemplate_values *v, const struct s3event *e);
/* Adds user values from a JSON object {"NAME": "value", ...} (numbers and booleans are written
 * as text). ERR_VALIDATION with a field per bad entry, under `where` ("/values"). */
int jobtemplate_values_from_json(struct jobtemplate_values *v, const json_t *obj, const char *where,
                                 struct err *err);

/* Checks a template when it is saved, as far as it can without values: the variables block,
 * malformed or unknown variables, variables outside the substitution places or inside shell
 * scripts, and names or label values that could never be valid. ERR_VALIDATION with the JSON
 * pointer of every problem. */
int jobtemplate_validate(const json_t *tmpl, struct err *err);

/* Substitutes vals into tmpl and returns the job spec (a new reference, caller decrefs), without
 * the "variables" member. Fails with ERR_VALIDATION (pointer of each problem) for a variable
 * with no value, a value for an unknown variable, or a name that is not DNS-1035 once
 * substituted. The job spec validator still runs on the result. */
json_t *jobtemplate_render(const json_t *tmpl, const struct jobtemplate_values *vals,
                           struct err *err);

#endif
