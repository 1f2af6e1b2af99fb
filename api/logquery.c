/* logquery: parsing the log routes' parameters. */
#include "api/logquery.h"

#include <ctype.h>
#include <strings.h>

#include "core/buf.h"
#include "core/clock.h"
#include "core/parse.h"
#include "core/xalloc.h"

static const char *const allowed[][16] = {
    [LOGQ_READ] = { "rank", "attempt", "stream", "since", "until", "q", "after", "before", "limit",
                    "tail", "format", "follow", "strip_ansi", NULL },
    [LOGQ_DOWNLOAD] = { "rank", "attempt", "stream", "since", "until", "q", "format", "strip_ansi",
                        NULL },
    [LOGQ_SEARCH] = { "q", "context", "rank", "attempt", "stream", "since", "until", "after",
                      "limit", "strip_ansi", NULL },
};

struct unknown_check {
    enum logq_kind kind;
    char bad[64];
};

static void check_name(void *ctx, const char *k, const char *v)
{
    (void)v;
    struct unknown_check *u = ctx;
    for (const char *const *a = allowed[u->kind]; *a; a++)
        if (strcmp(*a, k) == 0)
            return;
    if (!u->bad[0])
        snprintf(u->bad, sizeof(u->bad), "%s", k);
}

struct rank_set {
    uint64_t *bits;
    int nranks;
};

static int add_ranks(int64_t lo, int64_t hi, void *ctx)
{
    struct rank_set *rs = ctx;
    if (hi >= rs->nranks)
        return -1;
    for (int64_t r = lo; r <= hi; r++)
        rs->bits[r / 64] |= 1ULL << (r % 64);
    return 0;
}

static int bad(struct request *req, struct response *res, const char *param, const char *what)
{
    problem(req, res, ERR_INVALID, "parameter '%s' %s", param, what);
    return -1;
}

static int parse_ranks(struct request *req, struct response *res, const struct job *j,
                       struct logquery *lq)
{
    const char *text = request_query(req, "rank");
    if (!text)
        return 0;
    size_t words = ((size_t)j->nranks + 63) / 64;
    lq->ranks = xcalloc(words ? words : 1, sizeof(uint64_t));
    struct rank_set rs = { lq->ranks, j->nranks };
    if (parse_ranges(text, 0, INT32_MAX, add_ranks, &rs) < 0) {
        char what[160];
        snprintf(what, sizeof(what),
                 "must be ranks or ranges such as 0,3-5, each below %d (the job's ranks)",
                 j->nranks);
        return bad(req, res, "rank", what);
    }
    lq->q.ranks = lq->ranks;
    lq->q.nranks_words = words;
    return 0;
}

/* A time: RFC 3339, or a duration before now with its unit ("10m": ten minutes ago; a bare
 * number is refused, as it could as well be a Unix time). */
static int parse_time(struct request *req, struct response *res, const char *name, int64_t *out)
{
    const char *text = request_query(req, name);
    if (!text || clock_parse(text, out) == 0)
        return 0;
    size_t len = strlen(text);
    int64_t ago;
    if (len && isalpha((unsigned char)text[len - 1]) && parse_duration(text, &ago) == 0) {
        *out = clock_now_ns() - ago;
        return 0;
    }
    return bad(req, res, name,
               "must be an RFC 3339 time such as 2026-11-22T03:00:00Z, or a duration before now "
               "such as 10m, 90s or 2h");
}

/* attempt: one of the job's attempts so far (0 is the first run). */
static int parse_attempt(struct request *req, struct response *res, const struct job *j,
                         struct logquery *lq)
{
    const char *text = request_query(req, "attempt");
    int64_t n;
    if (!text)
        return 0;
    if (parse_int64(text, 0, j->attempt, &n) < 0) {
        char what[128];
        snprintf(what, sizeof(what), "must be an attempt of this job, from 0 (its first run) to %d",
                 j->attempt);
        return bad(req, res, "attempt", what);
    }
    lq->q.by_attempt = true;
    lq->q.attempt = (int)n;
    return 0;
}

static int parse_num(struct request *req, struct response *res, const char *name, int64_t min,
                     int64_t max, int64_t *out)
{
    const char *text = request_query(req, name);
    if (text && parse_int64(text, min, max, out) < 0) {
        char what[96];
        snprintf(what, sizeof(what), "must be an integer from %lld to %lld", (long long)min,
                 (long long)max);
        return bad(req, res, name, what);
    }
    return 0;
}

static int parse_flag(struct request *req, struct response *res, const char *name, bool *out)
{
    const char *text = request_query(req, name);
    if (text && parse_bool(text, out) < 0)
        return bad(req, res, name, "must be true or false");
    return 0;
}

