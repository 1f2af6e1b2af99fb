/*
 * fuzz_query: the parsers of query-string values. The first byte picks one; the rest is the
 * value as the HTTP layer hands it over (a C string, already URL-decoded):
 *   label selectors (GET /v1/jobs?selector=), rank ranges, durations, quantities, byte sizes,
 *   RFC 3339 times, integers and booleans, and a whole log query ("rank=0-3&since=...&q=...")
 *   through logquery_parse as GET /v1/jobs/{id}/logs sees it. A first byte of 128 or more
 *   whose remainder by 10 is 0 (200, 210, ...) feeds the bytes, undecoded, to the HTTP layer's
 *   request-target parser instead.
 */
#include <strings.h>

#include "api/logquery.h"
#include "api/selector.h"
#include "core/clock.h"
#include "core/parse.h"
#include "server/http/http_target.h"
#include "tests/fuzz/fuzz.h"

static int count_range(int64_t lo, int64_t hi, void *ctx)
{
    FUZZ_ASSERT(lo <= hi);
    (*(int64_t *)ctx)++;
    return 0;
}

static void selector(const char *text)
{
    struct label_req *reqs;
    size_t n;
    struct err err;
    err_init(&err);
    if (selector_parse(text, 64, &reqs, &n, &err) == 0) {
        FUZZ_ASSERT(n <= 64);
        for (size_t i = 0; i < n; i++)
            FUZZ_ASSERT(reqs[i].key && (reqs[i].op == LABEL_EXISTS || reqs[i].op == LABEL_ABSENT ||
                                        reqs[i].nvalues > 0));
        selector_free(reqs, n);
    } else {
        FUZZ_ASSERT(err_is_set(&err) && !reqs && n == 0);
    }
    err_release(&err);
}

/* A parsed time formats and parses back to itself (to the microsecond the API shows). */
static void times(const char *text)
{
    int64_t ns;
    if (clock_parse(text, &ns) < 0)
        return;
    char out[CLOCK_RFC3339_MAX], again[CLOCK_RFC3339_MAX];
    int64_t back;
    clock_format(ns, out);
    FUZZ_ASSERT(clock_parse(out, &back) == 0);
    FUZZ_ASSERT(strcmp(clock_format(back, again), out) == 0);
}

static void numbers(const char *text, int which)
{
    int64_t v = 0, n = 0;
    bool b;
    int i;
    switch (which) {
    case 1:
        parse_ranges(text, 0, INT32_MAX, count_range, &n);
        break;
    case 2:
        if (parse_duration(text, &v) == 0)
            FUZZ_ASSERT(v >= 0);
        break;
    case 3:
        if (parse_quantity(text, &v) == 0)
            FUZZ_ASSERT(v >= 0);
        break;
    case 4:
        if (parse_bytes(text, &v) == 0)
            FUZZ_ASSERT(v >= 0);
        break;
    default:
        parse_int64(text, INT64_MIN, INT64_MAX, &v);
        parse_int(text, -5, 5, &i);
        parse_bool(text, &b);
        break;
    }
}

/* A query string "k=v&k=v" as MHD would hand it over; Accept and Last-Event-ID come as
 * headers from the same pairs. */
struct fake {
    char *keys[32], *vals[32];
    size_t n;
};

static const char *lookup(struct request *req, const char *name)
{
    struct fake *f = req->http_ctx;
    for (size_t i = 0; i < f->n; i++)
        if (strcmp(f->keys[i], name) == 0)
            return f->vals[i];
    return NULL;
}

static void each(struct request *req, void (*fn)(void *ctx, const char *k, const char *v),
                 void *ctx)
{
    struct fake *f = req->http_ctx;
    for (size_t i = 0; i < f->n; i++)
        fn(ctx, f->keys[i], f->vals[i]);
}

static void logquery(char *text, int nranks, enum logq_kind kind)
{
    struct fake f = { .n = 0 };
    for (char *p = text; p && f.n < 32;) {
        char *amp = strchr(p, '&');
        if (amp)
            *amp = '\0';
        char *eq = strchr(p, '=');
        if (eq)
            *eq = '\0';
        f.keys[f.n] = p;
        f.vals[f.n++] = eq ? eq + 1 : (char *)"";
        p = amp ? amp + 1 : NULL;
    }
    struct api api = { .limits = { .max_log_limit = 100000 } };
    struct request req = { .api = &api,
                           .method = HTTP_GET,
                           .path = "/v1/jobs/x/logs",
                           .header = lookup,
                           .query = lookup,
                           .query_each = each,
                           .http_ctx = &f };
    struct response res = { .status = 0 };
    struct job job = { .pk = 1, .nranks = nranks };
    struct logquery lq;
    if (logquery_parse(&req, &res, &job, kind, &lq) == 0) {
        FUZZ_ASSERT(res.status == 0);
        logquery_release(&lq);
    } else {
        FUZZ_ASSERT(res.status == 400);
    }
    response_release(&res);
}

/* A target as sent: within its limits, a path without control characters and at most
 * max_params parameters, each key finding its first parameter's value. */
static void target(const char *raw, size_t len)
{
    struct http_target_limits lim = { .max_bytes = 4096, .max_params = 16 };
    struct http_target t;
    struct err err;
    err_init(&err);
    if (http_target_parse(&t, raw, len, &lim, &err) == 0) {
        FUZZ_ASSERT(t.path && t.nparams <= lim.max_params);
        for (const char *p = t.path; *p; p++)
            FUZZ_ASSERT((unsigned char)*p >= 0x20 && *p != 0x7f);
        for (size_t i = 0; i < t.nparams; i++) {
            size_t first = 0;
            while (strcasecmp(t.keys[first], t.keys[i]) != 0)
                first++;
            FUZZ_ASSERT(http_target_query(&t, t.keys[i]) == t.values[first]);
        }
        http_target_release(&t);
    } else {
        FUZZ_ASSERT(err_is_set(&err) && !t.path && !t.nparams);
    }
    err_release(&err);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    unsigned which = data[0] % 10;
    if (which == 0 && data[0] >= 128) {
        target((const char *)data + 1, size - 1);
        return 0;
    }
    char *text = fuzz_cstr(data + 1, size - 1);
    if (which == 0)
        selector(text);
    else if (which == 5)
        times(text);
    else if (which >= 7)
        logquery(text, 1 + data[0] / 10 % 20, (enum logq_kind)(which - 7));
    else
        numbers(text, (int)which);
    free(text);
    return 0;
}
