/*
 * logsearch: GET /v1/jobs/{id}/logs/search. First pass: the matching lines (blocks whose Bloom
 * filter rules the words out are never read). Second pass: for each match, its context lines
 * before and after in the same filtered timeline (same ranks and stream). Answers JSON.
 */
#include "api/handlers.h"
#include "api/job_json.h"
#include "api/logfmt.h"
#include "api/logquery.h"
#include "core/clock.h"
#include "core/xalloc.h"

struct hits {
    json_t *matches;
    const struct logquery *lq;
    int64_t last_seq;
};

static void add_span(void *ctx, size_t start, size_t n)
{
    json_array_append_new(ctx, json_pack("[I,I]", (json_int_t)start, (json_int_t)n));
}

static int on_match(void *ctx, const struct log_line *l)
{
    struct hits *h = ctx;
    json_t *m = logfmt_json(l, h->lq->fmt.strip_ansi);
    json_t *spans = json_array();
    logmatch_spans(&h->lq->match, l->text, l->len, add_span, spans);
    json_object_set_new(m, "spans", spans);
    json_array_append_new(h->matches, m);
    h->last_seq = l->seq;
    return 0;
}

static int on_context(void *ctx, const struct log_line *l)
{
    struct {
        json_t *arr;
        bool strip;
    } *c = ctx;
    json_array_append_new(c->arr, logfmt_json(l, c->strip));
    return 0;
}

/* Fills "before" and "after" of one match with up to n context lines each. */
static int add_context(struct request *req, const struct logquery *lq, int64_t pk, json_t *m,
                       struct err *err)
{
    int64_t seq = json_integer_value(json_object_get(m, "seq"));
    struct log_query q = lq->q;
    q.match = NULL;
    q.limit = 0;
    struct {
        json_t *arr;
        bool strip;
    } ctx = { json_array(), lq->fmt.strip_ansi };
    q.after = 0;
    q.before = seq;
    q.tail = lq->context;
    int rc =
        lq->context ? store_logs_read(req->api->store, pk, &q, on_context, &ctx, NULL, err) : 0;
    json_object_set_new(m, "before", ctx.arr);
    ctx.arr = json_array();
    q.after = seq;
    q.before = 0;
    q.tail = 0;
    q.limit = lq->context;
    if (rc == 0 && lq->context)
        rc = store_logs_read(req->api->store, pk, &q, on_context, &ctx, NULL, err);
    json_object_set_new(m, "after", ctx.arr);
    return rc;
}

void jobs_logs_search(struct request *req, struct response *res)
{
    struct job *j = job_from_path(req, res);
    if (!j)
        return;
    struct logquery lq;
    if (logquery_parse(req, res, j, LOGQ_SEARCH, &lq) < 0) {
        job_free(j);
        return;
    }
    struct err err;
    err_init(&err);
    struct hits h = { .matches = json_array(), .lq = &lq };
    struct log_read_stats stats = { 0 };
    struct log_query q = lq.q;
    q.limit = lq.q.limit + 1;
    int64_t t0 = clock_mono_ns();
    int rc = store_logs_read(req->api->store, j->pk, &q, on_match, &h, &stats, &err);
    bool more = rc == 0 && json_array_size(h.matches) > (size_t)lq.q.limit;
    if (more)
        json_array_remove(h.matches, json_array_size(h.matches) - 1);
    size_t i;
    json_t *m;
    json_array_foreach(h.matches, i, m)
    {
        if (rc == 0)
            rc = add_context(req, &lq, j->pk, m, &err);
    }
    if (rc < 0) {
        problem_respond(req, res, &err);
        json_decref(h.matches);
    } else {
        int64_t last = json_integer_value(
            json_object_get(json_array_get(h.matches, json_array_size(h.matches) - 1), "seq"));
        json_t *out = json_pack("{s:o,s:o,s:{s:I,s:I,s:I,s:f}}", "matches", h.matches, "next_after",
                                more ? json_integer(last) : json_null(), "stats", "blocks_read",
                                (json_int_t)stats.blocks_read, "blocks_skipped",
                                (json_int_t)stats.blocks_skipped, "lines_scanned",
                                (json_int_t)stats.lines_scanned, "seconds",
                                (double)(clock_mono_ns() - t0) / 1e9);
        response_json_new(res, 200, out);
    }
    logquery_release(&lq);
    err_release(&err);
    job_free(j);
}
