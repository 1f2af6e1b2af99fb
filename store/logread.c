/*
 * store/logread: reading a job's lines with filters, forward from a sequence number or
 * backward for the last N. Blocks are skipped without being read when their rank set, time
 * range or Bloom filter rules them out (an attempt is a filter on lines: each line's source
 * says its attempt, blocks do not). Runs in one read transaction on the caller's connection,
 * unless the newest lines asked for are all in the log cache (logcache.h).
 */
#include "core/xalloc.h"
#include "store/internal.h"
#include "store/logblock.h"
#include "store/logcache.h"
#include "store/logs.h"

enum {
    R_FORWARD,
    R_BACKWARD,
    R_DATA,
    R_SOURCES,
};

static const char *const sql[] = {
    [R_FORWARD] = "SELECT id, first_seq, last_seq, first_time, last_time, rank_mask, bloom"
                  " FROM log_blocks WHERE job_pk = :pk AND first_seq > :from"
                  " AND last_seq > :after AND first_seq < :before ORDER BY first_seq",
    [R_BACKWARD] = "SELECT id, first_seq, last_seq, first_time, last_time, rank_mask, bloom"
                   " FROM log_blocks WHERE job_pk = :pk AND first_seq < :before"
                   " AND last_seq > :after ORDER BY first_seq DESC",
    [R_DATA] = "SELECT data FROM log_data WHERE block_id = :id",
    [R_SOURCES] = "SELECT src, rank, pod, pid, attempt FROM log_sources WHERE job_pk = :pk",
};

#define STMT(c, i, err) stmt((c), MOD_LOG_READS, (i), sql[(i)], (err))

struct source {
    int rank, pid, attempt;
    char *pod;
};

struct reader {
    struct conn *c;
    int64_t pk;
    const struct log_query *q;
    struct source *sources;
    size_t nsources;
    uint64_t rank_fold; /* the wanted ranks folded onto 64 bits, as blocks store them */
    struct log_read_stats *stats;
    struct buf scratch;
    struct logmatch_hits hits; /* where the block read last holds the query's longest term */
    log_line_fn fn;
    void *ctx;
    int emitted;
    /* backward reads keep the last q->tail matches (copied) */
    struct log_line *ring;
    struct buf *ring_text;
    size_t ring_n, ring_head;
};

static int source_row(void *ctx, sqlite3_stmt *s, struct err *err)
{
    (void)err;
    struct reader *r = ctx;
    size_t src = (size_t)col_int(s, 0);
    if (src >= r->nsources) {
        r->sources = xrealloc(r->sources, (src + 1) * sizeof(*r->sources));
        memset(r->sources + r->nsources, 0, (src + 1 - r->nsources) * sizeof(*r->sources));
        r->nsources = src + 1;
    }
    r->sources[src].rank = (int)col_int(s, 1);
    r->sources[src].pod = col_text(s, 2)[0] ? xstrdup(col_text(s, 2)) : NULL;
    r->sources[src].pid = (int)col_int(s, 3);
    r->sources[src].attempt = (int)col_int(s, 4);
    return 0;
}

static int load_sources(struct reader *r, struct err *err)
{
    sqlite3_stmt *s = STMT(r->c, R_SOURCES, err);
    if (s)
        bind_int(s, ":pk", r->pk);
    return sql_rows(r->c, s, "reading log sources", source_row, r, err);
}

static bool rank_wanted(const struct log_query *q, int rank)
{
    if (!q->ranks)
        return true;
    size_t w = (size_t)rank / 64;
    return w < q->nranks_words && (q->ranks[w] >> (rank % 64)) & 1;
}

static bool line_wanted(const struct log_query *q, const struct log_line *l)
{
    if (l->seq <= q->after || (q->before && l->seq >= q->before))
        return false;
    if (q->stream >= 0 && (l->flags & LOGF_STDERR) != q->stream)
        return false;
    if ((q->since && l->time < q->since) || (q->until && l->time >= q->until))
        return false;
    if (!rank_wanted(q, l->rank) || (q->by_attempt && l->attempt != q->attempt))
        return false;
    return !q->match || logmatch_line(q->match, l->text, l->len);
}

static bool block_wanted(const struct reader *r, sqlite3_stmt *s)
{
    const struct log_query *q = r->q;
    if (q->ranks && !((uint64_t)col_int(s, 5) & r->rank_fold))
        return false;
    if ((q->since && col_int(s, 4) < q->since) || (q->until && col_int(s, 3) >= q->until))
        return false;
    if (q->match && sqlite3_column_type(s, 6) == SQLITE_BLOB &&
        !logmatch_block(q->match, sqlite3_column_blob(s, 6), (size_t)sqlite3_column_bytes(s, 6)))
        return false;
    return true;
}

