/*
 * discovery: legacy (non-aggregated) discovery documents built from the resource table.
 * kubectl 1.32 asks for aggregated discovery (apidiscovery.k8s.io/v2) but falls back to these
 * when the answer's Content-Type is plain application/json, which is what we send. The OpenAPI
 * v3 documents carry only what kubectl's field-validation check reads: for each resource a PATCH
 * operation with x-kubernetes-group-version-kind and the fieldValidation query parameter.
 * Stateless; thread-safe.
 */
#include "tests/kube/discovery.h"

#include "tests/kube/resource.h"
#include "tests/kube/status.h"

static json_t *verbs_for(const struct resource *r)
{
    if (r->table == TABLE_EVENT || r->table == TABLE_POD || r->custom)
        return json_pack("[s,s,s,s,s,s,s,s]", "create", "delete", "deletecollection", "get", "list",
                         "patch", "update", "watch");
    return json_pack("[s,s,s,s,s,s,s]", "create", "delete", "get", "list", "patch", "update",
                     "watch");
}

static json_t *words(const char *list)
{
    json_t *a = json_array();
    char word[64];
    for (const char *p = list; *p;) {
        size_t n = strcspn(p, " ");
        snprintf(word, sizeof(word), "%.*s", (int)n, p);
        if (n)
            json_array_append_new(a, json_string(word));
        p += n + (p[n] == ' ');
    }
    return a;
}

json_t *discovery_resource_list(const char *group, const char *version)
{
    json_t *list = json_array();
    for (size_t i = 0; i < resource_count; i++) {
        const struct resource *r = &resource_table[i];
        if (strcmp(r->group, group) || strcmp(r->version, version))
            continue;
        json_t *e =
            json_pack("{s:s, s:s, s:b, s:s, s:o}", "name", r->plural, "singularName", r->singular,
                      "namespaced", r->namespaced, "kind", r->kind, "verbs", verbs_for(r));
        if (r->short_names[0])
            json_object_set_new(e, "shortNames", words(r->short_names));
        if (r->table == TABLE_POD || r->table == TABLE_SERVICE) /* the built-in "all" */
            json_object_set_new(e, "categories", json_pack("[s]", "all"));
        json_array_append_new(list, e);
        json_t *subs = words(r->subresources);
        size_t j;
        json_t *sub;
        json_array_foreach (subs, j, sub) {
            char name[128];
            const char *s = json_string_value(sub);
            snprintf(name, sizeof(name), "%s/%s", r->plural, s);
            bool log = !strcmp(s, "log");
            json_array_append_new(
                list, json_pack("{s:s, s:s, s:b, s:s, s:o}", "name", name, "singularName", "",
                                "namespaced", r->namespaced, "kind", r->kind, "verbs",
                                log ? json_pack("[s]", "get")
                                    : json_pack("[s,s,s]", "get", "patch", "update")));
        }
        json_decref(subs);
    }
    char gv[128];
    snprintf(gv, sizeof(gv), "%s%s%s", group, group[0] ? "/" : "", version);
    return json_pack("{s:s, s:s, s:s, s:o}", "kind", "APIResourceList", "apiVersion", "v1",
                     "groupVersion", gv, "resources", list);
}

static json_t *api_group(const char *group)
{
    const char *version = NULL;
    for (size_t i = 0; i < resource_count && !version; i++)
        if (!strcmp(resource_table[i].group, group))
            version = resource_table[i].version;
    if (!version)
        return NULL;
    char gv[128];
    snprintf(gv, sizeof(gv), "%s/%s", group, version);
    json_t *v = json_pack("{s:s, s:s}", "groupVersion", gv, "version", version);
    return json_pack("{s:s, s:s, s:s, s:[O], s:o}", "kind", "APIGroup", "apiVersion", "v1", "name",
                     group, "versions", v, "preferredVersion", v);
}

static json_t *api_group_list(void)
{
    json_t *groups = json_array();
    for (size_t i = 0; i < resource_count; i++) {
        const char *g = resource_table[i].group;
        bool seen = !g[0];
        for (size_t j = 0; j < i && !seen; j++)
            seen = !strcmp(resource_table[j].group, g);
        if (!seen) {
            json_t *ag = api_group(g);
            json_object_del(ag, "kind");
            json_object_del(ag, "apiVersion");
            json_array_append_new(groups, ag);
        }
    }
    return json_pack("{s:s, s:s, s:o}", "kind", "APIGroupList", "apiVersion", "v1", "groups",
                     groups);
}

