/*
 * templates: the job template routes. A template is checked when saved, as far as it can be
 * without values: its variables (jobtemplate_validate) and then the job spec it renders to with
 * placeholder values (spec_validate), so a template that can never make a valid job is refused
 * at once. Submitting from a template renders it with the caller's values, applies overrides
 * (a JSON merge patch, RFC 7386) and goes through jobs_submit_request, the path POST /v1/jobs
 * takes. Templates are stored as given; they hold no secrets.
 */
#include "api/handlers.h"
#include "api/jobs.h"
#include "job/spec.h"
#include "core/clock.h"
#include "core/jsonx.h"
#include "job/names.h"
#include "trigger/jobtemplate.h"
#include "store/templates.h"

static const char *const builtin_placeholders[][2] = {
    { "S3_BUCKET", "bucket" },
    { "S3_KEY", "key" },
    { "S3_URI", "s3://bucket/key" },
    { "OBJECT_SIZE", "1" },
    { "EVENT_TIME", "2026-01-01T00:00:00.000Z" },
    { "S3_VERSION_ID", "v" },
    { "S3_ETAG", "e" },
};

/* Copies err's field problems into out with prefix before each pointer. */
static void prefix_fields(struct err *out, const struct err *in, const char *prefix)
{
    for (size_t i = 0; i < in->nfields; i++) {
        char ptr[512];
        snprintf(ptr, sizeof(ptr), "%s%s", prefix, in->fields[i].pointer);
        err_field(out, ptr, "%s", in->fields[i].message);
    }
    if (in->nfields == 0)
        err_set(out, in->code, "%s", in->msg);
}

/* The job spec a template renders to with a placeholder for every variable, validated. */
static int check_spec(struct api *api, const json_t *tmpl, struct err *err)
{
    struct jobtemplate_values vals;
    jobtemplate_values_init(&vals);
    for (size_t i = 0; i < sizeof(builtin_placeholders) / sizeof(builtin_placeholders[0]); i++)
        jobtemplate_values_set(&vals, builtin_placeholders[i][0], builtin_placeholders[i][1]);
    const char *name;
    json_t *decl;
    json_object_foreach(json_object_get(tmpl, "variables"), name, decl)
        jobtemplate_values_set(&vals, name, "x");
    struct err e;
    err_init(&e);
    json_t *spec = jobtemplate_render(tmpl, &vals, &e);
    struct spec_options opts = { .limits = &api->limits.spec,
                                 .default_executor = api->default_executor,
                                 .local_enabled = api->local_enabled,
                                 .kubernetes_enabled = api->kubernetes_enabled,
                                 .local_slots = api->local_slots,
                                 .local_gpus = api->local_gpus };
    json_t *canonical = spec ? spec_validate(spec, &opts, &e) : NULL;
    if (!canonical)
        prefix_fields(err, &e, "/spec");
    json_decref(canonical);
    json_decref(spec);
    err_release(&e);
    jobtemplate_values_release(&vals);
    return err_is_set(err) ? -1 : 0;
}

/* Reads {name?, description?, spec} into put; name_in_path for PUT. */
static int template_request(struct api *api, const json_t *doc, const char *name_in_path,
                            struct template_put *put, char **spec_text, struct err *err)
{
    const char *k;
    json_t *v;
    if (!json_is_object(doc))
        return err_field(err, "/", "must be an object {name, description, spec}");
    json_object_foreach((json_t *)doc, k, v)
    {
        if (strcmp(k, "name") && strcmp(k, "description") && strcmp(k, "spec")) {
            char ptr[160];
            snprintf(ptr, sizeof(ptr), "/%.100s", k);
            err_field(err, ptr, "is not a known field");
        }
    }
    put->name = name_in_path ? name_in_path : jsonx_str(doc, "name");
    if (name_in_path && jsonx_str(doc, "name") && strcmp(jsonx_str(doc, "name"), name_in_path))
        err_field(err, "/name", "a template cannot be renamed; create a new one");
    else if (!put->name || names_dns1123_subdomain(put->name))
        err_field(err, "/name", "is required: lowercase letters, digits, '-' and '.'");
    put->description = jsonx_str(doc, "description");
    json_t *d = json_object_get(doc, "description");
    if (d && !json_is_string(d))
        err_field(err, "/description", "must be a string");
    json_t *tmpl = json_object_get(doc, "spec");
    if (!json_is_object(tmpl)) {
        err_field(err, "/spec", "is required: the job spec, with ${VARIABLES}");
        return -1;
    }
    struct err e;
    err_init(&e);
    if (jobtemplate_validate(tmpl, &e) < 0)
        prefix_fields(err, &e, "/spec");
    err_release(&e);
    if (!err_is_set(err))
        check_spec(api, tmpl, err);
    if (err_is_set(err))
        return -1;
    *spec_text = jsonx_dumps(tmpl);
    put->spec = *spec_text;
    return 0;
}

