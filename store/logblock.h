/*
 * logblock: the encoding of a block of log lines (internal to store/logs.c).
 *
 *   byte 0     codec: 0 raw, 1 zstd
 *   payload    per line: varint src, byte flags, zigzag varint time delta (from the previous
 *              line, the first from the block's first_time), varint length, the bytes
 *
 * Sequence numbers are implicit: first_seq + index.
 */
#ifndef TY_LOGBLOCK_H
#define TY_LOGBLOCK_H

#include "core/buf.h"
#include "store/words.h"
#include "store/logs.h"

struct logblock {
    struct buf raw;
    int64_t first_seq, first_time, last_time, prev_time;
    int nlines;
    int64_t nbytes;
    uint64_t rank_mask;
    struct bloom bloom;
};

void logblock_init(struct logblock *b, int64_t first_seq);
void logblock_release(struct logblock *b);
void logblock_add(struct logblock *b, const struct log_line *l, int rank);
/* Encodes the block into data (compressed when seal) and, when seal, its filter into bloom. */
void logblock_finish(struct logblock *b, bool seal, struct buf *data, struct buf *bloom);
/* Decodes data, decompressing into scratch; calls fn for each line (text borrowed until the
 * next decode with the same scratch). fn returns non-zero to stop, which is returned. -1 with
 * err when the data is corrupt. */
int logblock_decode(const void *data, size_t len, int64_t first_seq, int64_t first_time,
                    struct buf *scratch, int (*fn)(void *ctx, struct log_line *l), void *ctx,
                    struct err *err);
/* logblock_decode() in two steps, for a reader that looks at the whole block first: the lines'
 * encoded bytes (decompressed into scratch when compressed; NULL with err when corrupt), then
 * each line of them, as logblock_decode() calls fn. */
const char *logblock_payload(const void *data, size_t len, size_t *plen, struct buf *scratch,
                             struct err *err);
int logblock_lines(const char *payload, size_t plen, int64_t first_seq, int64_t first_time,
                   int (*fn)(void *ctx, struct log_line *l), void *ctx, struct err *err);

#endif
