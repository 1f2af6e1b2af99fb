/* linesplit: see linesplit.h. */
#include "core/linesplit.h"

#include "core/clock.h"

void linesplit_init(struct linesplit *ls, size_t max_line)
{
    memset(ls, 0, sizeof(*ls));
    ls->max_line = max_line ? max_line : 65536;
    ls->progress_ns = NS_PER_SEC;
    ls->partial_ns = 2 * NS_PER_SEC;
}

void linesplit_release(struct linesplit *ls)
{
    buf_release(&ls->cur);
    buf_release(&ls->snapshot);
}

static void emit_cur(struct linesplit *ls, linesplit_emit emit, void *ctx, int flags)
{
    if (ls->dropped) {
        char mark[64];
        int n = snprintf(mark, sizeof(mark), "...[trainyard: %zu bytes truncated]", ls->dropped);
        buf_append(&ls->cur, mark, (size_t)n);
    }
    emit(ctx, buf_cstr(&ls->cur), ls->cur.len, flags);
    buf_reset(&ls->cur);
    ls->dropped = 0;
}

/* The bytes before a "\r" that is not part of "\r\n" were a redraw. */
static void take_redraw(struct linesplit *ls)
{
    ls->cr = false;
    if (ls->cur.len == 0)
        return;
    buf_reset(&ls->snapshot);
    buf_append(&ls->snapshot, ls->cur.data, ls->cur.len);
    ls->snapshot_dirty = true;
    buf_reset(&ls->cur);
    ls->dropped = 0;
}

static void append(struct linesplit *ls, const char *p, size_t n, int64_t now)
{
    if (ls->cur.len == 0 && n)
        ls->cur_since = now;
    size_t room = ls->cur.len < ls->max_line ? ls->max_line - ls->cur.len : 0;
    size_t take = n < room ? n : room;
    buf_append(&ls->cur, p, take);
    ls->dropped += n - take;
}

void linesplit_feed(struct linesplit *ls, const char *data, size_t len, int64_t now,
                    linesplit_emit emit, void *ctx)
{
    const char *p = data, *end = data + len;
    while (p < end) {
        if (ls->cr && *p != '\n')
            take_redraw(ls);
        const char *stop = p;
        while (stop < end && *stop != '\n' && *stop != '\r')
            stop++;
        append(ls, p, (size_t)(stop - p), now);
        if (stop == end)
            break;
        if (*stop == '\r') {
            ls->cr = true;
        } else {
            ls->cr = false;
            emit_cur(ls, emit, ctx, 0);
            ls->snapshot_dirty = false; /* the finished line supersedes its redraws */
        }
        p = stop + 1;
    }
}

void linesplit_tick(struct linesplit *ls, int64_t now, linesplit_emit emit, void *ctx)
{
    if (ls->snapshot_dirty && now - ls->snapshot_at >= ls->progress_ns) {
        emit(ctx, buf_cstr(&ls->snapshot), ls->snapshot.len, LINE_PROGRESS);
        ls->snapshot_dirty = false;
        ls->snapshot_at = now;
    }
    if (ls->cur.len && !ls->cr && now - ls->cur_since >= ls->partial_ns)
        emit_cur(ls, emit, ctx, LINE_PARTIAL);
}

void linesplit_finish(struct linesplit *ls, linesplit_emit emit, void *ctx)
{
    if (ls->cr)
        take_redraw(ls);
    if (ls->cur.len)
        emit_cur(ls, emit, ctx, 0);
    else if (ls->snapshot_dirty)
        emit(ctx, buf_cstr(&ls->snapshot), ls->snapshot.len, 0);
    ls->snapshot_dirty = false;
}
