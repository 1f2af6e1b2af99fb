/*
 * yamljson: turns one YAML document into a jansson value, so that everything after parsing
 * (validation, JSON pointers in errors) is the same for JSON and YAML input. The only file that
 * includes <yaml.h>.
 *
 * Scalars follow the YAML 1.2 core schema: plain null/~/true/false/integers/floats are typed,
 * quoted scalars and `!!str` are strings. Aliases are expanded with a node budget (no "billion
 * laughs"), nesting is bounded, and a stream with more than one document is rejected.
 */
#ifndef TY_YAMLJSON_H
#define TY_YAMLJSON_H

#include <jansson.h>
#include <stddef.h>

#include "core/err.h"

#define YAMLJSON_MAX_NODES 200000

/* Returns a new reference, or NULL with ERR_INVALID naming line and column. */
json_t *yamljson_load(const char *data, size_t len, int max_depth, struct err *err);
/* Loads a file (at most max_bytes). ERR_IO when unreadable. */
json_t *yamljson_load_file(const char *path, size_t max_bytes, struct err *err);

#endif
