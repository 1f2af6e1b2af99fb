/* Unit tests of core: err, buf, clock, parse, utf8, jsonx, yamljson, crypto, sortid,
 * logrec. */
#include <math.h>
#include <pthread.h>
#include <unistd.h>

#include "tests/unit/check.h"

#include "core/buf.h"
#include "core/clock.h"
#include "core/crypto.h"
#include "core/err.h"
#include "core/jsonx.h"
#include "core/log.h"
#include "store/logmatch.h"
#include "server/ingest/logrec.h"
#include "core/parse.h"
#include "api/sortid.h"
#include "core/utf8.h"
#include "store/words.h"
#include "core/yamljson.h"

static void test_err(void)
{
    struct err err;
    err_init(&err);
    CHECK_INT(err_set(&err, ERR_NOT_FOUND, "job %s", "a"), -1);
    err_set(&err, ERR_INTERNAL, "later");
    CHECK_INT(err.code, ERR_NOT_FOUND);
    CHECK_STR(err.msg, "job a");
    err_wrap(&err, "loading");
    CHECK_STR(err.msg, "loading: job a");
    err_release(&err);
    err_field(&err, "/nodes", "must be at least %d", 1);
    err_field(&err, "/name", "required");
    CHECK_INT(err.code, ERR_VALIDATION);
    CHECK_INT(err.nfields, 2);
    CHECK_STR(err.fields[1].pointer, "/name");
    err_release(&err);
    CHECK_INT(err_set(NULL, ERR_IO, "ignored"), -1);
}

static void test_buf(void)
{
    struct buf b = BUF_INIT;
    CHECK_STR(buf_cstr(&b), "");
    for (int i = 0; i < 1000; i++)
        buf_printf(&b, "%d,", i);
    CHECK(b.len > 3000);
    buf_consume(&b, 4);
    CHECK(strncmp(b.data, "2,3,", 4) == 0);
    size_t len;
    char *s = buf_detach(&b, &len);
    CHECK(len > 0 && b.data == NULL);
    free(s);
}

static void test_clock(void)
{
    int64_t ns;
    char out[CLOCK_RFC3339_MAX];
    CHECK_INT(clock_parse("2026-11-22T02:54:37.123456789Z", &ns), 0);
    CHECK_INT(ns % NS_PER_SEC, 123456789);
    CHECK_STR(clock_format(ns, out), "2026-11-22T02:54:37.123456Z");
    CHECK_INT(clock_parse("2026-11-22T04:54:37+02:00", &ns), 0);
    CHECK_STR(clock_format(ns, out), "2026-11-22T02:54:37.000000Z");
    /* The calendar arithmetic agrees with gmtime_r across int64 nanoseconds' range (1677-2262),
     * leap days and the epoch's negative side included. */
    uint64_t x = 88172645463325252ULL;
    for (int i = 0; i < 200000; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        int64_t t = (int64_t)x;
        time_t sec = (time_t)(t / NS_PER_SEC) - (t % NS_PER_SEC < 0);
        int64_t frac = t % NS_PER_SEC < 0 ? t % NS_PER_SEC + NS_PER_SEC : t % NS_PER_SEC;
        struct tm tm;
        char want[CLOCK_RFC3339_MAX];
        gmtime_r(&sec, &tm);
        snprintf(want, sizeof(want), "%04d-%02d-%02dT%02d:%02d:%02d.%06ldZ", tm.tm_year + 1900,
                 tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, (long)(frac / 1000));
        if (strcmp(clock_format(t, out), want) != 0) {
            CHECK_STR(out, want);
            break;
        }
    }
    CHECK_STR(clock_format(0, out), "1970-01-01T00:00:00.000000Z");
    CHECK_STR(clock_format(-1, out), "1969-12-31T23:59:59.999999Z");
    CHECK_STR(clock_format(951782400LL * NS_PER_SEC, out), "2000-02-29T00:00:00.000000Z");
    CHECK_INT(clock_parse("2026-02-30T00:00:00Z", &ns), -1);
    CHECK_INT(clock_parse("2026-11-22", &ns), -1);
    CHECK_INT(clock_parse("2026-11-22T02:54:37", &ns), -1);
    CHECK_INT(clock_parse("2026-11-22T02:54:37Zjunk", &ns), -1);
    /* Beyond what int64 nanoseconds hold (found by fuzz/query): rejected, not wrapped. */
    CHECK_INT(clock_parse("2261-12-31T23:59:59Z", &ns), 0);
    CHECK_INT(clock_parse("2262-04-12T00:00:00Z", &ns), -1);
    CHECK_INT(clock_parse("9999-12-31T23:59:59Z", &ns), -1);
    CHECK_INT(clock_parse("0001-01-01T00:00:00Z", &ns), -1);
}

