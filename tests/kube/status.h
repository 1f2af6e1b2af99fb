/*
 * status: Kubernetes `kind: Status` error bodies, shaped like k8s.io/apimachinery's
 * api/errors (reason, code, message, details{name, group, kind, causes, retryAfterSeconds}).
 */
#ifndef KS_STATUS_H
#define KS_STATUS_H

#include <jansson.h>

#include "core/err.h"
#include "tests/kube/resource.h"

/* HTTP code for an error: err->reason wins when set ("AlreadyExists" -> 409), else the code. */
int status_code(const struct err *err);
/* The Kubernetes reason for an error ("NotFound", "Invalid", ...). */
const char *status_reason(const struct err *err);
/* A Status body for err. res and name fill details (either may be NULL). Validation errors
 * (err->fields) become details.causes and an "X is invalid: ..." message. New reference. */
json_t *status_from_err(const struct err *err, const struct resource *res, const char *name);
/* A Status of code/reason/message without details. New reference. */
json_t *status_new(int code, const char *reason, const char *message);
/* Sets err to a Kubernetes reason and code-like err_code; returns -1. */
int status_set(struct err *err, enum err_code code, const char *reason, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

#endif
