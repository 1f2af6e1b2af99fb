/*
 * manifest: PyTorchJob / TrainJob manifests -> job specs (see manifest.h). The checks mirror
 * what the Training Operator's webhook and the TrainJob CRD refuse, so that a bad manifest is
 * a 422 at submission rather than a failed job.
 */
#include "api/manifest.h"

#include "core/jsonx.h"
#include "job/names.h"
#include "core/parse.h"

bool manifest_detect(const json_t *doc)
{
    return json_is_object(doc) && json_is_string(json_object_get(doc, "apiVersion")) &&
           json_is_string(json_object_get(doc, "kind"));
}

/* Server-set fields a `kubectl get -o yaml` copy carries; creating with them fails. */
static void strip(json_t *obj)
{
    json_object_del(obj, "status");
    json_t *m = json_object_get(obj, "metadata");
    const char *drop[] = { "resourceVersion", "uid",      "creationTimestamp", "generation",
                           "managedFields",   "selfLink", "deletionTimestamp", "ownerReferences",
                           "finalizers" };
    for (size_t i = 0; i < sizeof(drop) / sizeof(drop[0]); i++)
        json_object_del(m, drop[i]);
}

/* Replicas, image and nprocPerNode of a PyTorchJob; problems into err. */
static void pytorchjob(const json_t *spec, int *nodes, int *ppn, const char **image,
                       struct err *err)
{
    const json_t *specs = json_object_get(spec, "pytorchReplicaSpecs");
    if (!json_is_object(specs) || json_object_size(specs) == 0) {
        err_field(err, "/spec/pytorchReplicaSpecs", "is required (Master and/or Worker)");
        return;
    }
    const char *type;
    json_t *rs;
    *nodes = 0;
    json_object_foreach((json_t *)specs, type, rs)
    {
        char ptr[160];
        snprintf(ptr, sizeof(ptr), "/spec/pytorchReplicaSpecs/%s", type);
        if (strcmp(type, "Master") != 0 && strcmp(type, "Worker") != 0) {
            err_field(err, ptr, "only Master and Worker replicas are valid");
            continue;
        }
        int n = (int)jsonx_int(rs, "replicas", 1);
        if (!strcmp(type, "Master") && n != 1)
            err_field(err, ptr, "Master replicas must be 1");
        else if (n < 1)
            err_field(err, ptr, "replicas must be at least 1");
        *nodes += n;
        const json_t *cs =
            json_object_get(json_object_get(json_object_get(rs, "template"), "spec"), "containers");
        const json_t *py = NULL;
        size_t i;
        json_t *c;
        json_array_foreach(cs, i, c) if (jsonx_str(c, "name") &&
                                         !strcmp(jsonx_str(c, "name"), "pytorch")) py = c;
        if (!py)
            err_field(err, ptr, "needs a container named \"pytorch\" in template.spec.containers");
        else if (!jsonx_str(py, "image"))
            err_field(err, ptr, "the pytorch container needs an image");
        else if (!*image)
            *image = jsonx_str(py, "image");
    }
    const char *nproc = jsonx_str(spec, "nprocPerNode");
    if (nproc && parse_int(nproc, 1, 1024, ppn) < 0)
        *ppn = 1; /* auto, gpu, cpu: the operator decides */
}

static void trainjob(const json_t *spec, int *nodes, int *ppn, const char **image, struct err *err)
{
    const json_t *ref = json_object_get(spec, "runtimeRef");
    if (!jsonx_str(ref, "name"))
        err_field(err, "/spec/runtimeRef/name", "is required");
    const json_t *tr = json_object_get(spec, "trainer");
    *nodes = (int)jsonx_int(tr, "numNodes", 1);
    if (*nodes < 1)
        *nodes = 1;
    json_t *npn = json_object_get(tr, "numProcPerNode");
    if (json_is_integer(npn) && json_integer_value(npn) > 0)
        *ppn = (int)json_integer_value(npn);
    *image = jsonx_str(tr, "image");
}

json_t *manifest_to_spec(const json_t *doc, struct err *err)
{
    const char *api = jsonx_str(doc, "apiVersion"), *kind = jsonx_str(doc, "kind");
    bool ptj = !strcmp(kind, "PyTorchJob"), tj = !strcmp(kind, "TrainJob");
    if (!ptj && !tj) {
        err_field(err, "/kind",
                  "must be PyTorchJob or TrainJob to run a manifest (or send a "
                  "trainyard job spec)");
        return NULL;
    }
    if (strcmp(api, ptj ? "kubeflow.org/v1" : "trainer.kubeflow.org/v1alpha1") != 0)
        err_field(err, "/apiVersion", "a %s must be %s", kind,
                  ptj ? "kubeflow.org/v1" : "trainer.kubeflow.org/v1alpha1");
    const json_t *meta = json_object_get(doc, "metadata");
    const char *name = jsonx_str(meta, "name"), *ns = jsonx_str(meta, "namespace");
    const char *why = name ? names_dns1035_label(name) : "is required";
    if (why)
        err_field(err, "/metadata/name", "%s", why);
    if (jsonx_str(meta, "generateName") && !name)
        err_field(err, "/metadata/generateName", "is not supported: the name must be known");
    if (ns && (why = names_dns1123_label(ns)))
        err_field(err, "/metadata/namespace", "%s", why);
    int nodes = 1, ppn = 1;
    const char *image = NULL;
    const json_t *spec = json_object_get(doc, "spec");
    if (!json_is_object(spec))
        err_field(err, "/spec", "is required");
    else if (ptj)
        pytorchjob(spec, &nodes, &ppn, &image, err);
    else
        trainjob(spec, &nodes, &ppn, &image, err);
    if (err_is_set(err))
        return NULL;
    json_t *copy = json_deep_copy(doc);
    strip(copy);
    json_t *k = json_pack("{s:s,s:o}", "kind", kind, "manifest", copy);
    if (ns)
        json_object_set_new(k, "namespace", json_string(ns));
    json_t *out = json_pack("{s:s,s:s,s:i,s:i,s:o}", "name", name, "executor", "kubernetes",
                            "nodes", nodes, "procs_per_node", ppn, "kubernetes", k);
    if (image)
        json_object_set_new(out, "image", json_string(image));
    json_t *labels = json_object_get(meta, "labels");
    if (json_is_object(labels) && json_object_size(labels))
        json_object_set(out, "labels", labels);
    return out;
}
