/*
 * store/logs: appending, sealing and retaining log blocks; see logs.h for the design. Appends
 * and retention run on the writer thread; reads run in one read transaction on the caller's
 * connection, so a read never sees half of a compaction.
 */
#include "store/logs.h"

#include "core/xalloc.h"
#include "store/internal.h"
#include "store/logblock.h"
#include "store/logcache.h"

enum {
    L_STATE_GET,
    L_STATE_SET,
    L_SRC_FIND,
    L_SRC_MAX,
    L_SRC_ADD,
    L_SRC_ALL,
    L_POS_SET,
    L_POS_GET,
    L_BLOCK_ADD,
    L_DATA_ADD,
    L_UNSEALED,
    L_BLOCK_DEL,
    L_COMPLETE,
    L_UNFINISHED,
    L_OVER,
    L_OLDEST,
    L_DROP,
};

static const char *const sql[] = {
    [L_STATE_GET] = "SELECT next_seq, first_seq, lines, bytes, dropped_lines, dropped_bytes,"
                    " unsealed_lines, complete FROM log_state WHERE job_pk = :pk",
    [L_STATE_SET] = "UPDATE log_state SET next_seq = :next, lines = lines + :lines,"
                    " bytes = bytes + :bytes, unsealed_lines = :unsealed WHERE job_pk = :pk",
    [L_SRC_FIND] = "SELECT src FROM log_sources WHERE job_pk = :pk AND key = :key",
    [L_SRC_MAX] = "SELECT coalesce(max(src) + 1, 0) FROM log_sources WHERE job_pk = :pk",
    [L_SRC_ADD] = "INSERT INTO log_sources (job_pk, src, key, rank, pod, pid, attempt)"
                  " VALUES (:pk, :src, :key, :rank, :pod, :pid, :attempt)"
                  " ON CONFLICT (job_pk, src) DO UPDATE SET pid = excluded.pid,"
                  " pod = excluded.pod",
    [L_SRC_ALL] = "SELECT src, rank, pod, pid FROM log_sources WHERE job_pk = :pk",
    [L_POS_SET] = "INSERT INTO log_positions (job_pk, source, position)"
                  " VALUES (:pk, :key, :position)"
                  " ON CONFLICT (job_pk, source) DO UPDATE SET position = excluded.position",
    [L_POS_GET] = "SELECT position FROM log_positions WHERE job_pk = :pk AND source = :key",
    [L_BLOCK_ADD] = "INSERT INTO log_blocks (job_pk, first_seq, last_seq, first_time, last_time,"
                    " nlines, nbytes, rank_mask, sealed, bloom) VALUES (:pk, :first_seq,"
                    " :last_seq, :first_time, :last_time, :nlines, :nbytes, :rank_mask, :sealed,"
                    " :bloom)",
    [L_DATA_ADD] = "INSERT INTO log_data (block_id, data) VALUES (:id, :data)",
    [L_UNSEALED] = "SELECT b.id, b.first_seq, b.first_time, d.data FROM log_blocks b"
                   " JOIN log_data d ON d.block_id = b.id"
                   " WHERE b.job_pk = :pk AND b.sealed = 0 ORDER BY b.first_seq",
    [L_BLOCK_DEL] = "DELETE FROM log_blocks WHERE id = :id",
    [L_COMPLETE] = "UPDATE log_state SET complete = 1 WHERE job_pk = :pk",
    [L_UNFINISHED] = "SELECT s.job_pk FROM log_state s JOIN jobs j ON j.pk = s.job_pk"
                     " WHERE s.complete = 0 AND j.state IN"
                     " ('succeeded', 'failed', 'cancelled', 'preempted')",
    [L_OVER] = "SELECT job_pk FROM log_state WHERE bytes > :max UNION"
               " SELECT DISTINCT job_pk FROM log_blocks WHERE sealed = 1 AND last_time < :min",
    [L_OLDEST] = "SELECT id, nlines, nbytes, last_seq, last_time FROM log_blocks"
                 " WHERE job_pk = :pk AND sealed = 1 ORDER BY first_seq LIMIT 256",
    [L_DROP] = "UPDATE log_state SET first_seq = :first, lines = lines - :lines,"
               " bytes = bytes - :bytes, dropped_lines = dropped_lines + :lines,"
               " dropped_bytes = dropped_bytes + :bytes WHERE job_pk = :pk",
};

