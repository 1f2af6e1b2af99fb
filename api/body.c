/*
 * body: request bodies as documents. JSON and YAML both become a jansson value here, so every
 * handler after this point sees one representation and reports errors by JSON pointer.
 */
#include <strings.h>

#include "api/api.h"
#include "core/jsonx.h"
#include "core/yamljson.h"

/* Compares the media type part of a Content-Type header ("application/json; charset=utf-8"). */
static bool media_is(const char *ctype, const char *media)
{
    size_t n = strlen(media);
    return strncasecmp(ctype, media, n) == 0 &&
           (ctype[n] == '\0' || ctype[n] == ';' || ctype[n] == ' ');
}

static bool is_yaml(const char *ctype)
{
    return media_is(ctype, "application/yaml") || media_is(ctype, "application/x-yaml") ||
           media_is(ctype, "text/yaml") || media_is(ctype, "text/x-yaml");
}

json_t *request_body_doc(struct request *req, struct response *res)
{
    const char *ctype = request_header(req, "Content-Type");
    struct err err;
    err_init(&err);
    json_t *doc = NULL;
    if (req->body_len == 0) {
        err_set(&err, ERR_INVALID, "the request body is empty");
    } else if (!ctype || media_is(ctype, "application/json")) {
        doc = jsonx_loadb(req->body, req->body_len, req->api->limits.max_json_depth, &err);
    } else if (is_yaml(ctype)) {
        doc = yamljson_load(req->body, req->body_len, req->api->limits.max_json_depth, &err);
    } else {
        err_set(&err, ERR_UNSUPPORTED,
                "Content-Type %s is not accepted; send application/json or application/yaml",
                ctype);
    }
    if (!doc)
        problem_respond(req, res, &err);
    err_release(&err);
    return doc;
}
