/*
 * body: request bodies as documents. JSON and YAML both become a jansson value here, so every
 * handler after this point sees one representation and reports errors by JSON pointer.
 *
 * Both are read as UTF-8, the only charset accepted: a body declared as another one is refused
 * rather than misread. The document's limits hold after YAML alias expansion: --max-json-depth
 * for its nesting and --max-body for its bytes (a YAML alias counts what it expands to), and a
 * refusal names the limit.
 */
#include <ctype.h>
#include <stdint.h>
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

/* The charset parameter of a Content-Type into out ("" when absent), unquoted. */
static void charset_of(const char *ctype, char *out, size_t cap)
{
    out[0] = '\0';
    for (const char *p = strchr(ctype, ';'); p; p = strchr(p + 1, ';')) {
        const char *k = p + 1;
        while (*k == ' ' || *k == '\t')
            k++;
        if (strncasecmp(k, "charset=", 8) != 0)
            continue;
        const char *v = k + 8;
        bool quoted = *v == '"';
        v += quoted;
        size_t n = 0;
        while (v[n] && v[n] != ';' && v[n] != '"' && !isspace((unsigned char)v[n]) && n + 1 < cap)
            n++;
        memcpy(out, v, n);
        out[n] = '\0';
        return;
    }
}

static bool charset_ok(const char *charset)
{
    return !charset[0] || strcasecmp(charset, "utf-8") == 0 || strcasecmp(charset, "utf8") == 0 ||
           strcasecmp(charset, "us-ascii") == 0;
}

/* Answers a parse failure; a limit passed is named as its setting. */
static void refuse(struct request *req, struct response *res, const struct err *err)
{
    const struct api_limits *l = &req->api->limits;
    if (strcmp(err->reason, "max_depth") == 0)
        problem_respond_limit(req, res, err, "max-json-depth", l->max_json_depth);
    else if (strcmp(err->reason, "max_bytes") == 0)
        problem_respond_limit(req, res, err, "max-body", (long long)l->max_body_bytes);
    else
        problem_respond(req, res, err);
}

json_t *request_body_doc(struct request *req, struct response *res)
{
    const char *ctype = request_header(req, "Content-Type");
    const struct api_limits *l = &req->api->limits;
    char charset[32] = "";
    if (ctype)
        charset_of(ctype, charset, sizeof(charset));
    struct err err;
    err_init(&err);
    json_t *doc = NULL;
    if (req->body_len == 0) {
        err_set(&err, ERR_INVALID, "the request body is empty");
    } else if (!charset_ok(charset)) {
        err_set(&err, ERR_UNSUPPORTED, "charset %s is not accepted; send the body as UTF-8",
                charset);
    } else if (!ctype || media_is(ctype, "application/json")) {
        doc = jsonx_loadb(req->body, req->body_len, l->max_json_depth, &err);
    } else if (is_yaml(ctype)) {
        size_t max = l->max_body_bytes ? l->max_body_bytes : SIZE_MAX; /* 0: tests' bare api */
        doc = yamljson_load(req->body, req->body_len, l->max_json_depth, max, &err);
    } else {
        err_set(&err, ERR_UNSUPPORTED,
                "Content-Type %s is not accepted; send application/json or application/yaml",
                ctype);
    }
    if (!doc)
        refuse(req, res, &err);
    err_release(&err);
    return doc;
}