#define STMT(c, i, err) stmt((c), MOD_LOGS, (i), sql[(i)], (err))

struct state {
    int64_t next_seq;
    int64_t unsealed;
};

static int state_get(struct conn *c, int64_t pk, struct log_stats *s, int64_t *unsealed,
                     struct err *err)
{
    sqlite3_stmt *q = STMT(c, L_STATE_GET, err);
    if (!q)
        return -1;
    bind_int(q, ":pk", pk);
    int rc = sqlite3_step(q);
    if (rc == SQLITE_ROW) {
        *s = (struct log_stats){ .next_seq = col_int(q, 0),
                                 .first_seq = col_int(q, 1),
                                 .lines = col_int(q, 2),
                                 .bytes = col_int(q, 3),
                                 .dropped_lines = col_int(q, 4),
                                 .dropped_bytes = col_int(q, 5),
                                 .complete = col_int(q, 7) != 0 };
        if (unsealed)
            *unsealed = col_int(q, 6);
    }
    sqlite3_reset(q);
    if (rc == SQLITE_DONE)
        return err_set(err, ERR_NOT_FOUND, "no such job");
    return rc == SQLITE_ROW ? 0 : sql_fail(c, err, "reading log state");
}

/* Writes one block (and its data row). */
static int put_block(struct conn *c, int64_t pk, struct logblock *b, bool seal, struct err *err)
{
    struct buf data = BUF_INIT, bloom = BUF_INIT;
    logblock_finish(b, seal, &data, &bloom);
    sqlite3_stmt *s = STMT(c, L_BLOCK_ADD, err);
    int rc = -1;
    if (!s)
        goto out;
    bind_int(s, ":pk", pk);
    bind_int(s, ":first_seq", b->first_seq);
    bind_int(s, ":last_seq", b->first_seq + b->nlines - 1);
    bind_int(s, ":first_time", b->first_time);
    bind_int(s, ":last_time", b->last_time);
    bind_int(s, ":nlines", b->nlines);
    bind_int(s, ":nbytes", b->nbytes);
    bind_int(s, ":rank_mask", (int64_t)b->rank_mask);
    bind_int(s, ":sealed", seal);
    if (seal)
        bind_blob(s, ":bloom", bloom.data, bloom.len);
    else
        bind_null(s, ":bloom");
    if (sql_exec_stmt(c, s, err, "storing a log block") < 0)
        goto out;
    sqlite3_stmt *d = STMT(c, L_DATA_ADD, err);
    if (!d)
        goto out;
    bind_int(d, ":id", sqlite3_last_insert_rowid(c->db));
    bind_blob(d, ":data", data.data, data.len);
    rc = sql_exec_stmt(c, d, err, "storing log data");
out:
    buf_release(&data);
    buf_release(&bloom);
    return rc;
}

/* Cuts lines into blocks; the last block stays unsealed unless it is full (or seal_all). Returns
 * the unsealed line count, or -1. */
static int64_t write_blocks(struct conn *c, int64_t pk, struct log_line *lines, size_t n,
                            bool seal_all, struct err *err)
{
    size_t i = 0;
    while (i < n) {
        struct logblock b;
        logblock_init(&b, lines[i].seq);
        while (i < n && b.nlines < LOG_SEAL_LINES && b.nbytes < LOG_SEAL_BYTES) {
            logblock_add(&b, &lines[i], lines[i].rank);
            i++;
        }
        bool full = b.nlines >= LOG_SEAL_LINES || b.nbytes >= LOG_SEAL_BYTES;
        bool seal = full || seal_all || i < n;
        int64_t unsealed = seal ? 0 : b.nlines;
        int rc = put_block(c, pk, &b, seal, err);
        logblock_release(&b);
        if (rc < 0)
            return -1;
        if (i == n)
            return unsealed;
    }
    return 0;
}

/* Lines decoded from unsealed blocks, with their text copied (offsets until fixed up). */
struct lineset {
    struct log_line *lines;
    size_t n, cap;
    struct buf text;
    int *rank_of_src;
    size_t nsrc;
};

static int keep_line(void *ctx, struct log_line *l)
{
    struct lineset *ls = ctx;
    XGROW(ls->lines, ls->n, ls->cap);
    struct log_line copy = *l;
    copy.text = (const char *)(uintptr_t)ls->text.len;
    copy.rank = l->src >= 0 && (size_t)l->src < ls->nsrc ? ls->rank_of_src[l->src] : 0;
    buf_append(&ls->text, l->text, l->len);
    ls->lines[ls->n++] = copy;
    return 0;
}

