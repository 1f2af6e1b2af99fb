/*
 * store/logcache through store_logs_read: a forward read of a job's newest lines (what every
 * log follower asks for, many times a second) is answered from memory without reading a
 * block, and the answer is the one SQLite gives: the same lines, sources (rank, pid, pod,
 * attempt), filters (an attempt's lines among them), limit and resume point. The store's answer
 * comes from a second store opened on the same file, whose cache is empty. Reads reaching back past
 * what the cache holds, tails, and reads after retention go to SQLite.
 */
#include "tests/unit/check.h"

#include <stdlib.h>
#include <unistd.h>

#include "core/buf.h"
#include "core/clock.h"
#include "store/jobs.h"
#include "store/logs.h"

#define TOTAL 5000 /* more than the cache keeps of one job (4,096 lines) */
#define BATCH 100

static char dir[64];

static struct store *open_store(void)
{
    char path[128];
    snprintf(path, sizeof(path), "%s/t.db", dir);
    struct store_options o = { .busy_timeout_ms = 1000, .max_batch = 64 };
    return store_open(path, &o, NULL);
}

static int64_t create_job(struct store *st)
{
    struct job_new jn = { .id = "cachejob0001",
                          .name = "cache",
                          .executor = "local",
                          .spec = "{}",
                          .nranks = 3,
                          .owner = "test",
                          .now = clock_now_ns() };
    struct job_inserted out;
    CHECK_INT(store_job_insert(st, &jn, &out, NULL), 0);
    return out.pk;
}

/* Lines of ranks 0 and 1 from the start, rank 2 (a later attempt, on a pod) from line 3000;
 * every third line on stderr; every seventh mentions "nccl timeout". */
static void ingest(struct store *st, int64_t pk)
{
    static const struct log_source_new first[] = {
        { .src = 0, .key = "r0", .rank = 0, .attempt = 1, .pid = 100 },
        { .src = 1, .key = "r1", .rank = 1, .attempt = 1, .pid = 101, .pod = "job-worker-0" },
    };
    static const struct log_source_new later[] = {
        { .src = 2, .key = "r2", .rank = 2, .attempt = 2, .pid = 102, .pod = "job-worker-1" },
    };
    struct log_line lines[BATCH];
    char text[BATCH][64];
    int64_t t0 = clock_now_ns();
    for (int done = 0; done < TOTAL; done += BATCH) {
        for (int i = 0; i < BATCH; i++) {
            int k = done + i, src = done >= 3000 ? k % 3 : k % 2;
            int len = snprintf(text[i], sizeof(text[i]), "step %d%s", k,
                               k % 7 ? " loss 1.5" : " nccl timeout");
            lines[i] = (struct log_line){ .time = t0 + k * 1000,
                                          .src = src,
                                          .rank = src, /* as the collector fills it in */
                                          .flags = k % 3 ? 0 : LOGF_STDERR,
                                          .text = text[i],
                                          .len = (size_t)len };
        }
        struct log_append a = { .job_pk = pk, .lines = lines, .n = BATCH };
        if (done == 0)
            a.sources = first, a.nsources = 2;
        if (done == 3000)
            a.sources = later, a.nsources = 1;
        CHECK_INT(store_logs_append(st, &a, 1, NULL), 0);
    }
}

static int print_line(void *ctx, const struct log_line *l)
{
    buf_printf(ctx, "%lld %lld %d %d %d %s %d %d %.*s\n", (long long)l->seq, (long long)l->time,
               l->src, l->rank, l->pid, l->pod ? l->pod : "-", l->attempt, l->flags, (int)l->len,
               l->text);
    return 0;
}

/* What a follower sees: the lines, and where it resumes (api/logs.c: the highest seq seen,
 * matching or not). */
static int64_t read_all(struct store *st, int64_t pk, const struct log_query *q, struct buf *out,
                        struct log_read_stats *stats)
{
    buf_reset(out);
    *stats = (struct log_read_stats){ 0 };
    CHECK_INT(store_logs_read(st, pk, q, print_line, out, stats, NULL), 0);
    return stats->max_seq > q->after ? stats->max_seq : q->after;
}

enum source { FROM_CACHE, FROM_SQLITE, EITHER };

/* The cached store's answer equals SQLite's; FROM_CACHE: without reading a block. */
static void compare(struct store *cached, struct store *plain, int64_t pk, const char *what,
                    const struct log_query *q, enum source from)
{
    struct buf a, b;
    buf_init(&a);
    buf_init(&b);
    struct log_read_stats sa, sb;
    int64_t ra = read_all(cached, pk, q, &a, &sa), rb = read_all(plain, pk, q, &b, &sb);
    if (strcmp(buf_cstr(&a), buf_cstr(&b)) != 0)
        printf("%s: the cache answered\n%.600s\nSQLite answered\n%.600s\n", what, buf_cstr(&a),
               buf_cstr(&b));
    CHECK_STR(buf_cstr(&a), buf_cstr(&b));
    /* SQLite skips whole blocks a filter rules out without examining their lines; the cache
     * examines every line, so its follower may resume later, never earlier, and never past
     * the newest line. */
    CHECK(ra >= rb && ra <= (q->after > TOTAL ? q->after : TOTAL));
    if (from == FROM_CACHE)
        CHECK_INT(sa.blocks_read, 0);
    else if (from == FROM_SQLITE)
        CHECK(sa.blocks_read > 0);
    buf_release(&a);
    buf_release(&b);
}

