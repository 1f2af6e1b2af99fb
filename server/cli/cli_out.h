/*
 * cli_out: how the CLI prints things. Aligned tables, relative times and durations for people;
 * one JSON document (or NDJSON) for scripts; API problems (problem+json) and the CLI's own
 * failures in both forms. Pure formatting into bufs, plus a few printers to stdout/stderr.
 */
#ifndef TY_CLI_OUT_H
#define TY_CLI_OUT_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "core/buf.h"

/* A table of text cells; the columns are as wide as their widest cell (in characters, not
 * bytes), two spaces apart, the last column unpadded. Lives in the caller's storage. */
struct cli_table {
    size_t ncols;
    size_t nrows;     /* header row included */
    size_t cap;       /* cells allocated */
    char **cells;     /* row-major, owned */
    size_t max_width; /* a cell longer than this is cut and ends in "..."; 0: 80 */
};

/* headers: ncols strings (copied). */
void cli_table_init(struct cli_table *t, size_t ncols, const char *const *headers);
/* Adds a row of ncols cells (copied); NULL or "" shows as "-". Control characters (newline,
 * tab, escape) become spaces so that one cell stays on one line. */
void cli_table_add(struct cli_table *t, const char *const *cells);
/* Appends the table to out, one line per row, each ending in '\n'. */
void cli_table_render(const struct cli_table *t, struct buf *out);
void cli_table_release(struct cli_table *t);

/* "just now", "42s ago", "5m12s ago", "3h5m ago", "4d2h ago", "in 30s"... for then - now. */
void cli_reltime(struct buf *out, int64_t then_ns, int64_t now_ns);
/* "850ms", "42s", "5m12s", "3h5m", "4d2h". */
void cli_duration(struct buf *out, int64_t ns);
/* An RFC 3339 time from the API as relative time; "-" when absent or not a time. */
void cli_reltime_str(struct buf *out, const char *rfc3339, int64_t now_ns);

/* What a diagnosis' retry class says about restarting, in words ("a restart may help"...);
 * NULL when the class is unknown to this CLI or absent. Static storage. */
const char *cli_restart_words(const char *retry_class, const char *cause);

/* Prints v as one JSON document (indented) to f, followed by a newline. */
void cli_print_json(FILE *f, const json_t *v);

/* Renders an API problem (problem+json body) for people:
 *   "trainyard: <detail> (HTTP 422 Unprocessable Content)"
 *   "  /resources/gpus: must be between 0 and 64"
 * body may be any text: when it is not a problem document its first line is shown. */
void cli_problem_text(struct buf *out, long status, const char *body, size_t len);

#endif
