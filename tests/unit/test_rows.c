/*
 * test_rows: the store's one read loop (store/rows.c). Every list the API returns goes through
 * it, so what a user relies on is here: every row in order, a row callback that stops or fails
 * ends the loop, a SQLite error half-way is reported (not a short list passed off as whole),
 * and what was built before a failure is freed (ASan's leak check sees it) and not returned.
 */
#include <stdlib.h>
#include <string.h>

#include "core/xalloc.h"
#include "store/internal.h"
#include "tests/unit/check.h"
#include "tests/unit/store_fixture.h"

/* Rows x = 1..5; with `fail_at` > 0, row fail_at raises an integer overflow while stepping. */
static sqlite3_stmt *numbers(struct conn *c, int fail_at)
{
    char sql[256];
    snprintf(sql, sizeof(sql),
             "WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM n WHERE x < 5)"
             " SELECT CASE WHEN x = %d THEN abs(x - %d - 9223372036854775807 - 1) ELSE x END,"
             " 'row ' || x FROM n",
             fail_at, fail_at);
    sqlite3_stmt *s = NULL;
    if (sqlite3_prepare_v2(c->db, sql, -1, &s, NULL) != SQLITE_OK)
        fprintf(stderr, "prepare: %s\n", sqlite3_errmsg(c->db));
    return s;
}

struct seen {
    int64_t sum;
    int rows, stop_at, fail_at;
};

static int count_row(void *ctx, sqlite3_stmt *s, struct err *err)
{
    struct seen *v = ctx;
    v->rows++;
    v->sum += col_int(s, 0);
    if (v->rows == v->fail_at)
        return err_set(err, ERR_CONFLICT, "row %d refused", v->rows);
    return v->rows == v->stop_at;
}

static void test_rows(struct conn *c)
{
    struct err err;
    err_init(&err);
    sqlite3_stmt *s = numbers(c, 0);
    struct seen all = { 0 };
    CHECK_INT(sql_rows(c, s, "counting", count_row, &all, &err), 0);
    CHECK_INT(all.rows, 5);
    CHECK_INT(all.sum, 15);
    CHECK(!sqlite3_stmt_busy(s)); /* reset: its read lock is gone */

    struct seen early = { .stop_at = 2 };
    CHECK_INT(sql_rows(c, s, "counting", count_row, &early, &err), 0);
    CHECK_INT(early.rows, 2);
    CHECK(!sqlite3_stmt_busy(s));
    CHECK(!err_is_set(&err));

    struct seen refused = { .fail_at = 3 };
    CHECK_INT(sql_rows(c, s, "counting", count_row, &refused, &err), -1);
    CHECK_INT(refused.rows, 3);
    CHECK_INT(err.code, ERR_CONFLICT);
    CHECK_STR(err.msg, "row 3 refused");
    CHECK(!sqlite3_stmt_busy(s));
    sqlite3_finalize(s);
    err_release(&err);

    err_init(&err);
    s = numbers(c, 4);
    struct seen broken = { 0 };
    CHECK_INT(sql_rows(c, s, "counting", count_row, &broken, &err), -1);
    CHECK_INT(broken.rows, 3);
    CHECK_INT(err.code, ERR_IO);
    CHECK(strncmp(err.msg, "counting: ", 10) == 0);
    sqlite3_finalize(s);
    err_release(&err);

    err_init(&err);
    err_set(&err, ERR_IO, "preparing a statement: gone");
    CHECK_INT(sql_rows(c, NULL, "counting", count_row, &all, &err), -1);
    CHECK_STR(err.msg, "preparing a statement: gone");
    err_release(&err);
}

static int drops;

static void text_fill(void *slot, sqlite3_stmt *s)
{
    *(char **)slot = xstrdup(col_text(s, 1));
}

static void text_drop(void *slot)
{
    drops++;
    free(*(char **)slot);
}

struct pair {
    int64_t x;
    char *text;
};

static void pair_fill(void *elem, sqlite3_stmt *s)
{
    struct pair *p = elem;
    p->x = col_int(s, 0);
    p->text = xstrdup(col_text(s, 1));
}