static int collect(int64_t lo, int64_t hi, void *ctx)
{
    struct buf *b = ctx;
    buf_printf(b, "[%lld-%lld]", (long long)lo, (long long)hi);
    return 0;
}

static void test_parse(void)
{
    int64_t v;
    CHECK_INT(parse_int64("42", 0, 100, &v), 0);
    CHECK_INT(v, 42);
    CHECK_INT(parse_int64("42x", 0, 100, &v), -1);
    CHECK_INT(parse_int64(" 42", 0, 100, &v), -1);
    CHECK_INT(parse_int64("101", 0, 100, &v), -1);
    CHECK_INT(parse_duration("250ms", &v), 0);
    CHECK_INT(v, 250 * NS_PER_MS);
    CHECK_INT(parse_duration("2h", &v), 0);
    CHECK_INT(v, 7200 * NS_PER_SEC);
    CHECK_INT(parse_duration("2 h", &v), -1);
    CHECK_INT(parse_bytes("64Mi", &v), 0);
    CHECK_INT(v, 64 << 20);
    CHECK_INT(parse_quantity("500m", &v), 0);
    CHECK_INT(v, 500);
    CHECK_INT(parse_quantity("16Gi", &v), 0);
    CHECK_INT(v, 16LL * 1073741824LL * 1000);
    CHECK_INT(parse_quantity("-1", &v), -1);
    CHECK_INT(parse_quantity("1Q", &v), -1);
    struct buf b = BUF_INIT;
    CHECK_INT(parse_ranges("0,3-5,7", 0, 63, collect, &b), 0);
    CHECK_STR(buf_cstr(&b), "[0-0][3-5][7-7]");
    CHECK_INT(parse_ranges("5-3", 0, 63, collect, &b), -1);
    CHECK_INT(parse_ranges("1,", 0, 63, collect, &b), -1);
    CHECK_INT(parse_ranges("", 0, 63, collect, &b), -1);
    buf_release(&b);
}

static void test_utf8_and_escape(void)
{
    CHECK(utf8_valid("h\xc3\xa9llo", 6));
    CHECK(!utf8_valid("\xff", 1));
    CHECK(!utf8_valid("\xc0\x80", 2));     /* overlong NUL */
    CHECK(!utf8_valid("\xed\xa0\x80", 3)); /* surrogate */
    struct buf b = BUF_INIT;
    jsonx_escape_bytes(&b, "a\"b\\\n\x1b[31m\xff\0z", 13);
    CHECK_STR(buf_cstr(&b), "a\\\"b\\\\\\n\\u001b[31m\\\\xff\\\\x00z");
    /* The escaped form must always parse as a JSON string. */
    struct buf doc = BUF_INIT;
    buf_printf(&doc, "\"%s\"", buf_cstr(&b));
    json_t *v = jsonx_loadb(doc.data, doc.len, 4, NULL);
    CHECK(v != NULL);
    json_decref(v);
    buf_release(&doc);
    buf_release(&b);
}

/* Parses text with jsonx_loadb and with jansson (the flags jsonx_loadb promises to match): both
 * reject it, or both build equal values. Returns 1 when ours accepted it. */
