/*
 * store/metrics_block: the packed block of metric points (see metrics_block.h). A block
 * holds one append's points of one series sorted by (time, seq): a version byte, then per
 * point the zigzag varint deltas of time, seq and step from the previous point and the
 * value's 8 IEEE-754 bytes, little-endian (NaN and infinities kept); about 12 bytes a point.
 *
 * It does not touch SQLite: metrics.c stores blocks, metrics_read.c reads them. Pure functions
 * on the caller's buffers; thread-safe.
 */
#include <string.h>

#include "store/metrics_block.h"

static void put64(unsigned char *b, uint64_t v)
{
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    memcpy(b, &v, 8);
#else
    for (int i = 0; i < 8; i++)
        b[i] = (unsigned char)(v >> (8 * i));
#endif
}

static uint64_t get64(const unsigned char *b)
{
    uint64_t v = 0;
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    memcpy(&v, b, 8);
#else
    for (int i = 0; i < 8; i++)
        v |= (uint64_t)b[i] << (8 * i);
#endif
    return v;
}

static size_t put_varint(unsigned char *b, uint64_t v)
{
    size_t n = 0;
    while (v >= 0x80) {
        b[n++] = (unsigned char)(v | 0x80);
        v >>= 7;
    }
    b[n++] = (unsigned char)v;
    return n;
}

static bool get_varint(const unsigned char *b, size_t len, size_t *off, uint64_t *v)
{
    *v = 0;
    for (int shift = 0; *off < len && shift < 64; shift += 7) {
        unsigned char c = b[(*off)++];
        *v |= (uint64_t)(c & 0x7f) << shift;
        if (!(c & 0x80))
            return true;
    }
    return false;
}

static uint64_t zig(int64_t v)
{
    return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
}

static int64_t unzig(uint64_t v)
{
    return (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
}

size_t metrics_block_encode(unsigned char *b, const struct mpoint *p, const struct mpoint *prev)
{
    uint64_t bits;
    memcpy(&bits, &p->value, sizeof(bits));
    size_t n = put_varint(b, zig(p->time - prev->time));
    n += put_varint(b + n, zig(p->seq - prev->seq));
    n += put_varint(b + n, zig(p->step - prev->step));
    put64(b + n, bits);
    return n + 8;
}

bool metrics_block_decode(const unsigned char *b, size_t len, size_t *off, struct mpoint *p)
{
    uint64_t dt, ds, dstep;
    if (!get_varint(b, len, off, &dt) || !get_varint(b, len, off, &ds) ||
        !get_varint(b, len, off, &dstep) || *off + 8 > len)
        return false;
    uint64_t bits = get64(b + *off);
    *off += 8;
    p->time += unzig(dt);
    p->seq += unzig(ds);
    p->step += unzig(dstep);
    memcpy(&p->value, &bits, sizeof(bits));
    return true;
}

int metrics_by_time(const void *a, const void *b)
{
    const struct mpoint *x = a, *y = b;
    if (x->time != y->time)
        return x->time < y->time ? -1 : 1;
    return (x->seq > y->seq) - (x->seq < y->seq);
}