static int rank_row(void *ctx, sqlite3_stmt *s, struct err *err)
{
    (void)err;
    struct lineset *ls = ctx;
    size_t src = (size_t)col_int(s, 0);
    if (src >= ls->nsrc) {
        ls->rank_of_src = xrealloc(ls->rank_of_src, (src + 1) * sizeof(int));
        for (size_t k = ls->nsrc; k <= src; k++)
            ls->rank_of_src[k] = 0;
        ls->nsrc = src + 1;
    }
    ls->rank_of_src[src] = (int)col_int(s, 1);
    return 0;
}

static int load_ranks(struct conn *c, int64_t pk, struct lineset *ls, struct err *err)
{
    sqlite3_stmt *s = STMT(c, L_SRC_ALL, err);
    if (s)
        bind_int(s, ":pk", pk);
    return sql_rows(c, s, "reading log sources", rank_row, ls, err);
}

struct unsealed {
    struct lineset *ls;
    int64_t ids[LOG_SEAL_LINES];
    size_t nids;
    struct buf scratch;
};

/* An unsealed block's lines into the set; stops when the ids are full. */
static int unsealed_row(void *ctx, sqlite3_stmt *s, struct err *err)
{
    struct unsealed *u = ctx;
    u->ids[u->nids++] = col_int(s, 0);
    if (logblock_decode(sqlite3_column_blob(s, 3), (size_t)sqlite3_column_bytes(s, 3),
                        col_int(s, 1), col_int(s, 2), &u->scratch, keep_line, u->ls, err) < 0)
        return -1;
    return u->nids == LOG_SEAL_LINES;
}

/* Reads and deletes the job's unsealed blocks into ls. */
static int take_unsealed(struct conn *c, int64_t pk, struct lineset *ls, struct err *err)
{
    if (load_ranks(c, pk, ls, err) < 0)
        return -1;
    sqlite3_stmt *s = STMT(c, L_UNSEALED, err);
    if (s)
        bind_int(s, ":pk", pk);
    struct unsealed u = { .ls = ls, .scratch = BUF_INIT };
    int rc = sql_rows(c, s, "reading unsealed log blocks", unsealed_row, &u, err);
    buf_release(&u.scratch);
    if (rc < 0)
        return -1;
    const int64_t *ids = u.ids;
    size_t nids = u.nids;
    for (size_t i = 0; i < nids; i++) {
        sqlite3_stmt *d = STMT(c, L_BLOCK_DEL, err);
        if (!d)
            return -1;
        bind_int(d, ":id", ids[i]);
        if (sql_exec_stmt(c, d, err, "sealing log blocks") < 0)
            return -1;
    }
    return 0;
}

static int add_sources(struct conn *c, const struct log_append *a, struct err *err)
{
    for (size_t i = 0; i < a->nsources; i++) {
        const struct log_source_new *src = &a->sources[i];
        sqlite3_stmt *s = STMT(c, L_SRC_ADD, err);
        if (!s)
            return -1;
        bind_int(s, ":pk", a->job_pk);
        bind_int(s, ":src", src->src);
        bind_text(s, ":key", src->key);
        bind_int(s, ":rank", src->rank);
        bind_text(s, ":pod", src->pod ? src->pod : "");
        bind_int(s, ":pid", src->pid);
        bind_int(s, ":attempt", src->attempt);
        if (sql_exec_stmt(c, s, err, "recording a log source") < 0)
            return -1;
    }
    for (size_t i = 0; i < a->npositions; i++) {
        sqlite3_stmt *s = STMT(c, L_POS_SET, err);
        if (!s)
            return -1;
        bind_int(s, ":pk", a->job_pk);
        bind_text(s, ":key", a->positions[i].key);
        bind_text(s, ":position", a->positions[i].position);
        if (sql_exec_stmt(c, s, err, "recording a log position") < 0)
            return -1;
    }
    return 0;
}