static int parses_like_jansson(const char *text, size_t len)
{
    struct err err;
    err_init(&err);
    json_t *ours = jsonx_loadb(text, len, 64, &err);
    json_t *theirs =
        json_loadb(text, len, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL | JSON_DECODE_ANY, NULL);
    if (!ours != !theirs || (ours && !json_equal(ours, theirs)))
        fprintf(stderr, "parsed unlike jansson (ours %s): %.*s\n", ours ? "accepted" : "rejected",
                (int)len, text);
    CHECK(!ours == !theirs);
    CHECK(!ours || json_equal(ours, theirs));
    CHECK(ours || (err.code == ERR_INVALID && strstr(err.msg, "invalid JSON at line")));
    int accepted = ours != NULL;
    json_decref(ours);
    json_decref(theirs);
    err_release(&err);
    return accepted;
}

static void test_jsonx_parse(void)
{
    static const char *const good[] = {
        "{}",
        " [ ] ",
        "0",
        "-0",
        "-0.0",
        "1.5e+3",
        "2E-2",
        "9223372036854775807",
        "-9223372036854775808",
        "1e-400",
        "\"\"",
        "\"a\\\"b\\\\c\\/d\\b\\f\\n\\r\\t\"",
        "\"\\u00e9\\u20AC\\ud83d\\ude00\"",
        "\"\\u0000x\"",
        "\"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\"",
        "{\"a\":{\"b\":[true,false,null,{\"c\":\"d\"}]},\"e\":-12}",
        "{\"\\u0061\":1,\"b\":2}",
        "[1,\"x\",[[]],{}]\n",
        "\t{\r\n\"k\" : \"v\" }\n",
    };
    static const char *const bad[] = {
        "",
        " ",
        "{",
        "[1,]",
        "{\"a\":1,}",
        "{\"a\" 1}",
        "{a:1}",
        "[1 2]",
        "01",
        "1.",
        ".5",
        "1e",
        "-",
        "+1",
        "1x",
        "tru",
        "truex",
        "nul",
        "NaN",
        "Infinity",
        "[1]]",
        "{} {}",
        "\"abc",
        "\"\\x\"",
        "\"\\u12G4\"",
        "\"\\ud83d\"",
        "\"\\ude00\"",
        "\"\\ud83d\\u0041\"",
        "\"a\tb\"",
        "\"\xc0\xaf\"",
        "\"\xed\xa0\x80\"",
        "\"\xff\"",
        "\xef\xbb\xbf{}",
        "{\"a\":1,\"a\":2}",
        "{\"a\":1,\"\\u0061\":2}",
        "{\"a\\u0000\":1}",
        "9223372036854775808",
        "-9223372036854775809",
        "1e400",
        "[\"a\",]",
        "'a'",
    };
    for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
        CHECK(parses_like_jansson(good[i], strlen(good[i])) == 1);
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        CHECK(parses_like_jansson(bad[i], strlen(bad[i])) == 0);
    CHECK(parses_like_jansson("\"a\0b\"", 5) == 0); /* a raw NUL byte in a string */
    /* jansson takes a NUL byte after a number for the end of the input; a NUL is never JSON. */
    CHECK(jsonx_loadb("[1\0]", 4, 8, NULL) == NULL);
    /* Errors say where: line 2, column 6 is the 2 that stands where the colon belongs. */
    struct err err;
    err_init(&err);
    CHECK(jsonx_loadb("{\"a\":1,\n \"b\" 2}", 16, 8, &err) == NULL);
    CHECK_STR(err.msg, "invalid JSON at line 2 column 6: ':' expected");
    err_release(&err);
}

