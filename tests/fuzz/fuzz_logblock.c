/*
 * fuzz_logblock: the log block decoder on bytes as a damaged database could hand them over,
 * raw and zstd-compressed; and blocks built from the input's lines, sealed or not, which must
 * decode to exactly those lines.
 * The first byte picks the mode: 0 decode the rest as a block; 1 the rest is a raw payload,
 * compressed into a zstd block first; otherwise build a block of the rest's '\n'-separated
 * lines (first byte of each: src, flags and time step) and check the round trip.
 */
#include <zstd.h>

#include "store/logblock.h"
#include "tests/fuzz/fuzz.h"

#define FIRST_SEQ  1000
#define FIRST_TIME 1700000000000000000LL

struct expect {
    const struct log_line *lines;
    size_t n, at;
    int64_t seq, time;
};

static int count(void *ctx, struct log_line *l)
{
    struct expect *e = ctx;
    FUZZ_ASSERT(l->seq == e->seq + (int64_t)e->at);
    e->at++;
    return e->at > 100000; /* a decoder stops when the callback asks */
}

static int compare(void *ctx, struct log_line *l)
{
    struct expect *e = ctx;
    FUZZ_ASSERT(e->at < e->n);
    const struct log_line *w = &e->lines[e->at++];
    FUZZ_ASSERT(l->seq == w->seq && l->time == w->time && l->src == w->src &&
                l->flags == w->flags && l->len == w->len);
    FUZZ_ASSERT(l->len == 0 || memcmp(l->text, w->text, l->len) == 0);
    return 0;
}

static void decode(const void *data, size_t size)
{
    struct buf scratch = BUF_INIT;
    struct err err;
    err_init(&err);
    struct expect e = { .seq = FIRST_SEQ };
    int rc = logblock_decode(data, size, FIRST_SEQ, FIRST_TIME, &scratch, count, &e, &err);
    FUZZ_ASSERT(rc >= 0 || err_is_set(&err));
    err_release(&err);
    buf_release(&scratch);
}

static void compressed(const uint8_t *data, size_t size)
{
    size_t bound = ZSTD_compressBound(size);
    unsigned char *block = malloc(bound + 1);
    block[0] = 1;
    size_t n = ZSTD_compress(block + 1, bound, data, size, 1);
    FUZZ_ASSERT(!ZSTD_isError(n));
    decode(block, n + 1);
    free(block);
}

static void round_trip(const uint8_t *data, size_t size, bool seal)
{
    struct log_line lines[256];
    size_t n = 0;
    int64_t time = FIRST_TIME;
    struct logblock b;
    logblock_init(&b, FIRST_SEQ);
    while (size && n < 256) {
        size_t len;
        const uint8_t *p = fuzz_take(&data, &size, '\n', &len);
        uint8_t head = len ? p[0] : 0;
        time += ((int64_t)(head & 0x0f) - 4) * 1000003LL; /* lines may go back in time */
        lines[n] = (struct log_line){ .seq = FIRST_SEQ + (int64_t)n,
                                      .time = time,
                                      .src = head >> 4,
                                      .flags = head & 0x07,
                                      .text = (const char *)p + (len ? 1 : 0),
                                      .len = len ? len - 1 : 0 };
        logblock_add(&b, &lines[n], lines[n].src);
        n++;
    }
    struct buf out = BUF_INIT, bloom = BUF_INIT, scratch = BUF_INIT;
    logblock_finish(&b, seal, &out, &bloom);
    struct expect e = { .lines = lines, .n = n };
    struct err err;
    err_init(&err);
    FUZZ_ASSERT(logblock_decode(out.data, out.len, FIRST_SEQ, b.first_time, &scratch, compare, &e,
                                &err) == 0);
    FUZZ_ASSERT(e.at == n);
    err_release(&err);
    buf_release(&out);
    buf_release(&bloom);
    buf_release(&scratch);
    logblock_release(&b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    const uint8_t *rest = data + 1;
    size_t n = size - 1;
    if (data[0] == 0) {
        unsigned char *copy = malloc(n ? n : 1); /* exact size */
        memcpy(copy, rest, n);
        decode(copy, n);
        free(copy);
    } else if (data[0] == 1) {
        compressed(rest, n);
    } else {
        round_trip(rest, n, data[0] & 1);
    }
    return 0;
}
