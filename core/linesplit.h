/*
 * linesplit: turns the bytes a process writes into log lines the way a person wants to read
 * them. Used by the local rank shim and the Kubernetes log follower, so both treat messy output
 * the same way:
 *  - "\n" and "\r\n" end a line;
 *  - "\r" alone starts a redraw (tqdm progress bars): redraws are not lines; the latest one is
 *    emitted at most once per second (LINE_PROGRESS), the final one as an ordinary line;
 *  - a line longer than max_line keeps its first max_line bytes and a visible mark with the
 *    number of bytes dropped; memory stays bounded whatever the line length;
 *  - a line left unterminated for partial_ns is emitted as it is (LINE_PARTIAL);
 *  - every byte is kept as is (invalid UTF-8, NUL, ANSI colour codes): escaping is for display.
 * Not thread-safe: one splitter per stream.
 */
#ifndef TY_LINESPLIT_H
#define TY_LINESPLIT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/buf.h"

enum line_flags { LINE_PROGRESS = 1, LINE_PARTIAL = 2 };

typedef void (*linesplit_emit)(void *ctx, const char *line, size_t len, int flags);

struct linesplit {
    size_t max_line;
    int64_t progress_ns; /* at most one progress snapshot per this interval */
    int64_t partial_ns;  /* an unterminated line is emitted after this */
    struct buf cur;      /* the line being built (after the last redraw) */
    size_t dropped;      /* bytes of cur beyond max_line */
    int64_t cur_since;
    bool cr;             /* a "\r" was seen; the next byte decides: "\r\n" or a redraw */
    struct buf snapshot; /* the latest complete redraw */
    bool snapshot_dirty;
    int64_t snapshot_at;
};

void linesplit_init(struct linesplit *ls, size_t max_line);
void linesplit_release(struct linesplit *ls);
void linesplit_feed(struct linesplit *ls, const char *data, size_t len, int64_t now,
                    linesplit_emit emit, void *ctx);
/* Emits a due progress snapshot or a stale partial line. Call periodically. */
void linesplit_tick(struct linesplit *ls, int64_t now, linesplit_emit emit, void *ctx);
/* End of stream: emits whatever is pending. */
void linesplit_finish(struct linesplit *ls, linesplit_emit emit, void *ctx);

#endif
