/*
 * yamljson: turns one YAML document into a jansson value, so that everything after parsing
 * (validation, JSON pointers in errors) is the same for JSON and YAML input. The only file that
 * includes <yaml.h>.
 *
 * Scalars follow the YAML 1.2 core schema: plain null/~/true/false/integers/floats are typed,
 * quoted scalars and `!!str` are strings. A stream with more than one document is rejected.
 *
 * Aliases are expanded, and each counts as what it expands to, in bytes and in nesting: a small
 * document whose aliases expand to hundreds of megabytes ("billion laughs") is refused while it
 * is read, before anything is copied. The limits hold for the document after expansion.
 */
#ifndef TY_YAMLJSON_H
#define TY_YAMLJSON_H

#include <jansson.h>
#include <stddef.h>

#include "core/err.h"

#define YAMLJSON_MAX_NODES 200000

/* Returns a new reference, or NULL with err: ERR_INVALID naming line and column; nesting past
 * max_depth (aliases count the depth of what they expand to) is ERR_INVALID with err->reason
 * "max_depth"; a document whose bytes plus the bytes its aliases expand to (measured on the
 * YAML text of each anchored node) pass max_bytes is ERR_TOO_LARGE with reason "max_bytes". */
json_t *yamljson_load(const char *data, size_t len, int max_depth, size_t max_bytes,
                      struct err *err);
/* Loads a file (at most max_bytes, which also bounds its expansion). ERR_IO when unreadable. */
json_t *yamljson_load_file(const char *path, size_t max_bytes, struct err *err);

#endif