/* jsonx_dump must write exactly what jansson's compact dump writes: stored specs are hashed. */
static void test_jsonx_dump_matches_jansson(void)
{
    static const char *const docs[] = {
        "{}",
        "[]",
        "\"\"",
        "0",
        "-9223372036854775808",
        "9223372036854775807",
        "1.5",
        "-0.0",
        "true",
        "false",
        "null",
        "[1,[2,[3,{}]],\"x\"]",
        "{\"a\":{\"b\":[true,null,{\"c\":\"d\"}]},\"e\":-12}",
        "\"quote\\\" back\\\\ slash/ tab\\t nl\\n cr\\r bs\\b ff\\f\"",
        "\"\\u0000 nul \\u0001 \\u001f \\u007f del\"",
        "\"caf\u00e9 \u6f22 \\ud83d\\ude00\"",
        "{\"k\\tey\":1,\"\\\"\":2,\"z\":3,\"a\":4}",
    };
    for (size_t i = 0; i < sizeof(docs) / sizeof(docs[0]); i++) {
        json_t *v = json_loads(docs[i], JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
        CHECK(v != NULL);
        char *ours = jsonx_dumps(v), *theirs = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
        CHECK_STR(ours, theirs);
        free(ours);
        free(theirs);
        json_decref(v);
    }
}

/* Reals read back as the same double with the fewest digits: what a log printed comes back. */
static void test_jsonx_real_shortest(void)
{
    static const struct {
        double v;
        const char *want;
    } cases[] = {
        { 10.4461, "10.4461" },
        { 0.1, "0.1" },
        { 5e-05, "5e-5" },
        { 1e300, "1e300" },
        { 3.0e-7, "3e-7" },
        { 2.0, "2.0" },
        { -0.0, "-0.0" },
        { 1.5, "1.5" },
        { 1e21, "1e21" },
        { 123456789.0, "123456789.0" },
        { 0.30000000000000004, "0.30000000000000004" },
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        json_t *v = json_real(cases[i].v);
        char *s = jsonx_dumps(v);
        CHECK_STR(s, cases[i].want);
        CHECK(strtod(s, NULL) == cases[i].v);
        free(s);
        json_decref(v);
    }
    struct buf b = BUF_INIT;
    jsonx_put_real(&b, NAN);
    CHECK_STR(buf_cstr(&b), "null");
    buf_release(&b);
}

static void test_jsonx(void)
{
    test_jsonx_dump_matches_jansson();
    test_jsonx_real_shortest();
    test_jsonx_parse();
    struct err err;
    err_init(&err);
    CHECK(jsonx_loadb("[[[[1]]]]", 9, 3, &err) == NULL);
    CHECK_INT(err.code, ERR_INVALID);
    err_release(&err);
    CHECK(jsonx_loadb("{\"a\":1,\"a\":2}", 13, 3, &err) == NULL);
    err_release(&err);
    json_t *v = jsonx_loadb("{\"a\":\"[[[[\"}", 12, 2, &err);
    CHECK(v != NULL);
    CHECK_STR(jsonx_str(v, "a"), "[[[[");
    json_decref(v);
    struct buf p = BUF_INIT;
    jsonx_pointer_append(&p, "a/b~c");
    CHECK_STR(buf_cstr(&p), "a~1b~0c");
    buf_release(&p);
}

/* Issue 17: one big anchor and many aliases to it made a 112 KB body a 400 MB spec; aliases
 * now count the bytes and the depth of what they expand to. */
static void test_yamljson_expansion(void)
{
    struct err err;
    err_init(&err);
    struct buf y = BUF_INIT;
    buf_puts(&y, "big: &big \"");
    for (int i = 0; i < 10000; i++)
        buf_putc(&y, 'x');
    buf_puts(&y, "\"\nmany:\n");
    for (int i = 0; i < 200; i++)
        buf_puts(&y, "  - *big\n");
    /* 10 KB of text, 2 MB once expanded: over a 1 MiB budget, within a 4 MiB one. */
    CHECK(yamljson_load(y.data, y.len, 32, 1 << 20, &err) == NULL);
    CHECK_INT(err.code, ERR_TOO_LARGE);
    CHECK_STR(err.reason, "max_bytes");
    err_release(&err);
    json_t *v = yamljson_load(y.data, y.len, 32, 4 << 20, &err);
    CHECK(v && json_array_size(json_object_get(v, "many")) == 200);
    json_decref(v);
    err_release(&err);
    CHECK(yamljson_load(y.data, y.len, 32, y.len - 1, &err) == NULL); /* the text alone */
    CHECK_INT(err.code, ERR_TOO_LARGE);
    err_release(&err);
    buf_release(&y);
    /* Depth: 3 levels anchored, aliased 3 levels down, is 6 deep (not 4). */
    const char *deep = "a: &d {b: {c: 1}}\nx: {y: {z: *d}}\n";
    v = yamljson_load(deep, strlen(deep), 6, 1 << 20, &err);
    CHECK(v != NULL);
    json_decref(v);
    CHECK(yamljson_load(deep, strlen(deep), 5, 1 << 20, &err) == NULL);
    CHECK_INT(err.code, ERR_INVALID);
    CHECK_STR(err.reason, "max_depth");
    err_release(&err);
}

static void test_yamljson(void)
{
    struct err err;
    err_init(&err);
    const char *doc = "name: demo\nnodes: 2\nratio: 0.5\nsuspend: false\nimage: \"123\"\n"
                      "labels: {team: ml}\ncommand: [python, -c, 'print(1)']\nempty:\n"
                      "base: &b {x: 1}\ncopy: *b\nstr: !!str 10\n";
    json_t *v = yamljson_load(doc, strlen(doc), 16, 1 << 20, &err);
    CHECK(v != NULL);
    if (v) {
        CHECK_INT(jsonx_int(v, "nodes", 0), 2);
        CHECK(json_is_real(json_object_get(v, "ratio")));
        CHECK(json_is_false(json_object_get(v, "suspend")));
        CHECK_STR(jsonx_str(v, "image"), "123");
        CHECK(json_is_null(json_object_get(v, "empty")));
        CHECK_INT(json_array_size(json_object_get(v, "command")), 3);
        CHECK_INT(jsonx_int(json_object_get(v, "copy"), "x", 0), 1);
        CHECK_STR(jsonx_str(v, "str"), "10");
    }
    json_decref(v);
    const char *bad = "a: [1, 2\n";
    CHECK(yamljson_load(bad, strlen(bad), 16, 1 << 20, &err) == NULL);
    CHECK_INT(err.code, ERR_INVALID);
    err_release(&err);
    const char *two = "a: 1\n---\nb: 2\n";
    CHECK(yamljson_load(two, strlen(two), 16, 1 << 20, &err) == NULL);
    err_release(&err);
    const char *dup = "a: 1\na: 2\n";
    CHECK(yamljson_load(dup, strlen(dup), 16, 1 << 20, &err) == NULL);
    err_release(&err);
    /* Billion laughs: each level doubles; the byte budget stops it quickly. */
    struct buf lol = BUF_INIT;
    buf_puts(&lol, "a0: &a0 [x, x]\n");
    for (int i = 1; i < 40; i++)
        buf_printf(&lol, "a%d: &a%d [*a%d, *a%d]\n", i, i, i - 1, i - 1);
    CHECK(yamljson_load(lol.data, lol.len, 64, 1 << 20, &err) == NULL);
    CHECK_INT(err.code, ERR_TOO_LARGE);
    CHECK_STR(err.reason, "max_bytes");
    err_release(&err);
    buf_release(&lol);
    test_yamljson_expansion();
}

static void test_crypto(void)
{
    char hex[SHA256_HEX_LEN];
    crypto_sha256_hex("abc", 3, hex);
    CHECK_STR(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    unsigned char mac[SHA256_LEN];
    crypto_hmac_sha256("key", 3, "The quick brown fox jumps over the lazy dog", 43, mac);
    crypto_hex(mac, SHA256_LEN, hex);
    CHECK_STR(hex, "f7bc83f430538424b13298e6aa6fb143ef4d59a14946175997479dbc2d1a3cd8");
    struct buf b = BUF_INIT, d = BUF_INIT;
    crypto_base64_encode(&b, "hello!?", 7);
    CHECK_STR(buf_cstr(&b), "aGVsbG8hPw==");
    CHECK_INT(crypto_base64_decode(&d, b.data, b.len), 0);
    CHECK_STR(buf_cstr(&d), "hello!?");
    buf_release(&b);
    buf_release(&d);
    char id[13];
    crypto_random_id(id, 12);
    CHECK_INT(strlen(id), 12);
    CHECK(id[0] >= 'a' && id[0] <= 'z');
}

static void *make_ids(void *arg)
{
    char(*ids)[SORTID_LEN + 1] = arg;
    for (int i = 0; i < 20000; i++)
        sortid_new(ids[i]);
    return NULL;
}

static int cmp_ids(const void *a, const void *b)
{
    return strcmp(a, b);
}

/* Job ids: valid Kubernetes names, in creation order as text, unique across threads. */
static void test_sortid(void)
{
    int64_t before = clock_now_ns() / NS_PER_MS;
    char prev[SORTID_LEN + 1] = "", id[SORTID_LEN + 1];
    for (int i = 0; i < 100000; i++) {
        sortid_new(id);
        if (strcmp(prev, id) >= 0) {
            CHECK(strcmp(prev, id) < 0);
            break;
        }
        memcpy(prev, id, sizeof(id));
    }
    CHECK_INT(strlen(id), SORTID_LEN);
    CHECK(id[0] >= 'a' && id[0] <= 'z');
    CHECK(strspn(id, "abcdefghijklmnopqrstuvwxyz0123456789") == SORTID_LEN);
    int64_t at = sortid_time_ms(id), after = clock_now_ns() / NS_PER_MS;
    CHECK(at >= before && at <= after);
    CHECK_INT(sortid_time_ms("Abc"), -1);
    CHECK_INT(sortid_time_ms("a0000000000!"), -1);
    CHECK_INT(sortid_time_ms("a00000000000"), 1577836800000LL); /* the epoch: 2020-01-01 */

    static char ids[40000][SORTID_LEN + 1];
    pthread_t t[2];
    for (int i = 0; i < 2; i++)
        pthread_create(&t[i], NULL, make_ids, ids[20000 * i]);
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], NULL);
    qsort(ids, 40000, SORTID_LEN + 1, cmp_ids);
    int dups = 0;
    for (int i = 1; i < 40000; i++)
        dups += strcmp(ids[i - 1], ids[i]) == 0;
    CHECK_INT(dups, 0);
}