/* Writes new lines: as one more unsealed block, or sealed together with the unsealed ones. */
static int64_t store_lines(struct conn *c, struct log_append *a, int64_t unsealed, struct err *err)
{
    if (unsealed + (int64_t)a->n < LOG_SEAL_LINES)
        return write_blocks(c, a->job_pk, a->lines, a->n, false, err) < 0
                   ? -1
                   : unsealed + (int64_t)a->n;
    struct lineset ls = { 0 };
    int64_t rc = take_unsealed(c, a->job_pk, &ls, err);
    if (rc == 0) {
        for (size_t i = 0; i < ls.n; i++)
            ls.lines[i].text = buf_cstr(&ls.text) + (uintptr_t)ls.lines[i].text;
        size_t total = ls.n + a->n;
        struct log_line *all = xmalloc(total * sizeof(*all));
        if (ls.n)
            memcpy(all, ls.lines, ls.n * sizeof(*all));
        memcpy(all + ls.n, a->lines, a->n * sizeof(*all));
        rc = write_blocks(c, a->job_pk, all, total, false, err);
        free(all);
    }
    free(ls.lines);
    free(ls.rank_of_src);
    buf_release(&ls.text);
    return rc;
}

static int append_job(struct conn *c, struct log_append *a, struct err *err)
{
    struct log_stats st;
    int64_t unsealed;
    a->first_seq = a->last_seq = 0;
    if (state_get(c, a->job_pk, &st, &unsealed, err) < 0 || add_sources(c, a, err) < 0)
        return -1;
    if (a->n == 0)
        return 0;
    int64_t bytes = 0;
    for (size_t i = 0; i < a->n; i++) {
        a->lines[i].seq = st.next_seq + (int64_t)i;
        bytes += (int64_t)a->lines[i].len;
    }
    int64_t now_unsealed = store_lines(c, a, unsealed, err);
    if (now_unsealed < 0)
        return -1;
    a->first_seq = st.next_seq;
    a->last_seq = st.next_seq + (int64_t)a->n - 1;
    sqlite3_stmt *s = STMT(c, L_STATE_SET, err);
    if (!s)
        return -1;
    bind_int(s, ":pk", a->job_pk);
    bind_int(s, ":next", a->last_seq + 1);
    bind_int(s, ":lines", (int64_t)a->n);
    bind_int(s, ":bytes", bytes);
    bind_int(s, ":unsealed", now_unsealed);
    return sql_exec_stmt(c, s, err, "updating log state");
}

struct append_op {
    struct log_append *jobs;
    size_t n;
};

static int apply_append(struct conn *c, void *arg, struct err *err)
{
    struct append_op *op = arg;
    for (size_t i = 0; i < op->n; i++) {
        /* A job deleted meanwhile has no state row: its lines are dropped, not an error. */
        struct err one;
        err_init(&one);
        int rc = append_job(c, &op->jobs[i], &one);
        if (rc < 0 && one.code != ERR_NOT_FOUND) {
            err_move(err, &one);
            return -1;
        }
        err_release(&one);
    }
    return 0;
}

int store_logs_append(struct store *st, struct log_append *jobs, size_t n, struct err *err)
{
    struct append_op op = { jobs, n };
    if (store_write_wait(st, apply_append, &op, err) < 0)
        return -1;
    for (size_t i = 0; i < n; i++) /* committed: followers may read them from memory now */
        logcache_put(store_logcache(st), jobs[i].job_pk, jobs[i].lines, jobs[i].n, jobs[i].sources,
                     jobs[i].nsources);
    return 0;
}

int store_log_source_find(struct store *st, int64_t job_pk, const char *key, int *src,
                          int *next_src, struct err *err)
{
    struct conn *c = store_reader(st, err);
    sqlite3_stmt *s = c ? STMT(c, L_SRC_FIND, err) : NULL;
    if (!s)
        return -1;
    bind_int(s, ":pk", job_pk);
    bind_text(s, ":key", key);
    *src = sqlite3_step(s) == SQLITE_ROW ? (int)col_int(s, 0) : -1;
    sqlite3_reset(s);
    s = STMT(c, L_SRC_MAX, err);
    if (!s)
        return -1;
    bind_int(s, ":pk", job_pk);
    *next_src = sqlite3_step(s) == SQLITE_ROW ? (int)col_int(s, 0) : 0;
    sqlite3_reset(s);
    return 0;
}

char *store_log_position(struct store *st, int64_t job_pk, const char *key, struct err *err)
{
    struct conn *c = store_reader(st, err);
    sqlite3_stmt *s = c ? STMT(c, L_POS_GET, err) : NULL;
    if (!s)
        return NULL;
    bind_int(s, ":pk", job_pk);
    bind_text(s, ":key", key);
    char *pos = sqlite3_step(s) == SQLITE_ROW ? xstrdup(col_text(s, 0)) : NULL;
    sqlite3_reset(s);
    return pos;
}

