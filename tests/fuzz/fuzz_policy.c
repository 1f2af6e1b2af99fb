/* fuzz_policy: a manifest as a non-admin token sends it (POST /v1/jobs as the body, or as
 * kubernetes.manifest), through the cluster policy (api/policy.h): the walk over every pod
 * template under the built-in default and under a narrow policy. A refusal always names a
 * field by a pointer into what was sent, and every refusal is counted. */
#include "api/policy.h"
#include "api/policy_grants.h"
#include "api/policy_pod.h"
#include "core/jsonx.h"
#include "tests/default_limits.h"
#include "tests/fuzz/fuzz.h"

static const struct api_cluster cluster = { .jobs_namespace = "ml",
                                            .namespace = "trainyard",
                                            .service_accounts = "trainyard",
                                            .volume_claims = "trainyard-data" };

static void check(const json_t *grants, const char *name, const json_t *manifest)
{
    struct policy_grants g = { .name = name, .doc = grants, .cluster = &cluster };
    struct err err;
    err_init(&err);
    int refused = policy_pod_check(&g, manifest, "", &err);
    FUZZ_ASSERT(refused >= 0 && (refused > 0) == err_is_set(&err));
    FUZZ_ASSERT(!refused || err.code == ERR_FORBIDDEN);
    for (size_t i = 0; i < err.nfields; i++)
        FUZZ_ASSERT(err.fields[i].pointer[0] == '/');
    err_release(&err);
    /* The same inside a native spec: the pointers move under /kubernetes/manifest. */
    json_t *spec = json_pack("{s:s,s:s,s:{s:O}}", "name", "f", "executor", "kubernetes",
                             "kubernetes", "manifest", manifest);
    struct spec_view v;
    spec_view(spec, &v);
    err_init(&err);
    int rc = policy_kube_check(&g, &v, "/kubernetes/manifest", &err);
    FUZZ_ASSERT(rc == 0 ? !err_is_set(&err) : err.code == ERR_FORBIDDEN && err.nfields > 0);
    FUZZ_ASSERT(!refused || rc < 0);
    err_release(&err);
    json_decref(spec);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    json_t *doc = jsonx_loadb((const char *)data, size, default_limits()->max_json_depth, NULL);
    if (!doc)
        return 0;
    json_t *builtin = policy_grants_default(&cluster);
    json_t *narrow =
        json_pack("{s:[s],s:[s],s:[s],s:[s],s:{s:[s]}}", "namespaces", "team-*", "service_accounts",
                  "trainer", "volume_claims", "team-a-*", "image_registries", "nvcr.io/nvidia",
                  "node_selectors", "node.kubernetes.io/instance-type", "p5.*");
    FUZZ_ASSERT(policy_grants_validate(builtin, NULL) == 0 &&
                policy_grants_validate(narrow, NULL) == 0);
    check(builtin, "default", doc);
    check(narrow, "team-a", doc);
    /* The same bytes as a policy document: validation never crashes, and says why it refuses. */
    struct err err;
    err_init(&err);
    FUZZ_ASSERT(policy_grants_validate(doc, &err) == 0 ? !err_is_set(&err)
                                                       : err.code == ERR_VALIDATION);
    err_release(&err);
    json_decref(narrow);
    json_decref(builtin);
    json_decref(doc);
    return 0;
}
