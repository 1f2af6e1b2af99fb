/* policy: what a submitter may run (see policy.h). Pure: reads the api's settings only. */
#include "api/policy.h"

#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "core/jsonx.h"

/* A 403 that names the field, by JSON pointer, in the message and in the problem's errors. */
static int forbid(struct err *err, const char *pointer, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int forbid(struct err *err, const char *pointer, const char *fmt, ...)
{
    char msg[ERR_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    err_set(err, ERR_FORBIDDEN, "%s: %s", pointer, msg);
    return err_field(err, pointer, "%s", msg);
}

/* Whether path is dir itself or lies under it, as text after normalising both ("a/./b",
 * "a//b" and ".." are refused by the spec already: names_abs_path). */
static bool under(const char *path, const char *dir, size_t dlen)
{
    while (dlen > 1 && dir[dlen - 1] == '/')
        dlen--;
    return strncmp(path, dir, dlen) == 0 && (path[dlen] == '\0' || path[dlen] == '/');
}

/* Whether path lies under one of the comma-separated roots. */
static bool under_any(const char *path, const char *roots)
{
    for (const char *p = roots; p && *p;) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        if (len > 0 && p[0] == '/' && under(path, p, len))
            return true;
        p = comma ? comma + 1 : NULL;
    }
    return false;
}

static int check_local(const struct api *api, enum scope scope, const struct spec_view *v,
                       struct err *err)
{
    bool admin = scope == SCOPE_ADMIN;
    if (api->local_sandbox_why && api->local_unsandboxed_refused && !admin)
        return forbid(err, "/executor",
                      "local ranks cannot be sandboxed on this host (%s): only admin tokens "
                      "may run local jobs",
                      api->local_sandbox_why);
    const char *ckpt = jsonx_str(v->checkpoint, "path");
    if (!ckpt)
        return 0;
    char data[PATH_MAX];
    const char *dir = api->data_dir && realpath(api->data_dir, data) ? data : api->data_dir;
    if (dir && (under(ckpt, dir, strlen(dir)) || under(dir, ckpt, strlen(ckpt))))
        return forbid(err, "/checkpoint/path",
                      "must not be the daemon's data directory or contain it");
    if (!admin && !under_any(ckpt, api->local_checkpoint_roots))
        return forbid(err, "/checkpoint/path",
                      "only admin tokens choose a local checkpoint path outside "
                      "--local-checkpoint-roots (%s); leave it out to get the job's own",
                      api->local_checkpoint_roots && *api->local_checkpoint_roots
                          ? api->local_checkpoint_roots
                          : "none set");
    return 0;
}

int policy_check(const struct api *api, enum scope scope, const struct spec_view *v,
                 struct err *err)
{
    if (strcmp(v->executor, "local") == 0)
        return check_local(api, scope, v, err);
    return 0;
}
