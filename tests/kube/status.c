/*
 * status: maps trainyard's struct err onto Kubernetes Status objects. The reason strings and
 * codes are those of metav1.StatusReason; messages are built by the callers in the API server's
 * own words. Pure functions; thread-safe.
 */
#include "tests/kube/status.h"

#include <stdarg.h>

#include "core/buf.h"

static const struct {
    const char *reason;
    int code;
} reasons[] = {
    { "Unauthorized", 401 },
    { "Forbidden", 403 },
    { "NotFound", 404 },
    { "AlreadyExists", 409 },
    { "Conflict", 409 },
    { "Gone", 410 },
    { "Expired", 410 },
    { "Invalid", 422 },
    { "BadRequest", 400 },
    { "MethodNotAllowed", 405 },
    { "NotAcceptable", 406 },
    { "RequestEntityTooLarge", 413 },
    { "UnsupportedMediaType", 415 },
    { "TooManyRequests", 429 },
    { "InternalError", 500 },
    { "ServerTimeout", 500 },
    { "ServiceUnavailable", 503 },
    { "Timeout", 504 },
};

static const char *code_reason(enum err_code code)
{
    switch (code) {
    case ERR_INVALID:
        return "BadRequest";
    case ERR_VALIDATION:
        return "Invalid";
    case ERR_UNAUTHORIZED:
        return "Unauthorized";
    case ERR_FORBIDDEN:
        return "Forbidden";
    case ERR_NOT_FOUND:
        return "NotFound";
    case ERR_CONFLICT:
        return "Conflict";
    case ERR_GONE:
        return "Expired";
    case ERR_TOO_LARGE:
        return "RequestEntityTooLarge";
    case ERR_UNSUPPORTED:
        return "UnsupportedMediaType";
    case ERR_RATE_LIMITED:
        return "TooManyRequests";
    case ERR_UNAVAILABLE:
        return "ServiceUnavailable";
    case ERR_TIMEOUT:
        return "Timeout";
    default:
        return "InternalError";
    }
}

const char *status_reason(const struct err *err)
{
    return err->reason[0] ? err->reason : code_reason(err->code);
}

int status_code(const struct err *err)
{
    const char *reason = status_reason(err);
    for (size_t i = 0; i < sizeof(reasons) / sizeof(reasons[0]); i++)
        if (!strcmp(reasons[i].reason, reason))
            return reasons[i].code;
    return 500;
}

json_t *status_new(int code, const char *reason, const char *message)
{
    return json_pack("{s:s, s:s, s:{}, s:s, s:s, s:s, s:i}", "kind", "Status", "apiVersion", "v1",
                     "metadata", "status", "Failure", "message", message, "reason", reason, "code",
                     code);
}

static json_t *details(const struct err *err, const struct resource *res, const char *name)
{
    json_t *d = json_object();
    if (name && name[0])
        json_object_set_new(d, "name", json_string(name));
    if (res) {
        json_object_set_new(d, "group", json_string(res->group));
        /* AlreadyExists and NotFound name the resource (plural), Invalid the kind */
        json_object_set_new(d, "kind",
                            json_string(err->code == ERR_VALIDATION ? res->kind : res->plural));
    }
    if (err->nfields) {
        json_t *causes = json_array();
        for (size_t i = 0; i < err->nfields; i++)
            json_array_append_new(
                causes, json_pack("{s:s, s:s, s:s}", "reason", "FieldValueInvalid", "message",
                                  err->fields[i].message, "field", err->fields[i].pointer));
        json_object_set_new(d, "causes", causes);
    }
    if (err->retry_after > 0)
        json_object_set_new(d, "retryAfterSeconds", json_integer(err->retry_after));
    if (json_object_size(d) == 0) {
        json_decref(d);
        return NULL;
    }
    return d;
}

json_t *status_from_err(const struct err *err, const struct resource *res, const char *name)
{
    struct buf msg = BUF_INIT;
    if (err->code == ERR_VALIDATION && err->nfields) {
        /* `PyTorchJob.kubeflow.org "x" is invalid: [f: msg, g: msg]` as the server words it */
        buf_printf(&msg, "%s%s%s \"%s\" is invalid: ", res ? res->kind : "object",
                   res && res->group[0] ? "." : "", res ? res->group : "", name ? name : "");
        if (err->nfields > 1)
            buf_putc(&msg, '[');
        for (size_t i = 0; i < err->nfields; i++)
            buf_printf(&msg, "%s%s: %s", i ? ", " : "", err->fields[i].pointer,
                       err->fields[i].message);
        if (err->nfields > 1)
            buf_putc(&msg, ']');
    } else {
        buf_puts(&msg, err->msg);
    }
    json_t *st = status_new(status_code(err), status_reason(err), buf_cstr(&msg));
    json_t *d = details(err, res, name);
    if (d)
        json_object_set_new(st, "details", d);
    buf_release(&msg);
    return st;
}

int status_set(struct err *err, enum err_code code, const char *reason, const char *fmt, ...)
{
    if (err_is_set(err))
        return -1;
    char msg[ERR_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    err_set(err, code, "%s", msg);
    if (err)
        snprintf(err->reason, sizeof(err->reason), "%s", reason);
    return -1;
}