static int parse_format(struct request *req, struct response *res, struct logquery *lq)
{
    const char *f = request_query(req, "format");
    const char *accept = request_header(req, "Accept");
    lq->fmt.show_rank = true;
    if (!f) {
        if (accept && strstr(accept, "text/event-stream"))
            lq->fmt.format = LOGFMT_SSE;
        else if (accept && strstr(accept, "application/x-ndjson"))
            lq->fmt.format = LOGFMT_NDJSON;
        return 0;
    }
    if (strcmp(f, "text") == 0)
        lq->fmt.format = LOGFMT_TEXT;
    else if (strcmp(f, "ndjson") == 0)
        lq->fmt.format = LOGFMT_NDJSON;
    else if (strcmp(f, "sse") == 0)
        lq->fmt.format = LOGFMT_SSE;
    else
        return bad(req, res, "format", "must be text, ndjson or sse");
    return 0;
}

static int parse_stream(struct request *req, struct response *res, struct logquery *lq)
{
    const char *s = request_query(req, "stream");
    lq->q.stream = -1;
    if (!s)
        return 0;
    if (strcmp(s, "stdout") == 0)
        lq->q.stream = 0;
    else if (strcmp(s, "stderr") == 0)
        lq->q.stream = LOGF_STDERR;
    else
        return bad(req, res, "stream", "must be stdout or stderr");
    return 0;
}

static int parse_match(struct request *req, struct response *res, enum logq_kind kind,
                       struct logquery *lq)
{
    const char *q = request_query(req, "q");
    if (!q)
        return kind == LOGQ_SEARCH ? bad(req, res, "q", "is required: words or \"phrases\"") : 0;
    struct err err;
    err_init(&err);
    if (logmatch_parse(&lq->match, q, &err) < 0) {
        bad(req, res, "q", err.msg + 2); /* "q ..." */
        err_release(&err);
        return -1;
    }
    lq->has_match = true;
    lq->q.match = &lq->match;
    return 0;
}

/* after: the parameter, else Last-Event-ID (an SSE client reconnecting). */
static int parse_after(struct request *req, struct response *res, struct logquery *lq)
{
    if (request_query(req, "after"))
        return parse_num(req, res, "after", 0, INT64_MAX, &lq->q.after);
    const char *last = request_header(req, "Last-Event-ID");
    if (last && parse_int64(last, 0, INT64_MAX, &lq->q.after) < 0)
        return bad(req, res, "Last-Event-ID", "must be a sequence number this API sent");
    return 0;
}

int logquery_parse(struct request *req, struct response *res, const struct job *j,
                   enum logq_kind kind, struct logquery *lq)
{
    memset(lq, 0, sizeof(*lq));
    struct unknown_check u = { .kind = kind };
    if (req->query_each)
        req->query_each(req, check_name, &u);
    if (u.bad[0]) {
        problem(req, res, ERR_INVALID, "unknown parameter '%s'", u.bad);
        return -1;
    }
    int64_t max = req->api->limits.max_log_limit, limit = kind == LOGQ_SEARCH ? 100 : 1000,
            tail = 0, context = 3;
    bool follow = false;
    if (parse_ranks(req, res, j, lq) < 0 || parse_attempt(req, res, j, lq) < 0 ||
        parse_stream(req, res, lq) < 0 || parse_time(req, res, "since", &lq->q.since) < 0 ||
        parse_time(req, res, "until", &lq->q.until) < 0 || parse_after(req, res, lq) < 0 ||
        parse_num(req, res, "before", 1, INT64_MAX, &lq->q.before) < 0 ||
        parse_num(req, res, "limit", 1, max, &limit) < 0 ||
        parse_num(req, res, "tail", 1, max, &tail) < 0 ||
        parse_num(req, res, "context", 0, 100, &context) < 0 ||
        parse_flag(req, res, "follow", &follow) < 0 ||
        parse_flag(req, res, "strip_ansi", &lq->fmt.strip_ansi) < 0 ||
        parse_format(req, res, lq) < 0 || parse_match(req, res, kind, lq) < 0) {
        logquery_release(lq);
        return -1;
    }
    if (follow && (tail || lq->q.before)) {
        /* tail with follow: start from the last N lines, then keep going */
        if (lq->q.before) {
            logquery_release(lq);
            return bad(req, res, "before", "cannot be combined with follow");
        }
    }
    lq->q.limit = kind == LOGQ_DOWNLOAD ? 0 : (int)limit;
    lq->q.tail = (int)tail;
    if (lq->q.before && !tail && !request_query(req, "after"))
        lq->q.tail = (int)limit; /* before=N&limit=M: the M lines before N */
    lq->follow = follow;
    lq->context = (int)context;
    if (lq->fmt.format == LOGFMT_SSE && !follow && kind == LOGQ_READ)
        lq->fmt.format = LOGFMT_NDJSON;
    return 0;
}

void logquery_release(struct logquery *lq)
{
    free(lq->ranks);
    if (lq->has_match)
        logmatch_release(&lq->match);
    memset(lq, 0, sizeof(*lq));
}
