/*
 * classify: matches one log line against the pattern table (patterns.h) and pulls out the
 * parts a summary needs. Built for the ingest path: an ordinary line costs one pass over its
 * bytes with a 4-byte rolling prefilter (8 KiB bitmap of the anchors' first four bytes, case
 * folded); only a prefilter hit compares an anchor. No regex, no allocation.
 *
 * Everything here is pure and thread-safe (the prefilter is built once, under pthread_once).
 */
#ifndef TY_DIAG_CLASSIFY_H
#define TY_DIAG_CLASSIFY_H

#include <stdbool.h>
#include <stddef.h>

#include "server/diag/patterns.h"

/* Only the first this many bytes of a line are scanned (anchors sit near the start). */
#define CLASSIFY_SCAN_MAX 4096
/* Longest detail kept from a line. */
#define CLASSIFY_DETAIL_MAX 160

/* Returns the matching pattern of highest precedence, or NULL. *at (may be NULL) gets the
 * offset of its anchor in text. */
const struct diag_pattern *classify_line(const char *text, size_t len, size_t *at);

/* Writes the pattern's detail (the text between p->after and p->until) into out as valid UTF-8
 * without control characters; returns its length (0: none). */
size_t classify_detail(const struct diag_pattern *p, const char *text, size_t len, size_t at,
                       char *out, size_t cap);
/* The integer after p->num (searched from the anchor), or p->code; false when neither. */
bool classify_num(const struct diag_pattern *p, const char *text, size_t len, size_t at, long *out);

/* Finds needle in hay (ASCII case-insensitive when nocase). */
const char *classify_find(const char *hay, size_t n, const char *needle, size_t m, bool nocase);

/* Copies up to cap-1 bytes of s into out as valid UTF-8 with control characters turned into
 * spaces and surrounding blanks trimmed; returns the length written. */
size_t classify_clean(char *out, size_t cap, const char *s, size_t n);

struct classify_vars {
    const char *who, *node, *detail, *num, *text; /* NULL or "" means empty */
};

/* Expands a summary template (see patterns.h) into out (always NUL-terminated). */
void classify_render(const char *tmpl, const struct classify_vars *v, char *out, size_t cap);

#endif
