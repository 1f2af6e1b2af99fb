/*
 * jsonx: small helpers around jansson used across the tree: bounded parsing (our own parser,
 * building jansson values), compact dumping into a buf, and typed lookups.
 * Ownership follows jansson: functions returning json_t * hand over a new reference.
 */
#ifndef TY_JSONX_H
#define TY_JSONX_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "core/buf.h"
#include "core/err.h"

#define JSONX_MAX_DEPTH_DEFAULT 32

/* Parses len bytes of strict JSON (RFC 8259: UTF-8, no duplicate keys, any value at the top).
 * Rejects nesting deeper than max_depth (err->reason "max_depth") and text that is not one JSON
 * value. ERR_INVALID with line and column on failure. Returns a new reference. (jsonx_parse.c) */
json_t *jsonx_loadb(const char *data, size_t len, int max_depth, struct err *err);
/* Appends the compact form of v (keys in insertion order) to out; reals as jsonx_put_real. */
void jsonx_dump(struct buf *out, const json_t *v);
/* Appends len bytes as a quoted JSON string, escaped as jansson's dump escapes it. */
void jsonx_dump_string(struct buf *out, const char *s, size_t len);
/* Appends the shortest decimal that reads back as v (10.4461, not 10.446099999999999), with
 * jansson's ".0" on integral values; null when v is not finite. */
void jsonx_put_real(struct buf *out, double v);
/* Returns the compact form; caller frees. */
char *jsonx_dumps(const json_t *v);

/* Borrowed string value of obj[key], or NULL when absent or not a string. */
const char *jsonx_str(const json_t *obj, const char *key);
/* obj[key] as integer, or def when absent or not an integer. */
int64_t jsonx_int(const json_t *obj, const char *key, int64_t def);
bool jsonx_bool(const json_t *obj, const char *key, bool def);

/* Sets obj[key] to a string, or to null when value is NULL. */
void jsonx_set_str(json_t *obj, const char *key, const char *value);
/* Sets obj[key] to an RFC 3339 time, or to null when ns is 0. */
void jsonx_set_time(json_t *obj, const char *key, int64_t ns);

/* Appends s to out as the JSON string body (no quotes), escaping invalid UTF-8 bytes and control
 * characters as \u00XX-free text ("\\xNN") so any byte string becomes valid JSON. */
void jsonx_escape_bytes(struct buf *out, const char *s, size_t len);

/* Appends the escaped form of a JSON pointer token ("~" -> "~0", "/" -> "~1"). */
void jsonx_pointer_append(struct buf *out, const char *token);

#endif