static int forward_line(void *ctx, struct log_line *l)
{
    struct reader *r = ctx;
    r->stats->lines_scanned++;
    if (l->seq > r->stats->max_seq && (!r->q->before || l->seq < r->q->before))
        r->stats->max_seq = l->seq;
    if (l->src >= 0 && (size_t)l->src < r->nsources) {
        l->rank = r->sources[l->src].rank;
        l->pid = r->sources[l->src].pid;
        l->pod = r->sources[l->src].pod;
        l->attempt = r->sources[l->src].attempt;
    }
    if (r->q->before && l->seq >= r->q->before)
        return 1;
    if (r->q->match && !logmatch_hits_line(&r->hits, l->text, l->len))
        return 0;
    if (!line_wanted(r->q, l))
        return 0;
    if (r->ring) {
        /* Backward read: keep a copy in the ring of the last matches seen in this block. */
        struct log_line *slot = &r->ring[r->ring_head];
        buf_reset(&r->ring_text[r->ring_head]);
        buf_append(&r->ring_text[r->ring_head], l->text, l->len);
        *slot = *l;
        slot->text = r->ring_text[r->ring_head].data;
        r->ring_head = (r->ring_head + 1) % (size_t)r->q->tail;
        if (r->ring_n < (size_t)r->q->tail)
            r->ring_n++;
        return 0;
    }
    r->emitted++;
    if (r->fn(r->ctx, l))
        return 1;
    return r->q->limit && r->emitted >= r->q->limit;
}

static int read_block(struct reader *r, int64_t id, int64_t first_seq, int64_t first_time,
                      struct err *err)
{
    sqlite3_stmt *d = STMT(r->c, R_DATA, err);
    if (!d)
        return -1;
    bind_int(d, ":id", id);
    int rc = 0;
    if (sqlite3_step(d) == SQLITE_ROW) {
        r->stats->blocks_read++;
        size_t len;
        const char *p = logblock_payload(
            sqlite3_column_blob(d, 0), (size_t)sqlite3_column_bytes(d, 0), &len, &r->scratch, err);
        if (p && r->q->match)
            logmatch_hits_find(r->q->match, p, len, &r->hits);
        rc = p ? logblock_lines(p, len, first_seq, first_time, forward_line, r, err) : -1;
    }
    sqlite3_reset(d);
    return rc;
}

/* A block of the forward scan: read unless ruled out; stops at the query's limit. */
static int forward_block(void *ctx, sqlite3_stmt *s, struct err *err)
{
    struct reader *r = ctx;
    if (!block_wanted(r, s)) {
        r->stats->blocks_skipped++;
        return 0;
    }
    int rc = read_block(r, col_int(s, 0), col_int(s, 1), col_int(s, 3), err);
    return rc < 0 ? -1 : rc > 0;
}

static int scan_forward(struct reader *r, struct err *err)
{
    sqlite3_stmt *s = STMT(r->c, R_FORWARD, err);
    if (s) {
        bind_int(s, ":pk", r->pk);
        bind_int(s, ":from", r->q->after - LOG_SEAL_LINES);
        bind_int(s, ":after", r->q->after);
        bind_int(s, ":before", r->q->before ? r->q->before : INT64_MAX);
    }
    return sql_rows(r->c, s, "reading log blocks", forward_block, r, err);
}

/* One block's last matches, oldest first, copied out of the ring. */
struct chunk {
    struct log_line *lines;
    struct buf text;
    size_t n;
};

static void take_ring(struct reader *r, struct chunk *ch)
{
    ch->lines = xmalloc((r->ring_n ? r->ring_n : 1) * sizeof(*ch->lines));
    buf_init(&ch->text);
    size_t tail = (size_t)r->q->tail;
    size_t start = (r->ring_head + tail - r->ring_n) % tail;
    for (size_t i = 0; i < r->ring_n; i++) {
        size_t k = (start + i) % tail;
        ch->lines[i] = r->ring[k];
        ch->lines[i].text = (const char *)(uintptr_t)ch->text.len;
        buf_append(&ch->text, r->ring[k].text, r->ring[k].len);
    }
    for (size_t i = 0; i < r->ring_n; i++)
        ch->lines[i].text = buf_cstr(&ch->text) + (uintptr_t)ch->lines[i].text;
    ch->n = r->ring_n;
    r->ring_n = 0;
    r->ring_head = 0;
}

