/*
 * store/rows: the one read loop. Every statement in store/ that yields rows is stepped here:
 * sql_rows() calls a function per row; sql_array() and sql_json_rows() are that loop collecting
 * into a C array or a JSON array, with the clean-up on failure done once here instead of in each
 * module. A statement is always reset on the way out, so its read lock ends with the loop.
 * Runs on the caller's thread and connection; nothing here keeps state.
 */
#include <string.h>

#include "core/xalloc.h"
#include "store/internal.h"

int sql_rows(struct conn *c, sqlite3_stmt *s, const char *what, sql_row_fn row, void *ctx,
             struct err *err)
{
    if (!s)
        return -1;
    int rc = SQLITE_DONE, stop = 0;
    while (stop == 0 && (rc = sqlite3_step(s)) == SQLITE_ROW)
        stop = row(ctx, s, err);
    sqlite3_reset(s);
    if (stop < 0)
        return -1;
    /* a row that stopped the loop leaves rc at SQLITE_ROW: not a failure */
    return rc == SQLITE_ROW || rc == SQLITE_DONE ? 0 : sql_fail(c, err, what);
}

int sql_one(struct conn *c, sqlite3_stmt *s, const char *noun, const char *key, sql_fill_fn fill,
            void *out, struct err *err)
{
    if (!s)
        return -1;
    int rc = sql_step_one(c, s, err, noun, key);
    if (rc == 0) {
        fill(out, s);
        sqlite3_reset(s);
    }
    return rc;
}

struct array {
    char *items;
    size_t n, cap, size;
    sql_fill_fn fill;
};

static int array_row(void *ctx, sqlite3_stmt *s, struct err *err)
{
    (void)err;
    struct array *a = ctx;
    if (a->n == a->cap) {
        a->cap = a->cap ? a->cap * 2 : 8;
        a->items = xrealloc(a->items, a->cap * a->size);
    }
    char *elem = a->items + a->n * a->size;
    memset(elem, 0, a->size);
    a->fill(elem, s);
    a->n++;
    return 0;
}

int sql_array(struct conn *c, sqlite3_stmt *s, const char *what, size_t size, sql_fill_fn fill,
              sql_drop_fn drop, void *out, size_t *n, struct err *err)
{
    struct array a = { .size = size, .fill = fill };
    int rc = sql_rows(c, s, what, array_row, &a, err);
    if (rc < 0) {
        for (size_t i = 0; drop && i < a.n; i++)
            drop(a.items + i * size);
        free(a.items);
        a.items = NULL;
        a.n = 0;
    }
    /* out is the caller's `T *`: copied as bytes, it keeps its own type */
    void *items = a.items;
    memcpy(out, &items, sizeof(items));
    *n = a.n;
    return rc;
}

void sql_fill_int(void *elem, sqlite3_stmt *s)
{
    *(int64_t *)elem = col_int(s, 0);
}

struct json_rows {
    json_t *arr;
    sql_json_fn to_json;
    void *ctx;
};

static int json_row(void *ctx, sqlite3_stmt *s, struct err *err)
{
    struct json_rows *j = ctx;
    json_t *v = j->to_json(j->ctx, s, err);
    if (!v) /* without an error: a row jansson refused (text that is not UTF-8) is left out */
        return err_is_set(err) ? -1 : 0;
    json_array_append_new(j->arr, v);
    return 0;
}

json_t *sql_json_rows(struct conn *c, sqlite3_stmt *s, const char *what, sql_json_fn to_json,
                      void *ctx, struct err *err)
{
    struct json_rows j = { .arr = json_array(), .to_json = to_json, .ctx = ctx };
    if (sql_rows(c, s, what, json_row, &j, err) < 0) {
        json_decref(j.arr);
        return NULL;
    }
    return j.arr;
}
