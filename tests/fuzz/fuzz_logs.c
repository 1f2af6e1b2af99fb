/*
 * fuzz_logs: a rank's raw output as the local shim (and the Kubernetes log follower) sees it:
 * bytes through the line splitter in chunks, with time passing between them, each line written
 * as a log record and read back as the collector reads it; and the same bytes read directly as
 * a (corrupt) rank log file.
 * The first byte sets the longest line and the chunk sizes.
 * Properties: lines never hold '\n' and never exceed the longest line plus its truncation mark;
 * every record reads back as written; the record reader always makes progress and never
 * reads past what it was given.
 */
#include "core/linesplit.h"
#include "server/ingest/logrec.h"
#include "tests/fuzz/fuzz.h"

struct sink {
    size_t max_line;
    struct buf rec;
    size_t lines;
};

static void emit(void *ctx, const char *line, size_t len, int flags)
{
    struct sink *s = ctx;
    FUZZ_ASSERT(!memchr(line, '\n', len));
    FUZZ_ASSERT(len <= s->max_line + 64);
    struct logrec r = { .time = 1700000000000000000LL + (int64_t)s->lines,
                        .stream = (enum log_stream)(s->lines % 2),
                        .flags = flags,
                        .text = line,
                        .len = len };
    buf_reset(&s->rec);
    logrec_format(&s->rec, &r);
    struct logrec back;
    long used = logrec_parse(s->rec.data, s->rec.len, &back);
    FUZZ_ASSERT(used == (long)s->rec.len);
    FUZZ_ASSERT(back.time == r.time && back.stream == r.stream && back.len == len);
    FUZZ_ASSERT((back.flags & (LINE_PROGRESS | LINE_PARTIAL)) ==
                (flags & LINE_PROGRESS  ? LINE_PROGRESS
                 : flags & LINE_PARTIAL ? LINE_PARTIAL
                                        : 0));
    FUZZ_ASSERT(len == 0 || memcmp(back.text, line, len) == 0);
    s->lines++;
}

static void split(const uint8_t *data, size_t size, uint8_t conf)
{
    struct sink s = { .max_line = 16 + (size_t)(conf & 0x3f) * 8, .rec = BUF_INIT };
    struct linesplit ls;
    linesplit_init(&ls, s.max_line);
    int64_t now = 1700000000000000000LL;
    size_t off = 0, step = 1 + (conf >> 6) * 7;
    while (off < size) {
        size_t n = size - off < step ? size - off : step;
        linesplit_feed(&ls, (const char *)data + off, n, now, emit, &s);
        off += n;
        now +=
            (int64_t)(data[off - 1] % 4) * 700000000LL; /* sometimes past the 1 s and 2 s ticks */
        linesplit_tick(&ls, now, emit, &s);
        step = step * 3 % 61 + 1;
    }
    linesplit_finish(&ls, emit, &s);
    linesplit_release(&ls);
    buf_release(&s.rec);
}

/* The collector's loop over a chunk of a log file. */
static void records(const uint8_t *data, size_t size)
{
    char *copy = malloc(size ? size : 1);
    memcpy(copy, data, size);
    size_t off = 0;
    while (off < size) {
        struct logrec r;
        long used = logrec_parse(copy + off, size - off, &r);
        if (used == 0)
            break;
        size_t n = (size_t)(used > 0 ? used : -used);
        FUZZ_ASSERT(n <= size - off);
        if (used > 0)
            FUZZ_ASSERT(r.text >= copy + off && r.text + r.len < copy + off + n);
        off += n;
    }
    free(copy);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    split(data + 1, size - 1, data[0]);
    records(data + 1, size - 1);
    return 0;
}
