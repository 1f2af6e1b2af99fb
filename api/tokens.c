/*
 * tokens: managing API tokens over the API (admin scope) and reading the audit trail. The
 * secret is returned once, at creation; afterwards only its name and id exist.
 */
#include "api/auth.h"
#include "api/handlers.h"
#include "core/clock.h"
#include "core/jsonx.h"
#include "job/names.h"
#include "core/parse.h"
#include "store/tokens.h"

static json_t *token_json(const struct token *t)
{
    json_t *o = json_pack("{s:s,s:s,s:s,s:s}", "id", t->id, "name", t->name, "scope", t->scope,
                          "created_by", t->created_by);
    jsonx_set_time(o, "created_at", t->created_at);
    jsonx_set_time(o, "expires_at", t->expires_at);
    jsonx_set_time(o, "revoked_at", t->revoked_at);
    jsonx_set_time(o, "last_used_at", t->last_used_at);
    return o;
}

/* Reads {name, scope, expires_in | expires_at}; 0 or -1 with field errors in err. */
static int token_request(const json_t *doc, const char **name, enum scope *scope,
                         int64_t *expires_at, struct err *err)
{
    *name = jsonx_str(doc, "name");
    const char *scope_text = jsonx_str(doc, "scope");
    const char *in = jsonx_str(doc, "expires_in");
    const char *at = jsonx_str(doc, "expires_at");
    *expires_at = 0;
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)doc, k, v)
    {
        if (strcmp(k, "name") && strcmp(k, "scope") && strcmp(k, "expires_in") &&
            strcmp(k, "expires_at")) {
            char ptr[300];
            snprintf(ptr, sizeof(ptr), "/%s", k);
            err_field(err, ptr, "is not a known field");
        }
    }
    if (!*name || names_dns1123_subdomain(*name))
        err_field(err, "/name",
                  "is required: lowercase letters, digits, '-' and '.' (e.g. "
                  "\"ci-pipeline\")");
    if (!scope_text || scope_parse(scope_text, scope) < 0 || *scope == SCOPE_WORKER)
        err_field(err, "/scope", "must be \"read\", \"submit\" or \"admin\"");
    int64_t ns;
    if (in && (parse_duration(in, &ns) < 0 || ns <= 0))
        err_field(err, "/expires_in", "must be a duration such as \"90d\" or \"12h\"");
    else if (in)
        *expires_at = clock_now_ns() + ns;
    if (at && clock_parse(at, expires_at) < 0)
        err_field(err, "/expires_at", "must be an RFC 3339 time");
    else if (at && *expires_at <= clock_now_ns())
        err_field(err, "/expires_at", "is in the past: the token could never be used");
    return err_is_set(err) ? -1 : 0;
}

void tokens_create(struct request *req, struct response *res)
{
    json_t *doc = request_body_doc(req, res);
    if (!doc)
        return;
    struct err err;
    err_init(&err);
    const char *name;
    enum scope scope = SCOPE_READ;
    int64_t expires_at;
    char secret[TOKEN_SECRET_MAX], id[32];
    if (!json_is_object(doc)) {
        err_field(&err, "/", "must be an object");
    } else if (token_request(doc, &name, &scope, &expires_at, &err) == 0 &&
               auth_token_create(req->api->store, name, scope, 0, expires_at, req->who.name, secret,
                                 id, &err) == 0) {
        char target[64];
        snprintf(target, sizeof(target), "token/%s", id);
        struct audit_entry e = { .actor = req->who.name,
                                 .action = "token.create",
                                 .target = target,
                                 .request_id = req->request_id };
        store_audit_add(req->api->store, &e, NULL);
        json_t *out =
            json_pack("{s:s,s:s,s:s,s:s,s:s}", "id", id, "name", name, "scope", scope_name(scope),
                      "token", secret, "note", "store the token now: it is not shown again");
        jsonx_set_time(out, "expires_at", expires_at);
        response_json_new(res, 201, out);
    }
    if (err_is_set(&err))
        problem_respond(req, res, &err);
    err_release(&err);
    json_decref(doc);
}

void tokens_list(struct request *req, struct response *res)
{
    struct err err;
    err_init(&err);
    struct token **tokens;
    size_t n;
    store_tokens_flush(req->api->store, NULL); /* show the latest uses, not 10 s old ones */
    if (store_token_list(req->api->store, &tokens, &n, &err) < 0) {
        problem_respond(req, res, &err);
        err_release(&err);
        return;
    }
    json_t *items = json_array();
    for (size_t i = 0; i < n; i++)
        json_array_append_new(items, token_json(tokens[i]));
    tokens_free(tokens, n);
    response_json_new(res, 200, json_pack("{s:o}", "items", items));
}

void tokens_revoke(struct request *req, struct response *res)
{
    struct err err;
    err_init(&err);
    if (store_token_revoke(req->api->store, req->params[0], clock_now_ns(), &err) < 0) {
        problem_respond(req, res, &err);
    } else {
        char target[160];
        snprintf(target, sizeof(target), "token/%s", req->params[0]);
        struct audit_entry e = { .actor = req->who.name,
                                 .action = "token.revoke",
                                 .target = target,
                                 .request_id = req->request_id };
        store_audit_add(req->api->store, &e, NULL);
        res->status = 204;
    }
    err_release(&err);
}

void audit_list(struct request *req, struct response *res)
{
    int limit = 100;
    int64_t before = 0;
    const char *l = request_query(req, "limit"), *b = request_query(req, "before");
    if ((l && parse_int(l, 1, 1000, &limit) < 0) ||
        (b && parse_int64(b, 1, INT64_MAX, &before) < 0)) {
        problem(req, res, ERR_INVALID, "limit must be 1 to 1000 and before a sequence number");
        return;
    }
    struct err err;
    err_init(&err);
    json_t *items =
        store_audit_list(req->api->store, request_query(req, "target"), before, limit, &err);
    if (items)
        response_json_new(res, 200, json_pack("{s:o}", "items", items));
    else
        problem_respond(req, res, &err);
    err_release(&err);
}
