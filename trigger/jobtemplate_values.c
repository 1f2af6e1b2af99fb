/*
 * jobtemplate_values: the values a template is rendered with (struct jobtemplate_values: the
 * built-ins of an upload event, user values from JSON) and the syntax of variable names. It
 * does not substitute anything (jobtemplate_subst.c). A values struct belongs to its caller,
 * who releases it; names and values are copied in. No shared state; thread-safe.
 */
#include <ctype.h>

#include "core/xalloc.h"
#include "trigger/jobtemplate_internal.h"

static const char *const builtins[] = { "S3_BUCKET",  "S3_KEY",        "S3_URI", "OBJECT_SIZE",
                                        "EVENT_TIME", "S3_VERSION_ID", "S3_ETAG" };

void jobtemplate_values_init(struct jobtemplate_values *v)
{
    memset(v, 0, sizeof(*v));
}

void jobtemplate_values_release(struct jobtemplate_values *v)
{
    for (size_t i = 0; i < v->n; i++) {
        free(v->names[i]);
        free(v->values[i]);
    }
    free(v->names);
    free(v->values);
    jobtemplate_values_init(v);
}

const char *jobtemplate_value_of(const struct jobtemplate_values *v, const char *name, size_t nlen)
{
    for (size_t i = 0; v && i < v->n; i++)
        if (strlen(v->names[i]) == nlen && memcmp(v->names[i], name, nlen) == 0)
            return v->values[i];
    return NULL;
}

void jobtemplate_values_set(struct jobtemplate_values *v, const char *name, const char *value)
{
    for (size_t i = 0; i < v->n; i++) {
        if (strcmp(v->names[i], name) == 0) {
            free(v->values[i]);
            v->values[i] = xstrdup(value);
            return;
        }
    }
    v->names = xrealloc(v->names, (v->n + 1) * sizeof(*v->names));
    v->values = xrealloc(v->values, (v->n + 1) * sizeof(*v->values));
    v->names[v->n] = xstrdup(name);
    v->values[v->n++] = xstrdup(value);
}

void jobtemplate_values_from_event(struct jobtemplate_values *v, const struct s3event *e)
{
    char num[24] = "";
    char *uri = xasprintf("s3://%s/%s", e->bucket, e->key);
    if (e->size >= 0)
        snprintf(num, sizeof(num), "%lld", (long long)e->size);
    jobtemplate_values_set(v, "S3_BUCKET", e->bucket);
    jobtemplate_values_set(v, "S3_KEY", e->key);
    jobtemplate_values_set(v, "S3_URI", uri);
    jobtemplate_values_set(v, "OBJECT_SIZE", num);
    jobtemplate_values_set(v, "EVENT_TIME", e->event_time);
    jobtemplate_values_set(v, "S3_VERSION_ID", e->version_id);
    jobtemplate_values_set(v, "S3_ETAG", e->etag);
    free(uri);
}

bool jobtemplate_name_char(char c, bool first)
{
    return c == '_' || isalpha((unsigned char)c) || (!first && isdigit((unsigned char)c));
}

bool jobtemplate_valid_name(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > VARNAME_MAX)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!jobtemplate_name_char(s[i], i == 0))
            return false;
    return true;
}

bool jobtemplate_is_builtin(const char *name, size_t nlen)
{
    for (size_t i = 0; i < sizeof(builtins) / sizeof(builtins[0]); i++)
        if (strlen(builtins[i]) == nlen && memcmp(builtins[i], name, nlen) == 0)
            return true;
    return false;
}

int jobtemplate_values_from_json(struct jobtemplate_values *v, const json_t *obj, const char *where,
                                 struct err *err)
{
    const char *key;
    json_t *val;
    if (!json_is_object(obj))
        return err_field(err, where, "must be an object of variable names to values");
    json_object_foreach((json_t *)obj, key, val)
    {
        char ptr[160];
        snprintf(ptr, sizeof(ptr), "%s/%.100s", where, key);
        char num[32];
        const char *text = num;
        if (json_is_string(val))
            text = json_string_value(val);
        else if (json_is_integer(val))
            snprintf(num, sizeof(num), "%lld", (long long)json_integer_value(val));
        else if (json_is_boolean(val))
            snprintf(num, sizeof(num), "%s", json_is_true(val) ? "true" : "false");
        else
            text = NULL;
        if (!jobtemplate_valid_name(key))
            err_field(err, ptr, "not a variable name ([A-Za-z_][A-Za-z0-9_]*)");
        else if (!text || (json_is_string(val) && strlen(text) != json_string_length(val)))
            err_field(err, ptr, "must be a string, number or boolean without NUL");
        else if (strlen(text) > VALUE_MAX)
            err_field(err, ptr, "longer than %d bytes", VALUE_MAX);
        else
            jobtemplate_values_set(v, key, text);
    }
    return err_is_set(err) ? -1 : 0;
}
