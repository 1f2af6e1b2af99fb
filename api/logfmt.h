/*
 * logfmt: log lines as the API shows them: text ("[rank 3] ..."), NDJSON (one object a line)
 * or Server-Sent Events (id: is the sequence number, so Last-Event-ID resumes exactly). Bytes
 * that are not valid UTF-8 and NUL are shown escaped ("\xff"); ANSI colour codes are kept
 * unless stripped on request.
 */
#ifndef TY_LOGFMT_H
#define TY_LOGFMT_H

#include <stdbool.h>

#include "core/buf.h"
#include "store/logs.h"

enum log_format { LOGFMT_TEXT, LOGFMT_NDJSON, LOGFMT_SSE };

struct logfmt {
    enum log_format format;
    bool strip_ansi;
    bool show_rank; /* text: prefix "[rank N] " */
};

void logfmt_line(const struct logfmt *f, struct buf *out, const struct log_line *l);
/* The line as a JSON object (new reference), as NDJSON and SSE carry it. */
json_t *logfmt_json(const struct log_line *l, bool strip_ansi);
/* Removes ANSI escape sequences (CSI and OSC) from text into out. */
void logfmt_strip_ansi(struct buf *out, const char *text, size_t len);

#endif