static void count_word(void *ctx, const char *w, size_t n)
{
    buf_append(ctx, w, n);
    buf_putc(ctx, '|');
}

/* Found by the fuzzers: a time of 19 nines, a word split by a colour code. */
static void test_logrec_and_words(void)
{
    struct logrec r;
    const char *ok = "9223372036854775807 o- max\n", *big = "9999999999999999999 o- over\n";
    CHECK_INT(logrec_parse(ok, strlen(ok), &r), (long)strlen(ok));
    CHECK(r.time == INT64_MAX);
    CHECK_INT(logrec_parse(big, strlen(big), &r), -(long)strlen(big));
    struct buf w = BUF_INIT;
    const char *line = "\x1b[31mERROR\x1b[0m: wat\x1b[1mch\x1b[0m\x1b[2mdog fired";
    words_each(line, strlen(line), count_word, &w);
    CHECK_STR(buf_cstr(&w), "ERROR|watchdog|fired|");
    buf_release(&w);
    struct logmatch m;
    CHECK_INT(logmatch_parse(&m, "watchdog", NULL), 0);
    CHECK(logmatch_line(&m, line, strlen(line)));
    logmatch_release(&m);
}

/* Whether the phrase "<x>b" is found in a line of len bytes holding c then 'B' at offset at. */
static bool phrase_found(char x, char c, int len, int at)
{
    char q[8] = { '"', x, 'b', '"', '\0' }, line[40];
    struct logmatch m;
    if (logmatch_parse(&m, q, NULL) < 0)
        return false;
    memset(line, '.', (size_t)len);
    line[at] = c;
    line[at + 1] = 'B';
    bool found = logmatch_line(&m, line, (size_t)len);
    logmatch_release(&m);
    return found;
}

