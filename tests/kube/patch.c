/*
 * patch: RFC 7386 and RFC 6902 on jansson values. JSON pointers are resolved with the RFC 6901
 * escapes (~0, ~1); "-" appends to an array. Pure functions; thread-safe.
 */
#include "tests/kube/patch.h"

#include "core/buf.h"
#include "core/parse.h"

void patch_merge(json_t **target, const json_t *patch)
{
    if (!json_is_object(patch)) {
        json_decref(*target);
        *target = json_deep_copy(patch);
        return;
    }
    if (!json_is_object(*target)) {
        json_decref(*target);
        *target = json_object();
    }
    const char *key;
    json_t *v;
    json_object_foreach ((json_t *)patch, key, v) {
        if (json_is_null(v)) {
            json_object_del(*target, key);
            continue;
        }
        json_t *cur = json_incref(json_object_get(*target, key));
        if (!cur)
            cur = json_null();
        patch_merge(&cur, v);
        json_object_set_new(*target, key, cur);
    }
}

/* Splits a pointer into its parent container and last token; NULL when the parent is absent. */
static json_t *resolve_parent(json_t *doc, const char *ptr, struct buf *last)
{
    if (ptr[0] != '/')
        return NULL;
    json_t *cur = doc;
    const char *p = ptr + 1;
    for (;;) {
        buf_reset(last);
        while (*p && *p != '/') {
            if (p[0] == '~' && (p[1] == '0' || p[1] == '1')) {
                buf_putc(last, p[1] == '0' ? '~' : '/');
                p += 2;
            } else {
                buf_putc(last, *p++);
            }
        }
        if (!*p)
            return cur;
        p++;
        int idx;
        if (json_is_object(cur))
            cur = json_object_get(cur, buf_cstr(last));
        else if (json_is_array(cur) && parse_int(buf_cstr(last), 0, 1 << 30, &idx) == 0)
            cur = json_array_get(cur, (size_t)idx);
        else
            return NULL;
        if (!cur)
            return NULL;
    }
}

static json_t *child(json_t *parent, const char *tok)
{
    int idx;
    if (json_is_object(parent))
        return json_object_get(parent, tok);
    if (json_is_array(parent) && parse_int(tok, 0, 1 << 30, &idx) == 0)
        return json_array_get(parent, (size_t)idx);
    return NULL;
}

static int op_add(json_t *parent, const char *tok, json_t *value)
{
    int idx;
    if (json_is_object(parent))
        return json_object_set_new(parent, tok, value);
    if (json_is_array(parent) && !strcmp(tok, "-"))
        return json_array_append_new(parent, value);
    if (json_is_array(parent) && parse_int(tok, 0, (int)json_array_size(parent), &idx) == 0)
        return json_array_insert_new(parent, (size_t)idx, value);
    json_decref(value);
    return -1;
}

static int op_remove(json_t *parent, const char *tok)
{
    int idx;
    if (json_is_object(parent))
        return json_object_del(parent, tok);
    if (json_is_array(parent) && parse_int(tok, 0, 1 << 30, &idx) == 0)
        return json_array_remove(parent, (size_t)idx);
    return -1;
}

static int apply_op(json_t **doc, const json_t *op, struct err *err)
{
    const char *name = json_string_value(json_object_get(op, "op"));
    const char *path = json_string_value(json_object_get(op, "path"));
    const char *from = json_string_value(json_object_get(op, "from"));
    json_t *value = json_object_get(op, "value");
    struct buf tok = BUF_INIT, ftok = BUF_INIT;
    int rc = -1;
    if (!name || !path)
        goto bad;
    if (!path[0]) { /* the whole document */
        if (!strcmp(name, "replace") || !strcmp(name, "add")) {
            json_decref(*doc);
            *doc = json_deep_copy(value);
            rc = 0;
        }
        goto out;
    }
    json_t *parent = resolve_parent(*doc, path, &tok);
    if (!parent)
        goto bad;
    json_t *cur = child(parent, buf_cstr(&tok));
    if (!strcmp(name, "test")) {
        if (!cur || !json_equal(cur, value)) {
            err_set(err, ERR_VALIDATION,
                    "the server rejected our request due to an error in our "
                    "request: test operation failed at %s",
                    path);
            goto out;
        }
        rc = 0;
    } else if (!strcmp(name, "remove") || !strcmp(name, "replace")) {
        if (!cur || op_remove(parent, buf_cstr(&tok)) < 0)
            goto bad;
        rc = !strcmp(name, "replace") ? op_add(parent, buf_cstr(&tok), json_deep_copy(value)) : 0;
    } else if (!strcmp(name, "add") && value) {
        rc = op_add(parent, buf_cstr(&tok), json_deep_copy(value));
    } else if ((!strcmp(name, "copy") || !strcmp(name, "move")) && from) {
        json_t *fparent = resolve_parent(*doc, from, &ftok);
        json_t *src = fparent ? child(fparent, buf_cstr(&ftok)) : NULL;
        if (!src)
            goto bad;
        json_t *copy = json_deep_copy(src);
        if (!strcmp(name, "move"))
            op_remove(fparent, buf_cstr(&ftok));
        rc = op_add(parent, buf_cstr(&tok), copy);
    }
    if (rc == 0)
        goto out;
bad:
    err_set(err, ERR_INVALID, "the server rejected our request due to an error in our request");
    rc = -1;
out:
    buf_release(&tok);
    buf_release(&ftok);
    return rc;
}

int patch_json(json_t **target, const json_t *ops, struct err *err)
{
    if (!json_is_array(ops))
        return err_set(err, ERR_INVALID,
                       "json: cannot unmarshal object into Go value of type "
                       "jsonpatch.Patch");
    json_t *doc = json_deep_copy(*target);
    size_t i;
    json_t *op;
    json_array_foreach (ops, i, op) {
        if (apply_op(&doc, op, err) < 0) {
            json_decref(doc);
            return -1;
        }
    }
    json_decref(*target);
    *target = doc;
    return 0;
}