static json_t *template_json(const struct template_def *t)
{
    json_t *spec = json_loads(t->spec, 0, NULL);
    json_t *o = json_pack("{s:s,s:s,s:o,s:i,s:s}", "name", t->name, "description", t->description,
                          "spec", spec ? spec : json_object(), "triggers", t->ntriggers,
                          "created_by", t->created_by);
    jsonx_set_time(o, "created_at", t->created_at);
    jsonx_set_time(o, "updated_at", t->updated_at);
    return o;
}

static void respond_template(struct request *req, struct response *res, int status,
                             const char *name)
{
    struct err err;
    err_init(&err);
    struct template_def *t = store_template_get(req->api->store, name, &err);
    if (t)
        response_json_new(res, status, template_json(t));
    else
        problem_respond(req, res, &err);
    template_def_free(t);
    err_release(&err);
}

static void save(struct request *req, struct response *res, bool create)
{
    json_t *doc = request_body_doc(req, res);
    if (!doc)
        return;
    struct err err;
    err_init(&err);
    char *spec_text = NULL;
    struct template_put put = { .actor = req->who.name,
                                .request_id = req->request_id,
                                .now = clock_now_ns() };
    struct template_def *old =
        create ? NULL : store_template_get(req->api->store, req->params[0], &err);
    int rc = !create && !old ? -1
                             : template_request(req->api, doc, create ? NULL : req->params[0], &put,
                                                &spec_text, &err);
    if (rc == 0)
        rc = create ? store_template_insert(req->api->store, &put, &err)
                    : store_template_update(req->api->store, &put, &err);
    if (rc == 0)
        respond_template(req, res, create ? 201 : 200, put.name);
    else
        problem_respond(req, res, &err);
    template_def_free(old);
    free(spec_text);
    json_decref(doc);
    err_release(&err);
}

void templates_create(struct request *req, struct response *res)
{
    save(req, res, true);
}

void templates_update(struct request *req, struct response *res)
{
    save(req, res, false);
}

void templates_list(struct request *req, struct response *res)
{
    struct err err;
    err_init(&err);
    struct template_def **t;
    size_t n;
    if (store_template_list(req->api->store, &t, &n, &err) < 0) {
        problem_respond(req, res, &err);
        err_release(&err);
        return;
    }
    json_t *items = json_array();
    for (size_t i = 0; i < n; i++)
        json_array_append_new(items, template_json(t[i]));
    template_defs_free(t, n);
    response_json_new(res, 200, json_pack("{s:o}", "items", items));
}

void templates_get(struct request *req, struct response *res)
{
    respond_template(req, res, 200, req->params[0]);
}

void templates_delete(struct request *req, struct response *res)
{
    struct err err;
    err_init(&err);
    if (store_template_delete(req->api->store, req->params[0], req->who.name, req->request_id,
                              &err) < 0)
        problem_respond(req, res, &err);
    else
        res->status = 204;
    err_release(&err);
}

/* RFC 7386: objects merge member by member, null removes, anything else replaces. */
static json_t *merge_patch(json_t *target, const json_t *patch)
{
    if (!json_is_object(patch)) {
        json_decref(target);
        return json_deep_copy(patch);
    }
    if (!json_is_object(target)) {
        json_decref(target);
        target = json_object();
    }
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)patch, k, v)
    {
        if (json_is_null(v))
            json_object_del(target, k);
        else
            json_object_set_new(target, k, merge_patch(json_incref(json_object_get(target, k)), v));
    }
    return target;
}

/* Renders the template named in the path with the body's values and overrides; NULL with
 * err. New reference. */
static json_t *render(struct request *req, const json_t *doc, struct err *err)
{
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)doc, k, v)
    {
        if (strcmp(k, "values") && strcmp(k, "overrides")) {
            char ptr[160];
            snprintf(ptr, sizeof(ptr), "/%.100s", k);
            err_field(err, ptr, "is not a known field (values, overrides)");
        }
    }
    json_t *overrides = json_object_get(doc, "overrides");
    if (overrides && !json_is_object(overrides))
        err_field(err, "/overrides", "must be an object merged into the job spec");
    struct jobtemplate_values vals;
    jobtemplate_values_init(&vals);
    json_t *values = json_object_get(doc, "values");
    if (values)
        jobtemplate_values_from_json(&vals, values, "/values", err);
    struct template_def *t =
        err_is_set(err) ? NULL : store_template_get(req->api->store, req->params[0], err);
    json_t *tmpl = t ? json_loads(t->spec, 0, NULL) : NULL;
    json_t *spec = tmpl ? jobtemplate_render(tmpl, &vals, err) : NULL;
    if (spec && overrides)
        spec = merge_patch(spec, overrides);
    json_decref(tmpl);
    template_def_free(t);
    jobtemplate_values_release(&vals);
    return spec;
}

void templates_jobs_create(struct request *req, struct response *res)
{
    json_t *doc = request_body_doc(req, res);
    if (!doc)
        return;
    struct err err;
    err_init(&err);
    json_t *spec = json_is_object(doc) ? render(req, doc, &err) : NULL;
    if (!json_is_object(doc))
        err_field(&err, "/", "must be an object {values, overrides}");
    if (spec)
        jobs_submit_request(req, res, spec);
    else
        problem_respond(req, res, &err);
    json_decref(spec);
    json_decref(doc);
    err_release(&err);
}
