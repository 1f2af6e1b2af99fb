/*
 * The request target as the HTTP layer parses it (server/http/http_target.c) and the label
 * selector's bounds (api/selector.c): the inputs of issue 17's "Smaller" list. Each case is
 * what a client sent and what a handler must see, or the limit it must be told.
 */
#include "tests/unit/check.h"

#include "api/selector.h"
#include "core/buf.h"
#include "server/http/http_target.h"

static const struct http_target_limits lim = { .max_bytes = 256, .max_params = 4 };

static int parse(struct http_target *t, const char *raw, struct err *err)
{
    return http_target_parse(t, raw, strlen(raw), &lim, err);
}

static void test_decoding(void)
{
    struct http_target t;
    struct err err;
    err_init(&err);
    CHECK_INT(parse(&t, "/v1/jobs/a%2Fb+c?selector=team%3Dml+x&limit=5&flag&=v#frag", &err), 0);
    CHECK_STR(t.path, "/v1/jobs/a/b+c"); /* '+' is a space only in the query */
    CHECK_INT(t.nparams, 4);
    CHECK_STR(http_target_query(&t, "selector"), "team=ml x");
    CHECK_STR(http_target_query(&t, "LIMIT"), "5"); /* keys compare as MHD compared them */
    CHECK(http_target_query(&t, "flag") == NULL);   /* present, without a value */
    CHECK_STR(t.keys[2], "flag");
    CHECK(http_target_query(&t, "frag") == NULL);
    http_target_release(&t);
    CHECK_INT(parse(&t, "/x?a=%zz%4&b=%41", &err), 0); /* bad escapes stay as they are */
    CHECK_STR(http_target_query(&t, "a"), "%zz%4");
    CHECK_STR(http_target_query(&t, "b"), "A");
    http_target_release(&t);
    CHECK_INT(parse(&t, "/x?&&a=1&&", &err), 0); /* empty parameters are not parameters */
    CHECK_INT(t.nparams, 1);
    http_target_release(&t);
    err_release(&err);
}

static void test_refusals(void)
{
    struct http_target t;
    struct err err;
    err_init(&err);
    /* %00 ended the path in MHD: /v1/jobs/ID%00/cancel was served as GET /v1/jobs/ID. */
    CHECK_INT(parse(&t, "/v1/jobs/abc%00/cancel", &err), -1);
    CHECK_INT(err.code, ERR_INVALID);
    CHECK_STR(err.reason, "control");
    CHECK(t.path == NULL);
    err_release(&err);
    CHECK_INT(parse(&t, "/v1/hooks/s3/x%0a2026-01-01%20error%20forged", &err), -1);
    err_release(&err);
    CHECK_INT(parse(&t, "/x%7f", &err), -1);
    err_release(&err);
    CHECK_INT(parse(&t, "/x?q=a%00b", &err), -1);
    CHECK_STR(err.reason, "nul");
    err_release(&err);
    CHECK_INT(parse(&t, "/x?q=line%0abreak", &err), 0); /* a value may hold a newline */
    http_target_release(&t);
    /* The parameter count is checked before anything is decoded. */
    CHECK_INT(parse(&t, "/x?a&b&c&d&e", &err), -1);
    CHECK_STR(err.reason, "max_params");
    err_release(&err);
    CHECK_INT(parse(&t, "/x?a&b&c&d", &err), 0);
    http_target_release(&t);
    struct buf long_target = BUF_INIT;
    buf_puts(&long_target, "/");
    for (int i = 0; i < 256; i++)
        buf_putc(&long_target, 'a');
    CHECK_INT(parse(&t, long_target.data, &err), -1);
    CHECK_STR(err.reason, "max_bytes");
    err_release(&err);
    buf_release(&long_target);
}

static void test_selector_bounds(void)
{
    struct label_req *r;
    size_t n;
    struct err err;
    err_init(&err);
    CHECK_INT(selector_parse("a=1,b!=2,c in (x,y),!d", 4, &r, &n, &err), 0);
    CHECK_INT(n, 4);
    selector_free(r, n);
    /* ~1,000 terms reached SQLite as ~1,000 clauses and answered 500. */
    struct buf many = BUF_INIT;
    for (int i = 0; i < 1000; i++)
        buf_printf(&many, "%sk%d=v", i ? "," : "", i);
    CHECK_INT(selector_parse(many.data, 32, &r, &n, &err), -1);
    CHECK_STR(err.reason, "max_terms");
    CHECK(r == NULL && n == 0);
    err_release(&err);
    buf_release(&many);
    CHECK_INT(selector_parse("a in (1,2,3,4,5)", 4, &r, &n, &err), -1); /* a set's values too */
    CHECK_STR(err.reason, "max_terms");
    err_release(&err);
    CHECK_INT(selector_parse("a in (1,2,3,4)", 4, &r, &n, &err), 0);
    selector_free(r, n);
}

int main(void)
{
    test_decoding();
    test_refusals();
    test_selector_bounds();
    return check_done();
}