/* Search lowercases lines eight bytes at a time: every byte, at every position of lines of every
 * length up to 40, must fold as the byte-by-byte rule does ('A'..'Z' only, never other bytes). */
static void test_logmatch_case(void)
{
    int wrong = 0;
    for (int len = 2; len <= 40; len++)
        for (int at = 0; at + 2 <= len; at++)
            for (int c = 0x21; c < 0x100; c++) {
                bool letter = (c | 32) >= 'a' && (c | 32) <= 'z';
                int other = c ^ 32; /* the other case of a letter; of anything else, a byte */
                if (c == '"' || c == 0x7f)
                    continue;
                wrong += !phrase_found((char)(letter ? c | 32 : c), (char)c, len, at);
                if (!letter && other > 0x20 && other != '"' && other != 0x7f)
                    wrong += phrase_found((char)other, (char)c, len, at);
            }
    CHECK_INT(wrong, 0);
}

/* The block-wide search rules out only lines the term is not in, whole and within the line. */
static void test_logmatch_hits(void)
{
    struct logmatch m;
    CHECK_INT(logmatch_parse(&m, "watchdog \"fired\"", NULL), 0);
    /* Lines end at \x01; \x02 inside a word splits it (no line may match across it). */
    const char block[] = "watchdog fired\x01"
                         "wat\x02"
                         "chdog fired\x01"
                         "WATCHDOG FIRED\x01"
                         "wat\x1b[1mchdog fired\x01" /* an ANSI code inside the word */
                         "the watch\x01"
                         "dog fired"; /* the word across two lines */
    struct logmatch_hits h = { 0 };
    logmatch_hits_find(&m, block, sizeof(block) - 1, &h);
    const char *at = block;
    bool want[] = { true, false, true, true, false, false };
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
        size_t n = strcspn(at, "\x01");
        CHECK(logmatch_hits_line(&h, at, n) == want[i]);
        CHECK(!logmatch_line(&m, at, n) || want[i]); /* what it rules out cannot match */
        at += n + (at[n] ? 1 : 0);
    }
    const char *ansi = "wat\x1b[1mchdog fired";
    CHECK(logmatch_line(&m, ansi, strlen(ansi))); /* why that line is kept */
    logmatch_hits_release(&h);
    logmatch_release(&m);
}

/* A record is one line, whatever its arguments hold (issue 17: a path's %0a forged a line). */
static void test_log_one_line(void)
{
    int fds[2];
    CHECK(pipe(fds) == 0);
    int saved = dup(2);
    dup2(fds[1], 2);
    log_info("hook %s: no trigger %s", "r1", "x\n2026-01-01T00:00:00Z error forged\r\x7f");
    dup2(saved, 2);
    close(saved);
    close(fds[1]);
    char got[512] = "";
    ssize_t n = read(fds[0], got, sizeof(got) - 1);
    close(fds[0]);
    got[n > 0 ? n : 0] = '\0';
    char *nl = strchr(got, '\n');
    CHECK(nl && nl[1] == '\0');
    CHECK(strstr(got, "no trigger x\\x0a2026-01-01T00:00:00Z error forged\\x0d\\x7f\n") != NULL);
}

int main(void)
{
    test_err();
    test_buf();
    test_clock();
    test_parse();
    test_utf8_and_escape();
    test_jsonx();
    test_yamljson();
    test_crypto();
    test_sortid();
    test_logrec_and_words();
    test_logmatch_case();
    test_logmatch_hits();
    test_log_one_line();
    return check_done();
}
