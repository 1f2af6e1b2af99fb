/*
 * logrec: the record format of a rank's log file, written by the local shim and read by the
 * log collector. One record per line, appended with one write(2):
 *
 *     <time ns> <stream><flag> <bytes of the line>\n
 *
 * stream is 'o' (stdout) or 'e' (stderr); flag is '-', 'p' (progress snapshot) or 'u'
 * (unterminated line flushed). The line's bytes never contain '\n' (linesplit guarantees it),
 * so a record without its '\n' is incomplete (the writer died mid-write) and is not read.
 */
#ifndef TY_LOGREC_H
#define TY_LOGREC_H

#include <stddef.h>
#include <stdint.h>

#include "core/buf.h"

enum log_stream { STREAM_STDOUT = 0, STREAM_STDERR = 1 };

struct logrec {
    int64_t time;
    enum log_stream stream;
    int flags; /* enum line_flags */
    const char *text;
    size_t len;
};

/* Appends one record to out. */
void logrec_format(struct buf *out, const struct logrec *r);
/* Parses the first complete record in data[0..len): returns the bytes consumed (the record and
 * its '\n'), 0 when no complete record is there yet, or minus the bytes to skip when the line
 * is not a record. r->text points into data. */
long logrec_parse(const char *data, size_t len, struct logrec *r);

#endif
