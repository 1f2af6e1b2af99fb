/*
 * err: the one error convention. A function that can fail returns 0 / -1 (or NULL) and takes
 * `struct err *err` last; err_set() records the first error and returns -1, later errors are
 * ignored, so the cause closest to the failure wins. `err` may be NULL when the caller does not
 * care. Validation problems carry one entry per bad field, keyed by JSON pointer.
 *
 * Ownership: struct err lives in the caller's storage (err_init/err_release); fields are owned by
 * the err and freed by err_release().
 */
#ifndef TY_ERR_H
#define TY_ERR_H

#include <stddef.h>

enum err_code {
    ERR_NONE = 0,
    ERR_INVALID,      /* malformed request: bad parameter, bad JSON (400) */
    ERR_VALIDATION,   /* well-formed but wrong: fields listed (422) */
    ERR_UNAUTHORIZED, /* no or bad credentials (401) */
    ERR_FORBIDDEN,    /* credentials lack the scope (403) */
    ERR_NOT_FOUND,    /* (404) */
    ERR_METHOD,       /* the path exists, not with this method (405) */
    ERR_CONFLICT,     /* state or idempotency conflict (409) */
    ERR_GONE,         /* resource or position no longer available (410) */
    ERR_TOO_LARGE,    /* body or range over a limit (413) */
    ERR_UNSUPPORTED,  /* media type not accepted (415) */
    ERR_RATE_LIMITED, /* (429) */
    ERR_UNAVAILABLE,  /* not ready, disk full, draining (503) */
    ERR_TIMEOUT,      /* (504) */
    ERR_UPSTREAM,     /* a dependency (Kubernetes, a webhook receiver) failed (502) */
    ERR_IO,           /* file or database I/O (500) */
    ERR_INTERNAL,     /* a bug (500) */
};

#define ERR_MSG_MAX    512
#define ERR_FIELDS_MAX 64

struct err_field {
    char *pointer; /* JSON pointer of the bad field, e.g. "/resources/gpus" */
    char *message;
};

struct err {
    enum err_code code;
    char msg[ERR_MSG_MAX];
    struct err_field *fields;
    size_t nfields;
    /* Optional details a layer above may show: a Kubernetes Status reason, a retry delay. */
    char reason[64];
    int retry_after;
};

void err_init(struct err *err);
void err_release(struct err *err);

/* Records code and message unless an error is already set. Always returns -1. */
int err_set(struct err *err, enum err_code code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Adds a field problem (at most ERR_FIELDS_MAX are kept); sets ERR_VALIDATION if no error yet,
 * else the field says what the error set first (a 403's field) is about. Returns -1. */
int err_field(struct err *err, const char *pointer, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Prefixes the message of a set error with context ("opening db: ..."). Returns -1. */
int err_wrap(struct err *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Moves src into dst (dst must be empty or unset); src is left initialised. */
void err_move(struct err *dst, struct err *src);

const char *err_code_name(enum err_code code);

static inline int err_is_set(const struct err *err)
{
    return err && err->code != ERR_NONE;
}

#endif