/* Emits the last q->tail matches in seq order from chunks collected newest block first. */
static void emit_chunks(struct reader *r, struct chunk *chunks, size_t nchunks, size_t total)
{
    size_t skip = total > (size_t)r->q->tail ? total - (size_t)r->q->tail : 0;
    bool stop = false;
    for (size_t c = nchunks; c-- > 0 && !stop;) {
        for (size_t i = 0; i < chunks[c].n && !stop; i++) {
            if (skip) {
                skip--;
                continue;
            }
            stop = r->fn(r->ctx, &chunks[c].lines[i]) != 0;
        }
    }
}

struct backward {
    struct reader *r;
    struct chunk *chunks; /* newest block first */
    size_t nchunks, total;
};

/* A block of the backward scan, newest first: its matches go to a chunk of their own; stops
 * once the chunks hold q->tail matches. */
static int backward_block(void *ctx, sqlite3_stmt *s, struct err *err)
{
    struct backward *b = ctx;
    struct reader *r = b->r;
    if (!block_wanted(r, s)) {
        r->stats->blocks_skipped++;
        return 0;
    }
    /* > 0: the block reached `before`, and older blocks still count */
    if (read_block(r, col_int(s, 0), col_int(s, 1), col_int(s, 3), err) < 0)
        return -1;
    b->chunks = xrealloc(b->chunks, (b->nchunks + 1) * sizeof(*b->chunks));
    take_ring(r, &b->chunks[b->nchunks]);
    b->total += b->chunks[b->nchunks++].n;
    return b->total >= (size_t)r->q->tail;
}

static int scan_backward(struct reader *r, struct err *err)
{
    sqlite3_stmt *s = STMT(r->c, R_BACKWARD, err);
    if (!s)
        return -1;
    bind_int(s, ":pk", r->pk);
    bind_int(s, ":before", r->q->before ? r->q->before : INT64_MAX);
    bind_int(s, ":after", r->q->after);
    size_t tail = (size_t)r->q->tail;
    r->ring = xcalloc(tail, sizeof(*r->ring));
    r->ring_text = xcalloc(tail, sizeof(*r->ring_text));
    struct backward b = { .r = r };
    int rc = sql_rows(r->c, s, "reading log blocks", backward_block, &b, err);
    if (rc == 0)
        emit_chunks(r, b.chunks, b.nchunks, b.total);
    for (size_t i = 0; i < b.nchunks; i++) {
        free(b.chunks[i].lines);
        buf_release(&b.chunks[i].text);
    }
    free(b.chunks);
    for (size_t i = 0; i < tail; i++)
        buf_release(&r->ring_text[i]);
    free(r->ring_text);
    free(r->ring);
    return rc;
}

int store_logs_read(struct store *st, int64_t job_pk, const struct log_query *q, log_line_fn fn,
                    void *ctx, struct log_read_stats *stats, struct err *err)
{
    struct log_read_stats ignored = { 0 };
    struct reader r = {
        .pk = job_pk, .q = q, .fn = fn, .ctx = ctx, .stats = stats ? stats : &ignored
    };
    /* The usual read, a follower's "lines after N" with N recent, comes from the committed
     * lines kept in memory without a transaction or a block read; what the cache does not hold
     * in full (older lines, a source from before a restart, tails, `before`) comes from SQLite.
     * With 100 followers this took the write-to-follower p99 from 30 to 26 ms (PERFORMANCE.md). */
    if (q->tail == 0 && logcache_read(store_logcache(st), job_pk, q, line_wanted, fn, ctx, r.stats))
        return 0;
    r.c = store_reader(st, err);
    if (!r.c)
        return -1;
    for (size_t w = 0; q->ranks && w < q->nranks_words; w++)
        r.rank_fold |= q->ranks[w];
    if (store_snapshot_begin(st, err) < 0) /* sources and blocks as of one moment */
        return -1;
    int rc = load_sources(&r, err);
    if (rc == 0)
        rc = q->tail > 0 ? scan_backward(&r, err) : scan_forward(&r, err);
    store_snapshot_end(st);
    for (size_t i = 0; i < r.nsources; i++)
        free(r.sources[i].pod);
    free(r.sources);
    buf_release(&r.scratch);
    logmatch_hits_release(&r.hits);
    return rc;
}
