/*
 * manifest: a user's PyTorchJob or TrainJob as a job spec, and the mistakes caught at
 * submission (each with its JSON pointer into the manifest).
 */
#include "tests/unit/check.h"

#include "api/manifest.h"
#include "core/jsonx.h"

static json_t *convert(const char *text, struct err *err)
{
    json_t *doc = json_loads(text, 0, NULL);
    json_t *spec = manifest_to_spec(doc, err);
    json_decref(doc);
    return spec;
}

static bool has_pointer(const struct err *err, const char *p)
{
    for (size_t i = 0; i < err->nfields; i++)
        if (!strcmp(err->fields[i].pointer, p))
            return true;
    return false;
}

int main(void)
{
    struct err err;
    err_init(&err);
    json_t *s =
        convert("{\"apiVersion\":\"kubeflow.org/v1\",\"kind\":\"PyTorchJob\",\"metadata\":"
                "{\"name\":\"a\",\"namespace\":\"ml\",\"uid\":\"u\",\"resourceVersion\":"
                "\"9\",\"labels\":{\"team\":\"x\"}},\"spec\":{\"nprocPerNode\":\"8\","
                "\"pytorchReplicaSpecs\":{\"Master\":{\"replicas\":1,\"template\":{\"spec\":"
                "{\"containers\":[{\"name\":\"pytorch\",\"image\":\"i:1\"}]}}},\"Worker\":{"
                "\"replicas\":3,\"template\":{\"spec\":{\"containers\":[{\"name\":"
                "\"pytorch\",\"image\":\"i:1\"}]}}}}},\"status\":{\"x\":1}}",
                &err);
    CHECK(s != NULL);
    CHECK_STR(jsonx_str(s, "name"), "a");
    CHECK_STR(jsonx_str(s, "executor"), "kubernetes");
    CHECK_INT(jsonx_int(s, "nodes", 0), 4);
    CHECK_INT(jsonx_int(s, "procs_per_node", 0), 8);
    CHECK_STR(jsonx_str(s, "image"), "i:1");
    CHECK_STR(jsonx_str(json_object_get(s, "labels"), "team"), "x");
    json_t *k = json_object_get(s, "kubernetes");
    CHECK_STR(jsonx_str(k, "namespace"), "ml");
    json_t *m = json_object_get(k, "manifest");
    CHECK(json_object_get(m, "status") == NULL); /* server-set fields are dropped */
    CHECK(json_object_get(json_object_get(m, "metadata"), "uid") == NULL);
    CHECK(json_object_get(json_object_get(m, "metadata"), "resourceVersion") == NULL);
    json_decref(s);

    s = convert("{\"apiVersion\":\"trainer.kubeflow.org/v1alpha1\",\"kind\":\"TrainJob\","
                "\"metadata\":{\"name\":\"t\"},\"spec\":{\"runtimeRef\":{\"name\":\"torch\"},"
                "\"trainer\":{\"numNodes\":6,\"numProcPerNode\":4}}}",
                &err);
    CHECK(s && jsonx_int(s, "nodes", 0) == 6 && jsonx_int(s, "procs_per_node", 0) == 4);
    json_decref(s);

    s = convert("{\"apiVersion\":\"kubeflow.org/v2\",\"kind\":\"PyTorchJob\",\"metadata\":{"
                "\"name\":\"Bad\",\"namespace\":\"NS!\"},\"spec\":{\"pytorchReplicaSpecs\":{"
                "\"Master\":{\"replicas\":2,\"template\":{\"spec\":{\"containers\":[{\"name\":"
                "\"main\",\"image\":\"x\"}]}}},\"Chief\":{}}}}",
                &err);
    CHECK(s == NULL);
    CHECK(has_pointer(&err, "/apiVersion"));
    CHECK(has_pointer(&err, "/metadata/name"));
    CHECK(has_pointer(&err, "/metadata/namespace"));
    CHECK(has_pointer(&err, "/spec/pytorchReplicaSpecs/Master"));
    CHECK(has_pointer(&err, "/spec/pytorchReplicaSpecs/Chief"));
    err_release(&err);
    s = convert("{\"apiVersion\":\"trainer.kubeflow.org/v1alpha1\",\"kind\":\"TrainJob\","
                "\"metadata\":{\"name\":\"t\"},\"spec\":{}}",
                &err);
    CHECK(s == NULL && has_pointer(&err, "/spec/runtimeRef/name"));
    err_release(&err);
    json_t *plain = json_loads("{\"name\":\"x\"}", 0, NULL);
    CHECK(!manifest_detect(plain));
    json_decref(plain);
    return check_done();
}
