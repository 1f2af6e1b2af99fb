/*
 * cli_set: the job spec as the CLI submits it. Loading a spec file (JSON or YAML, told by the
 * file's extension, else by its content) and applying `--set path=value` overrides:
 *
 *   nodes=2                  -> "nodes": 2            (typed: integers, numbers, true/false, null)
 *   env.LR=3e-4              -> "env": {"LR": "3e-4"} (env, labels, names... are always strings)
 *   labels.team=nlp          -> "labels": {"team": "nlp"}
 *   command=["python","t.py"]-> a JSON array or object is taken as such
 *   args.1=--lr              -> the second element of an existing array (index == length appends)
 *   labels.app\.io/part=x    -> a key holding a dot: escape it with a backslash
 *
 * A value is a string wherever the spec wants one (the string paths in cli_set.c) or where the
 * document already holds a string; `"quoted"` JSON strings are strings everywhere.
 */
#ifndef TY_CLI_SET_H
#define TY_CLI_SET_H

#include <jansson.h>
#include <stddef.h>

#include "core/err.h"

#define CLI_SPEC_MAX_BYTES (4 << 20)

/* Applies one "path=value" to doc (an object). ERR_INVALID naming the path when the text has
 * no '=', the path is empty or malformed, or it runs through a value that is not an object or
 * array. doc is changed only on success. */
int cli_set_apply(json_t *doc, const char *assignment, struct err *err);

/* Parses a spec from len bytes; name (a file name, "-" for stdin) picks the format by its
 * extension (.json, .yaml, .yml), else the first non-blank byte does ('{' JSON, else YAML).
 * ERR_INVALID with name, line and column. Returns a new reference to an object. */
json_t *cli_spec_parse(const char *name, const char *data, size_t len, struct err *err);

/* Reads path ("-": stdin) and parses it; ERR_IO when unreadable or larger than
 * CLI_SPEC_MAX_BYTES. Returns a new reference. */
json_t *cli_spec_load(const char *path, struct err *err);

#endif