int main(void)
{
    snprintf(dir, sizeof(dir), "/tmp/ty-logcache-XXXXXX");
    if (!mkdtemp(dir))
        abort();
    struct store *st = open_store();
    CHECK(st != NULL);
    if (!st)
        return check_done();
    int64_t pk = create_job(st);
    ingest(st, pk);
    struct store *plain = open_store(); /* same file, nothing cached */
    CHECK(plain != NULL);
    if (!plain)
        return check_done();

    uint64_t rank1 = 1u << 1, rank2 = 1u << 2;
    struct logmatch m;
    CHECK_INT(logmatch_parse(&m, "nccl timeout", NULL), 0);
    struct log_query q = { .stream = -1, .after = 4000 };
    compare(st, plain, pk, "after 4000", &q, FROM_CACHE);
    q.after = TOTAL - 1;
    compare(st, plain, pk, "the newest line", &q, FROM_CACHE);
    q.after = TOTAL;
    compare(st, plain, pk, "nothing new", &q, FROM_CACHE);
    q = (struct log_query){ .stream = -1, .after = 2500, .limit = 7 };
    compare(st, plain, pk, "a limit", &q, FROM_CACHE);
    q = (struct log_query){ .stream = -1, .after = 2500, .ranks = &rank1, .nranks_words = 1 };
    compare(st, plain, pk, "rank 1", &q, FROM_CACHE);
    q.ranks = &rank2;
    compare(st, plain, pk, "rank 2 (a later source, on a pod, attempt 2)", &q, FROM_CACHE);
    q = (struct log_query){ .stream = LOGF_STDERR, .after = 2500 };
    compare(st, plain, pk, "stderr", &q, FROM_CACHE);
    q = (struct log_query){ .stream = -1, .after = 2500, .match = &m, .limit = 50 };
    compare(st, plain, pk, "a word query", &q, FROM_CACHE);
    q = (struct log_query){ .stream = -1, .after = 2500, .since = clock_now_ns() + 1 };
    compare(st, plain, pk, "a time range with nothing in it", &q, FROM_CACHE);
    q = (struct log_query){ .stream = -1, .after = 2500, .by_attempt = true, .attempt = 2 };
    compare(st, plain, pk, "attempt 2", &q, FROM_CACHE);
    q.attempt = 1;
    compare(st, plain, pk, "attempt 1", &q, FROM_CACHE);
    q = (struct log_query){ .stream = -1, .by_attempt = true, .attempt = 2, .limit = 30 };
    compare(st, plain, pk, "attempt 2 from the start", &q, FROM_SQLITE);
    /* Rank 2 is attempt 2's only source: the same lines, and attempt 0 has none. */
    struct buf by_attempt, by_rank;
    buf_init(&by_attempt);
    buf_init(&by_rank);
    struct log_read_stats stats;
    q = (struct log_query){ .stream = -1, .by_attempt = true, .attempt = 2 };
    read_all(plain, pk, &q, &by_attempt, &stats);
    q = (struct log_query){ .stream = -1, .ranks = &rank2, .nranks_words = 1 };
    read_all(plain, pk, &q, &by_rank, &stats);
    CHECK(by_attempt.len > 0);
    CHECK_STR(buf_cstr(&by_attempt), buf_cstr(&by_rank));
    q = (struct log_query){ .stream = -1, .by_attempt = true, .attempt = 0 };
    read_all(plain, pk, &q, &by_attempt, &stats);
    CHECK_INT(by_attempt.len, 0);
    buf_release(&by_attempt);
    buf_release(&by_rank);

    /* Older than the cache holds (its first line is 905), a tail, a bound: SQLite's. */
    q = (struct log_query){ .stream = -1, .after = 0, .limit = 10 };
    compare(st, plain, pk, "from the start", &q, FROM_SQLITE);
    q = (struct log_query){ .stream = -1, .after = 903 };
    compare(st, plain, pk, "one line before the cache", &q, FROM_SQLITE);
    q.after = 904;
    compare(st, plain, pk, "the cache's first line", &q, FROM_CACHE);
    q = (struct log_query){ .stream = -1, .tail = 20 };
    compare(st, plain, pk, "a tail", &q, FROM_SQLITE);
    q = (struct log_query){ .stream = -1, .after = 4000, .before = 4010 };
    compare(st, plain, pk, "before", &q, FROM_SQLITE);

    /* Retention forgets the cached lines, so none it dropped is served from memory. */
    CHECK_INT(store_logs_retain(st, pk, 4096, 0, NULL), 0);
    q = (struct log_query){ .stream = -1, .after = 904 };
    compare(st, plain, pk, "after retention", &q, EITHER);

    logmatch_release(&m);
    store_close(plain);
    store_close(st);
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    CHECK_INT(system(cmd), 0);
    return check_done();
}