int store_log_stats(struct store *st, int64_t job_pk, struct log_stats *out, struct err *err)
{
    struct conn *c = store_reader(st, err);
    return c ? state_get(c, job_pk, out, NULL, err) : -1;
}

static int apply_complete(struct conn *c, void *arg, struct err *err)
{
    sqlite3_stmt *s = STMT(c, L_COMPLETE, err);
    if (!s)
        return -1;
    bind_int(s, ":pk", *(int64_t *)arg);
    return sql_exec_stmt(c, s, err, "completing a log");
}

int store_log_complete(struct store *st, int64_t job_pk, struct err *err)
{
    return store_write_wait(st, apply_complete, &job_pk, err);
}

static int collect_pks(struct conn *c, sqlite3_stmt *s, int64_t **pks, size_t *n, struct err *err)
{
    return sql_array(c, s, "listing logs", sizeof(**pks), sql_fill_int, NULL, pks, n, err);
}

int store_logs_unfinished(struct store *st, int64_t **pks, size_t *n, struct err *err)
{
    struct conn *c = store_reader(st, err);
    sqlite3_stmt *s = c ? STMT(c, L_UNFINISHED, err) : NULL;
    return collect_pks(c, s, pks, n, err);
}

int store_logs_over_limits(struct store *st, int64_t max_bytes, int64_t min_time, int64_t **pks,
                           size_t *n, struct err *err)
{
    struct conn *c = store_reader(st, err);
    sqlite3_stmt *s = c ? STMT(c, L_OVER, err) : NULL;
    if (s) {
        bind_int(s, ":max", max_bytes);
        bind_int(s, ":min", min_time);
    }
    return collect_pks(c, s, pks, n, err);
}

struct retain_op {
    int64_t pk, max_bytes, min_time;
};

/* The oldest blocks of a job to drop, up to 256 a pass: while the job is over its bytes or a
 * block is older than the limit. */
struct oldest {
    const struct retain_op *op;
    int64_t stored; /* the job's bytes before the pass */
    int64_t ids[256], lines, bytes, first;
    size_t nids;
};

static int oldest_row(void *ctx, sqlite3_stmt *s, struct err *err)
{
    (void)err;
    struct oldest *d = ctx;
    bool too_big = d->stored - d->bytes > d->op->max_bytes;
    bool too_old = col_int(s, 4) < d->op->min_time;
    if (!too_big && !too_old)
        return 1;
    d->ids[d->nids++] = col_int(s, 0);
    d->lines += col_int(s, 1);
    d->bytes += col_int(s, 2);
    d->first = col_int(s, 3) + 1;
    return d->nids == sizeof(d->ids) / sizeof(d->ids[0]);
}

static int apply_retain(struct conn *c, void *arg, struct err *err)
{
    struct retain_op *op = arg;
    struct log_stats st;
    if (state_get(c, op->pk, &st, NULL, err) < 0)
        return -1;
    sqlite3_stmt *s = STMT(c, L_OLDEST, err);
    if (s)
        bind_int(s, ":pk", op->pk);
    struct oldest d = { .op = op, .stored = st.bytes, .first = st.first_seq };
    if (sql_rows(c, s, "reading old log blocks", oldest_row, &d, err) < 0)
        return -1;
    for (size_t i = 0; i < d.nids; i++) {
        sqlite3_stmt *del = STMT(c, L_BLOCK_DEL, err);
        if (!del)
            return -1;
        bind_int(del, ":id", d.ids[i]);
        if (sql_exec_stmt(c, del, err, "dropping old log lines") < 0)
            return -1;
    }
    if (!d.nids)
        return 0;
    s = STMT(c, L_DROP, err);
    if (!s)
        return -1;
    bind_int(s, ":pk", op->pk);
    bind_int(s, ":first", d.first);
    bind_int(s, ":lines", d.lines);
    bind_int(s, ":bytes", d.bytes);
    return sql_exec_stmt(c, s, err, "recording dropped log lines");
}

int store_logs_retain(struct store *st, int64_t job_pk, int64_t max_bytes, int64_t min_time,
                      struct err *err)
{
    struct retain_op op = { job_pk, max_bytes, min_time };
    logcache_drop(store_logcache(st), job_pk);
    return store_write_wait(st, apply_retain, &op, err);
}
