/*
 * mpatch: merge-patch diff and apply (see mpatch.h). Pure; arrays are values (replaced
 * whole), as RFC 7386 has it.
 */
#include "tests/kube/sim/mpatch.h"

#include <string.h>

static bool server_owned(const char *key)
{
    static const char *const owned[] = {
        "uid",           "resourceVersion", "creationTimestamp", "generation",
        "managedFields", "selfLink",        "deletionTimestamp", "deletionGracePeriodSeconds"
    };
    for (size_t i = 0; i < sizeof(owned) / sizeof(owned[0]); i++)
        if (!strcmp(key, owned[i]))
            return true;
    return false;
}

static json_t *diff(const json_t *from, const json_t *to, int depth, bool meta)
{
    json_t *out = json_object();
    const char *k;
    json_t *v;
    json_object_foreach ((json_t *)to, k, v) {
        if ((depth == 0 && (!strcmp(k, "apiVersion") || !strcmp(k, "kind"))) ||
            (meta && server_owned(k)))
            continue;
        json_t *old = json_object_get(from, k);
        if (json_is_null(v) && (!old || json_is_null(old)))
            continue;
        if (old && json_equal(old, v))
            continue;
        if (json_is_object(v) && json_is_object(old)) {
            json_t *sub = diff(old, v, depth + 1, depth == 0 && !strcmp(k, "metadata"));
            if (json_object_size(sub))
                json_object_set_new(out, k, sub);
            else
                json_decref(sub);
        } else {
            json_object_set(out, k, v);
        }
    }
    json_object_foreach ((json_t *)from, k, v) {
        if ((depth == 0 && (!strcmp(k, "apiVersion") || !strcmp(k, "kind"))) ||
            (meta && server_owned(k)) || json_is_null(v))
            continue;
        json_t *now = json_object_get(to, k);
        if (!now)
            json_object_set_new(out, k, json_null());
    }
    return out;
}

json_t *mpatch_diff(const json_t *from, const json_t *to)
{
    if (!json_is_object(from) || !json_is_object(to))
        return json_object();
    return diff(from, to, 0, false);
}

void mpatch_apply(json_t *target, const json_t *patch)
{
    const char *k;
    json_t *v;
    json_object_foreach ((json_t *)patch, k, v) {
        if (json_is_null(v)) {
            json_object_del(target, k);
            continue;
        }
        json_t *cur = json_object_get(target, k);
        if (json_is_object(v) && json_is_object(cur)) {
            mpatch_apply(cur, v);
        } else if (json_is_object(v)) {
            json_t *fresh = json_object();
            mpatch_apply(fresh, v);
            json_object_set_new(target, k, fresh);
        } else {
            json_object_set_new(target, k, json_deep_copy(v));
        }
    }
}

bool mpatch_empty(const json_t *patch)
{
    return json_object_size(patch) == 0;
}
