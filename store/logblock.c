/*
 * logblock: building and decoding log blocks (see logblock.h). Decoding decompresses into a
 * per-thread buffer, so concurrent readers never share one. zstd level 1: logs compress about
 * 5-8x at a few hundred MB/s, so compression costs a small part of ingest.
 */
#include "store/logblock.h"

#include <zstd.h>

#include "core/xalloc.h"

static void put_varint(struct buf *b, uint64_t v)
{
    unsigned char tmp[10];
    size_t n = 0;
    do {
        tmp[n] = (unsigned char)(v & 0x7f);
        v >>= 7;
        if (v)
            tmp[n] |= 0x80;
        n++;
    } while (v);
    buf_append(b, tmp, n);
}

static int get_varint(const unsigned char **p, const unsigned char *end, uint64_t *v)
{
    uint64_t x = 0;
    for (int shift = 0; shift < 64 && *p < end; shift += 7) {
        unsigned char c = *(*p)++;
        x |= (uint64_t)(c & 0x7f) << shift;
        if (!(c & 0x80)) {
            *v = x;
            return 0;
        }
    }
    return -1;
}

static uint64_t zigzag(int64_t v)
{
    return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
}

static int64_t unzigzag(uint64_t v)
{
    return (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
}

void logblock_init(struct logblock *b, int64_t first_seq)
{
    memset(b, 0, sizeof(*b));
    b->first_seq = first_seq;
    bloom_init(&b->bloom);
}

void logblock_release(struct logblock *b)
{
    buf_release(&b->raw);
    bloom_release(&b->bloom);
}

static void index_word(void *ctx, const char *w, size_t n)
{
    if (words_indexed(w, n))
        bloom_add(ctx, words_hash(w, n));
}

void logblock_add(struct logblock *b, const struct log_line *l, int rank)
{
    if (b->nlines == 0) {
        b->first_time = l->time;
        b->prev_time = l->time;
    }
    put_varint(&b->raw, (uint64_t)l->src);
    buf_putc(&b->raw, (char)l->flags);
    /* Deltas wrap modulo 2^64 both ways: exact for any two times, never an overflow. */
    put_varint(&b->raw, zigzag((int64_t)((uint64_t)l->time - (uint64_t)b->prev_time)));
    put_varint(&b->raw, l->len);
    buf_append(&b->raw, l->text, l->len);
    b->prev_time = l->time;
    if (l->time > b->last_time || b->nlines == 0)
        b->last_time = l->time;
    b->nlines++;
    b->nbytes += (int64_t)l->len;
    b->rank_mask |= 1ULL << (rank & 63);
    words_each(l->text, l->len, index_word, &b->bloom);
}

void logblock_finish(struct logblock *b, bool seal, struct buf *data, struct buf *bloom)
{
    buf_reset(data);
    if (!seal) {
        buf_putc(data, 0);
        buf_append(data, b->raw.data, b->raw.len);
        return;
    }
    size_t bound = ZSTD_compressBound(b->raw.len);
    buf_reserve(data, bound + 1);
    data->data[0] = 1;
    size_t n = ZSTD_compress(data->data + 1, bound, b->raw.data, b->raw.len, 1);
    if (ZSTD_isError(n)) {
        data->data[0] = 0;
        memcpy(data->data + 1, b->raw.data, b->raw.len);
        n = b->raw.len;
    }
    data->len = n + 1;
    buf_reset(bloom);
    bloom_build(&b->bloom, bloom);
}

static const unsigned char *payload(const unsigned char *data, size_t len, size_t *out_len,
                                    struct buf *scratch, struct err *err)
{
    if (len == 0) {
        err_set(err, ERR_IO, "log block is empty");
        return NULL;
    }
    if (data[0] == 0) {
        *out_len = len - 1;
        return data + 1;
    }
    unsigned long long size = ZSTD_getFrameContentSize(data + 1, len - 1);
    if (data[0] != 1 || size == ZSTD_CONTENTSIZE_ERROR || size == ZSTD_CONTENTSIZE_UNKNOWN ||
        size > (64u << 20)) {
        err_set(err, ERR_IO, "log block is corrupt");
        return NULL;
    }
    buf_reset(scratch);
    buf_reserve(scratch, (size_t)size);
    size_t n = ZSTD_decompress(scratch->data, (size_t)size + 1, data + 1, len - 1);
    if (ZSTD_isError(n)) {
        err_set(err, ERR_IO, "log block does not decompress: %s", ZSTD_getErrorName(n));
        return NULL;
    }
    *out_len = n;
    return (const unsigned char *)scratch->data;
}

const char *logblock_payload(const void *data, size_t len, size_t *plen, struct buf *scratch,
                             struct err *err)
{
    return (const char *)payload(data, len, plen, scratch, err);
}

int logblock_lines(const char *payload, size_t plen, int64_t first_seq, int64_t first_time,
                   int (*fn)(void *ctx, struct log_line *l), void *ctx, struct err *err)
{
    const unsigned char *p = (const unsigned char *)payload, *end = p + plen;
    int64_t time = first_time;
    for (int64_t seq = first_seq; p < end; seq++) {
        uint64_t src, delta, n;
        if (get_varint(&p, end, &src) < 0 || p >= end)
            return err_set(err, ERR_IO, "log block is truncated");
        int flags = *p++;
        if (get_varint(&p, end, &delta) < 0 || get_varint(&p, end, &n) < 0 || n > (size_t)(end - p))
            return err_set(err, ERR_IO, "log block is truncated");
        time = (int64_t)((uint64_t)time + (uint64_t)unzigzag(delta)); /* see logblock_add */
        struct log_line l = { .seq = seq,
                              .time = time,
                              .src = (int)src,
                              .flags = flags,
                              .text = (const char *)p,
                              .len = (size_t)n };
        p += n;
        int rc = fn(ctx, &l);
        if (rc)
            return rc;
    }
    return 0;
}

int logblock_decode(const void *data, size_t len, int64_t first_seq, int64_t first_time,
                    struct buf *scratch, int (*fn)(void *ctx, struct log_line *l), void *ctx,
                    struct err *err)
{
    size_t plen;
    const char *p = logblock_payload(data, len, &plen, scratch, err);
    return p ? logblock_lines(p, plen, first_seq, first_time, fn, ctx, err) : -1;
}
