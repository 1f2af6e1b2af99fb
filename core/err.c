/*
 * err: first-error-wins error records. No allocation happens for plain errors; field lists are
 * heap-allocated and released by err_release(). Not thread-safe: an err belongs to one caller.
 */
#include "core/err.h"

#include <stdarg.h>

#include "core/xalloc.h"

/* Not a memset of the whole struct: a request initialises and releases tens of errs, and the
 * message buffers are only ever read as strings. */
void err_init(struct err *err)
{
    err->code = ERR_NONE;
    err->msg[0] = '\0';
    err->fields = NULL;
    err->nfields = 0;
    err->reason[0] = '\0';
    err->retry_after = 0;
}

void err_release(struct err *err)
{
    if (!err)
        return;
    for (size_t i = 0; i < err->nfields; i++) {
        free(err->fields[i].pointer);
        free(err->fields[i].message);
    }
    free(err->fields);
    err_init(err);
}

int err_set(struct err *err, enum err_code code, const char *fmt, ...)
{
    if (!err || err->code != ERR_NONE)
        return -1;
    err->code = code;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
    va_end(ap);
    return -1;
}

int err_field(struct err *err, const char *pointer, const char *fmt, ...)
{
    if (!err)
        return -1;
    if (err->code == ERR_NONE) {
        err->code = ERR_VALIDATION;
        snprintf(err->msg, sizeof(err->msg), "the request has invalid fields");
    }
    if (err->nfields >= ERR_FIELDS_MAX)
        return -1; /* fields may name what any error is about: a 422's, a 403's */
    char message[ERR_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(message, sizeof(message), fmt, ap);
    va_end(ap);
    err->fields = xrealloc(err->fields, (err->nfields + 1) * sizeof(*err->fields));
    err->fields[err->nfields].pointer = xstrdup(pointer);
    err->fields[err->nfields].message = xstrdup(message);
    err->nfields++;
    return -1;
}

int err_wrap(struct err *err, const char *fmt, ...)
{
    if (!err || err->code == ERR_NONE)
        return -1;
    char prefix[ERR_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(prefix, sizeof(prefix), fmt, ap);
    va_end(ap);
    char joined[ERR_MSG_MAX];
    snprintf(joined, sizeof(joined), "%s: %s", prefix, err->msg);
    memcpy(err->msg, joined, sizeof(err->msg));
    return -1;
}

void err_move(struct err *dst, struct err *src)
{
    if (!dst) {
        err_release(src);
        return;
    }
    if (dst->code != ERR_NONE) {
        err_release(src);
        return;
    }
    *dst = *src;
    err_init(src);
}

const char *err_code_name(enum err_code code)
{
    static const char *const names[] = {
        [ERR_NONE] = "none",
        [ERR_INVALID] = "invalid",
        [ERR_VALIDATION] = "validation",
        [ERR_UNAUTHORIZED] = "unauthorized",
        [ERR_FORBIDDEN] = "forbidden",
        [ERR_NOT_FOUND] = "not-found",
        [ERR_METHOD] = "method-not-allowed",
        [ERR_CONFLICT] = "conflict",
        [ERR_GONE] = "gone",
        [ERR_TOO_LARGE] = "too-large",
        [ERR_UNSUPPORTED] = "unsupported-media-type",
        [ERR_RATE_LIMITED] = "rate-limited",
        [ERR_UNAVAILABLE] = "unavailable",
        [ERR_TIMEOUT] = "timeout",
        [ERR_UPSTREAM] = "upstream",
        [ERR_IO] = "io",
        [ERR_INTERNAL] = "internal",
    };
    if ((size_t)code < sizeof(names) / sizeof(names[0]) && names[code])
        return names[code];
    return "unknown";
}