static void test_array(struct conn *c)
{
    struct err err;
    err_init(&err);
    sqlite3_stmt *s = numbers(c, 0);
    char **texts;
    size_t n;
    CHECK_INT(sql_array(c, s, "listing", sizeof(*texts), text_fill, text_drop, &texts, &n, &err),
              0);
    CHECK_INT(n, 5);
    CHECK_STR(n == 5 ? texts[0] : "", "row 1");
    CHECK_STR(n == 5 ? texts[4] : "", "row 5");
    for (size_t i = 0; i < n; i++)
        free(texts[i]);
    free(texts);

    struct pair *pairs;
    CHECK_INT(sql_array(c, s, "listing", sizeof(*pairs), pair_fill, NULL, &pairs, &n, &err), 0);
    CHECK_INT(n, 5);
    CHECK_INT(n == 5 ? pairs[2].x : 0, 3);
    CHECK_STR(n == 5 ? pairs[2].text : "", "row 3");
    for (size_t i = 0; i < n; i++)
        free(pairs[i].text);
    free(pairs);
    sqlite3_finalize(s);

    /* No rows: an empty list, not a failure. */
    CHECK(sqlite3_prepare_v2(c->db, "SELECT 1, 'x' WHERE 0", -1, &s, NULL) == SQLITE_OK);
    char *before = NULL;
    texts = &before; /* it must come back NULL */
    CHECK_INT(sql_array(c, s, "listing", sizeof(*texts), text_fill, text_drop, &texts, &n, &err),
              0);
    CHECK(texts == NULL);
    CHECK_INT(n, 0);
    sqlite3_finalize(s);

    /* A failure on row 4: the three strings made are dropped, nothing is handed back. */
    s = numbers(c, 4);
    drops = 0;
    CHECK_INT(sql_array(c, s, "listing", sizeof(*texts), text_fill, text_drop, &texts, &n, &err),
              -1);
    CHECK_INT(drops, 3);
    CHECK(texts == NULL);
    CHECK_INT(n, 0);
    CHECK_INT(err.code, ERR_IO);
    sqlite3_finalize(s);
    err_release(&err);
}

static json_t *row_json(void *ctx, sqlite3_stmt *s, struct err *err)
{
    int64_t x = col_int(s, 0);
    if (x == *(int64_t *)ctx)
        return NULL; /* left out */
    if (x == -*(int64_t *)ctx) {
        err_set(err, ERR_IO, "row %lld broken", (long long)x);
        return NULL;
    }
    return json_integer(x);
}

static void test_json(struct conn *c)
{
    struct err err;
    err_init(&err);
    sqlite3_stmt *s = numbers(c, 0);
    int64_t skip = 2;
    json_t *arr = sql_json_rows(c, s, "listing", row_json, &skip, &err);
    char *text = arr ? json_dumps(arr, JSON_COMPACT) : NULL;
    CHECK_STR(text, "[1,3,4,5]");
    free(text);
    json_decref(arr);
    CHECK(!err_is_set(&err));

    int64_t fail = -3; /* row 3 fails */
    CHECK(sql_json_rows(c, s, "listing", row_json, &fail, &err) == NULL);
    CHECK_STR(err.msg, "row 3 broken");
    CHECK(!sqlite3_stmt_busy(s));
    sqlite3_finalize(s);
    err_release(&err);
}

static void test_one(struct conn *c)
{
    struct err err;
    err_init(&err);
    sqlite3_stmt *s = NULL;
    CHECK(sqlite3_prepare_v2(c->db, "SELECT x, 'row ' || x FROM (SELECT ?1 AS x) WHERE x > 0", -1,
                             &s, NULL) == SQLITE_OK);
    char *text = NULL;
    sqlite3_bind_int(s, 1, 7);
    CHECK_INT(sql_one(c, s, "thing", "seven", text_fill, &text, &err), 0);
    CHECK_STR(text, "row 7");
    CHECK(!sqlite3_stmt_busy(s));
    free(text);
    text = NULL;
    sqlite3_bind_int(s, 1, 0);
    CHECK_INT(sql_one(c, s, "thing", "zero", text_fill, &text, &err), -1);
    CHECK(text == NULL);
    CHECK_INT(err.code, ERR_NOT_FOUND);
    CHECK_STR(err.msg, "no thing 'zero'");
    sqlite3_finalize(s);
    err_release(&err);
}

int main(void)
{
    struct fixture f;
    struct store *st = fixture_open(&f);
    CHECK(st != NULL);
    if (!st)
        return check_done();
    struct err err;
    err_init(&err);
    struct conn *c = store_reader(st, &err);
    CHECK(c != NULL);
    if (c) {
        test_rows(c);
        test_array(c);
        test_json(c);
        test_one(c);
    }
    err_release(&err);
    fixture_close(&f);
    return check_done();
}
