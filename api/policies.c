/*
 * policies: the cluster policy routes (admin scope). A policy is a name, the grants of
 * api/policy_grants.h and the tokens it governs; PUT creates or replaces one whole (its grants
 * checked, every token an API token's and governed by no other policy). The policy named
 * "default" governs every other non-admin token and names none; until one is stored, the
 * built-in default stands in for it, and reads show it with "builtin": true. Changes apply to
 * submissions from then on (jobs already accepted keep running).
 */
#include "api/handlers.h"
#include "api/policy_grants.h"
#include "core/clock.h"
#include "core/jsonx.h"
#include "core/xalloc.h"
#include "job/names.h"
#include "store/policies.h"

#define TOKENS_MAX   1000 /* tokens one policy names */
#define TOKEN_ID_MAX 64
#define DEFAULT_NAME "default"

/* A policy as the API shows it: its grants, then who and when. Steals grants. */
static json_t *policy_json(const char *name, json_t *grants, const struct policy_def *p)
{
    json_t *out = json_pack("{s:s,s:b}", "name", name, "builtin", p == NULL);
    json_object_update(out, grants);
    json_decref(grants);
    json_t *tokens = json_array();
    for (size_t i = 0; p && i < p->ntokens; i++)
        json_array_append_new(tokens, json_string(p->tokens[i]));
    json_object_set_new(out, "tokens", tokens);
    json_object_set_new(out, "created_by", json_string(p ? p->created_by : ""));
    jsonx_set_time(out, "created_at", p ? p->created_at : 0);
    jsonx_set_time(out, "updated_at", p ? p->updated_at : 0);
    return out;
}

static json_t *stored_json(const struct policy_def *p)
{
    json_t *grants = json_loads(p->grants, 0, NULL);
    return policy_json(p->name, grants ? grants : json_object(), p);
}

static json_t *builtin_json(struct api *api)
{
    return policy_json(DEFAULT_NAME, policy_grants_default(&api->cluster), NULL);
}

void policies_list(struct request *req, struct response *res)
{
    struct err err;
    err_init(&err);
    struct policy_def **defs = NULL;
    size_t n = 0;
    if (store_policy_list(req->api->store, &defs, &n, &err) < 0) {
        problem_respond(req, res, &err);
        err_release(&err);
        return;
    }
    json_t *items = json_array();
    bool has_default = false;
    for (size_t i = 0; i < n; i++) {
        has_default = has_default || strcmp(defs[i]->name, DEFAULT_NAME) == 0;
        json_array_append_new(items, stored_json(defs[i]));
    }
    if (!has_default)
        json_array_append_new(items, builtin_json(req->api));
    policy_defs_free(defs, n);
    response_json_new(res, 200, json_pack("{s:o}", "items", items));
}

void policies_get(struct request *req, struct response *res)
{
    struct err err;
    err_init(&err);
    const char *name = req->params[0];
    struct policy_def *p = store_policy_get(req->api->store, name, &err);
    if (p)
        response_json_new(res, 200, stored_json(p));
    else if (err.code == ERR_NOT_FOUND && strcmp(name, DEFAULT_NAME) == 0)
        response_json_new(res, 200, builtin_json(req->api));
    else
        problem_respond(req, res, &err);
    policy_def_free(p);
    err_release(&err);
}

/* The "tokens" member of a PUT body: distinct token ids, pointers into the body. */
static void check_tokens(const json_t *tokens, const char *name, struct err *err)
{
    if (!tokens)
        return;
    if (!json_is_array(tokens) || json_array_size(tokens) > TOKENS_MAX) {
        err_field(err, "/tokens", "must be an array of at most %d token ids", TOKENS_MAX);
        return;
    }
    if (json_array_size(tokens) && strcmp(name, DEFAULT_NAME) == 0)
        err_field(err, "/tokens",
                  "must be empty: the default policy governs every token no other policy names");
    size_t i;
    json_t *t;
    json_array_foreach(tokens, i, t)
    {
        char ptr[32];
        snprintf(ptr, sizeof(ptr), "/tokens/%zu", i);
        const char *id = json_string_value(t);
        bool again = false;
        for (size_t k = 0; id && k < i && !again; k++)
            again = json_equal(t, json_array_get(tokens, k));
        if (!id || !*id || strlen(id) > TOKEN_ID_MAX || strlen(id) != json_string_length(t))
            err_field(err, ptr, "must be a token id such as \"tok_0123456789abcdef\"");
        else if (again)
            err_field(err, ptr, "names a token twice");
    }
}

/* Reads a PUT body into the grants text and the token list (borrowed from doc). */
static int put_request(const json_t *doc, const char *name, char **grants_text,
                       const char ***tokens, size_t *ntokens, struct err *err)
{
    if (!json_is_object(doc))
        return err_field(err, "/", "a policy must be a JSON object");
    const char *why = names_dns1123_label(name);
    if (why)
        err_field(err, "/name", "the name in the path %s", why);
    const json_t *list = json_object_get(doc, "tokens");
    check_tokens(list, name, err);
    json_t *grants = json_copy((json_t *)doc);
    json_object_del(grants, "tokens");
    policy_grants_validate(grants, err);
    if (!err_is_set(err)) {
        *grants_text = jsonx_dumps(grants);
        *ntokens = json_array_size(list);
        *tokens = xcalloc(*ntokens ? *ntokens : 1, sizeof(**tokens));
        for (size_t i = 0; i < *ntokens; i++)
            (*tokens)[i] = json_string_value(json_array_get(list, i));
    }
    json_decref(grants);
    return err_is_set(err) ? -1 : 0;
}

void policies_put(struct request *req, struct response *res)
{
    json_t *doc = request_body_doc(req, res);
    if (!doc)
        return;
    struct err err;
    err_init(&err);
    char *grants = NULL;
    const char **tokens = NULL;
    struct policy_put put = { .name = req->params[0],
                              .actor = req->who.name,
                              .request_id = req->request_id,
                              .now = clock_now_ns() };
    struct policy_def *p = NULL;
    if (put_request(doc, put.name, &grants, &tokens, &put.ntokens, &err) == 0) {
        put.grants = grants;
        put.tokens = tokens;
        if (store_policy_put(req->api->store, &put, &err) == 0)
            p = store_policy_get(req->api->store, put.name, &err);
    }
    if (p)
        response_json_new(res, put.created ? 201 : 200, stored_json(p));
    else
        problem_respond(req, res, &err);
    policy_def_free(p);
    free(grants);
    free(tokens);
    err_release(&err);
    json_decref(doc);
}

void policies_delete(struct request *req, struct response *res)
{
    struct err err;
    err_init(&err);
    if (store_policy_delete(req->api->store, req->params[0], req->who.name, req->request_id, &err) <
        0)
        problem_respond(req, res, &err);
    else
        res->status = 204;
    err_release(&err);
}