static json_t *version_info(void)
{
    return json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s}", "major", "1", "minor", "32",
                     "gitVersion", "v1.32.0-trainyard-testserver", "gitCommit",
                     "0000000000000000000000000000000000000000", "gitTreeState", "clean",
                     "buildDate", "2026-01-01T00:00:00Z", "goVersion", "go1.23.0", "compiler", "gc",
                     "platform", "linux/amd64");
}

/* "api/v1" or "apis/kubeflow.org/v1" for an OpenAPI v3 path key. */
static void gv_path(const struct resource *r, char *out, size_t size)
{
    if (r->group[0])
        snprintf(out, size, "apis/%s/%s", r->group, r->version);
    else
        snprintf(out, size, "api/%s", r->version);
}

static json_t *openapi_root(void)
{
    json_t *paths = json_object();
    for (size_t i = 0; i < resource_count; i++) {
        char gv[128], url[200];
        gv_path(&resource_table[i], gv, sizeof(gv));
        snprintf(url, sizeof(url), "/openapi/v3/%s?hash=0", gv);
        json_object_set_new(paths, gv, json_pack("{s:s}", "serverRelativeURL", url));
    }
    return json_pack("{s:o}", "paths", paths);
}

static json_t *openapi_gv(const char *gvpath)
{
    json_t *paths = json_object();
    for (size_t i = 0; i < resource_count; i++) {
        const struct resource *r = &resource_table[i];
        char gv[128], path[300];
        gv_path(r, gv, sizeof(gv));
        if (strcmp(gv, gvpath))
            continue;
        snprintf(path, sizeof(path), "/%s/%s%s/{name}", gv,
                 r->namespaced ? "namespaces/{namespace}/" : "", r->plural);
        json_t *op =
            json_pack("{s:[s], s:{s:s, s:s, s:s}, s:[{s:s, s:s, s:{s:s}}], s:{s:{s:s}}}", "tags",
                      r->kind, "x-kubernetes-group-version-kind", "group", r->group, "version",
                      r->version, "kind", r->kind, "parameters", "name", "fieldValidation", "in",
                      "query", "schema", "type", "string", "responses", "200", "description", "OK");
        json_object_set_new(paths, path, json_pack("{s:o}", "patch", op));
    }
    if (!json_object_size(paths)) {
        json_decref(paths);
        return NULL;
    }
    return json_pack("{s:s, s:{s:s, s:s}, s:o, s:{s:{}}}", "openapi", "3.0.0", "info", "title",
                     "Kubernetes", "version", "v1.32.0", "paths", paths, "components", "schemas");
}

bool discovery_handle(struct request *req, struct reply *rep)
{
    const char *p = req->path;
    json_t *doc = NULL;
    if (!strcmp(p, "/version"))
        doc = version_info();
    else if (!strcmp(p, "/api") || !strcmp(p, "/api/"))
        doc = json_pack("{s:s, s:[s], s:[{s:s, s:s}]}", "kind", "APIVersions", "versions", "v1",
                        "serverAddressByClientCIDRs", "clientCIDR", "0.0.0.0/0", "serverAddress",
                        "127.0.0.1:443");
    else if (!strcmp(p, "/apis") || !strcmp(p, "/apis/"))
        doc = api_group_list();
    else if (!strcmp(p, "/openapi/v3"))
        doc = openapi_root();
    else if (!strncmp(p, "/openapi/v3/", 12))
        doc = openapi_gv(p + 12);
    else if (!strncmp(p, "/apis/", 6) && !strchr(p + 6, '/'))
        doc = api_group(p + 6);
    else if (!strncmp(p, "/openapi/", 9))
        doc = NULL; /* v2 is not served: kubectl uses v3 */
    else
        return false;
    if (!doc) {
        reply_text(rep, 404, "404 page not found\n", 19);
        return true;
    }
    reply_json(rep, 200, doc);
    return true;
}
