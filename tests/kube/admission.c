/*
 * admission: NamespaceLifecycle (objects only in existing, non-terminating namespaces), name
 * validation (RFC 1123 subdomain; RFC 1035 label for the Kubeflow jobs), pod spec basics, and
 * the PyTorchJob webhook rules from kubeflow/trainer v1.9 pkg/webhooks/pytorch. Messages are
 * close to, not byte-identical with, the real ones. Lock: world lock held by the caller.
 */
#include "tests/kube/admission.h"

#include <ctype.h>

#include "core/buf.h"
#include "core/jsonx.h"
#include "tests/kube/status.h"
#include "tests/kube/store.h"
#include "tests/kube/world.h"

#define WEBHOOK "validator.pytorchjob.training-operator.kubeflow.org"

static bool dns_label(const char *s, bool must_start_alpha)
{
    size_t n = strlen(s);
    if (n == 0 || n > 63 || !isalnum((unsigned char)s[0]) || !isalnum((unsigned char)s[n - 1]))
        return false;
    if (must_start_alpha && !islower((unsigned char)s[0]))
        return false;
    for (size_t i = 0; i < n; i++)
        if (!(islower((unsigned char)s[i]) || isdigit((unsigned char)s[i]) || s[i] == '-'))
            return false;
    return true;
}

static bool dns_subdomain(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > 253)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!(islower((unsigned char)s[i]) || isdigit((unsigned char)s[i]) || s[i] == '-' ||
              s[i] == '.'))
            return false;
    return isalnum((unsigned char)s[0]) && isalnum((unsigned char)s[n - 1]);
}

static int check_namespace(struct world *w, const struct resource *res, const json_t *obj,
                           struct err *err)
{
    if (!res->namespaced)
        return 0;
    const char *ns = kstr(json_object_get(obj, "metadata"), "namespace");
    const struct resource *nsres = resource_lookup("", "v1", "namespaces");
    json_t *n = store_get(w->store, nsres, NULL, ns);
    if (!n)
        return status_set(err, ERR_NOT_FOUND, "NotFound", "namespaces \"%s\" not found", ns);
    if (kpath(n, "metadata.deletionTimestamp"))
        return status_set(err, ERR_FORBIDDEN, "Forbidden",
                          "%s \"%s\" is forbidden: unable to create new content in namespace %s "
                          "because it is being terminated",
                          res->qualified, kstr(json_object_get(obj, "metadata"), "name"), ns);
    return 0;
}

/* The PyTorchJob validating webhook: field errors joined into one denial (403). */
int admission_pytorchjob(const json_t *job, struct err *err)
{
    struct buf why = BUF_INIT;
    const char *name = kstr(json_object_get(job, "metadata"), "name");
    if (!dns_label(name, true))
        buf_printf(&why,
                   "metadata.name: Invalid value: \"%s\": a DNS-1035 label must consist of "
                   "lower case alphanumeric characters or '-', start with an alphabetic "
                   "character, and end with an alphanumeric character",
                   name);
    json_t *specs = kpath(job, "spec.pytorchReplicaSpecs");
    if (!json_is_object(specs) || json_object_size(specs) == 0)
        buf_printf(&why, "%sspec.pytorchReplicaSpecs: Required value: must be specified",
                   why.len ? ", " : "");
    const char *rtype;
    json_t *spec;
    json_object_foreach (specs, rtype, spec) {
        if (strcmp(rtype, "Master") && strcmp(rtype, "Worker")) {
            buf_printf(&why,
                       "%sspec.pytorchReplicaSpecs: Forbidden: must have only Master or "
                       "Worker replica types, got %s",
                       why.len ? ", " : "", rtype);
            continue;
        }
        json_t *ctrs = kpath(spec, "template.spec.containers");
        bool has_pytorch = false;
        size_t i;
        json_t *c;
        json_array_foreach (ctrs, i, c) {
            has_pytorch |= !strcmp(kstr(c, "name"), "pytorch");
            if (!kstr(c, "image")[0])
                buf_printf(&why,
                           "%sspec.pytorchReplicaSpecs[%s].template.spec.containers[%zu]."
                           "image: Required value: must be specified",
                           why.len ? ", " : "", rtype, i);
        }
        if (!has_pytorch)
            buf_printf(&why,
                       "%sspec.pytorchReplicaSpecs[%s].template.spec.containers: Required "
                       "value: There is no container named pytorch",
                       why.len ? ", " : "", rtype);
        json_t *replicas = json_object_get(spec, "replicas");
        if (!strcmp(rtype, "Master") && replicas && json_integer_value(replicas) != 1)
            buf_printf(&why, "%sspec.pytorchReplicaSpecs[Master].replicas: Forbidden: must be 1",
                       why.len ? ", " : "");
        if (!strcmp(rtype, "Worker") && replicas && json_integer_value(replicas) < 1)
            buf_printf(&why,
                       "%sspec.pytorchReplicaSpecs[Worker].replicas: Forbidden: must be "
                       "at least 1",
                       why.len ? ", " : "");
    }
    int rc = 0;
    if (why.len)
        rc = status_set(err, ERR_FORBIDDEN, "Forbidden",
                        "admission webhook \"" WEBHOOK "\" denied the request: %s", buf_cstr(&why));
    buf_release(&why);
    return rc;
}

/* json_equal() that holds for two absent values too. */
static bool same(const json_t *a, const json_t *b)
{
    return a == b || (a && b && json_equal(a, b));
}

/* The TrainJob CRD's CEL and schema rules: 422 Invalid with causes. */
static int check_trainjob(const json_t *job, const json_t *old, struct err *err)
{
    const char *name = kstr(json_object_get(job, "metadata"), "name");
    if (!dns_label(name, true))
        err_field(err, "metadata.name",
                  "Invalid value: \"%s\": must match "
                  "^[a-z]([-a-z0-9]*[a-z0-9])?$ and be at most 63 "
                  "characters",
                  name);
    if (!kstr(kpath(job, "spec.runtimeRef"), "name")[0])
        err_field(err, "spec.runtimeRef.name", "Required value");
    json_t *nodes = kpath(job, "spec.trainer.numNodes");
    if (nodes && json_integer_value(nodes) < 0)
        err_field(err, "spec.trainer.numNodes",
                  "Invalid value: %lld: should be greater than or "
                  "equal to 0",
                  (long long)json_integer_value(nodes));
    if (old && !same(kpath(job, "spec.trainer"), kpath(old, "spec.trainer")))
        err_field(err, "spec.trainer", "Invalid value: \"object\": field is immutable");
    if (old && !same(kpath(job, "spec.runtimeRef"), kpath(old, "spec.runtimeRef")))
        err_field(err, "spec.runtimeRef", "Invalid value: \"object\": runtimeRef is immutable");
    return err_is_set(err) ? -1 : 0;
}

static int check_pod(const json_t *pod, struct err *err)
{
    if (json_array_size(kpath(pod, "spec.containers")) == 0)
        return err_field(err, "spec.containers", "Required value");
    return 0;
}

int admission_review(struct world *w, const struct resource *res, const json_t *obj,
                     const json_t *old, struct err *err)
{
    const char *name = kstr(json_object_get(obj, "metadata"), "name");
    if (!old && res->table != TABLE_JOB) {
        bool ok = res->table == TABLE_NAMESPACE ? dns_label(name, false) : dns_subdomain(name);
        if (!ok && res->table != TABLE_EVENT)
            return err_field(err, "metadata.name",
                             "Invalid value: \"%s\": a lowercase RFC 1123 %s must consist of "
                             "lower case alphanumeric characters, '-' or '.', and must start and "
                             "end with an alphanumeric character",
                             name, res->table == TABLE_NAMESPACE ? "label" : "subdomain");
    }
    if (!old && check_namespace(w, res, obj, err) < 0)
        return -1;
    if (!strcmp(res->plural, "pytorchjobs"))
        return admission_pytorchjob(obj, err);
    if (!strcmp(res->plural, "trainjobs"))
        return check_trainjob(obj, old, err);
    if (res->table == TABLE_POD && !old)
        return check_pod(obj, err);
    return 0;
}

/* Guaranteed: every container has cpu and memory limits equal to its requests; BestEffort: no
 * container has any; Burstable otherwise (a simplification of the qos package). */
static const char *qos_class(const json_t *pod)
{
    bool any = false, guaranteed = true;
    size_t i;
    json_t *c;
    json_array_foreach (kpath(pod, "spec.containers"), i, c) {
        json_t *req = kpath(c, "resources.requests"), *lim = kpath(c, "resources.limits");
        any |= json_object_size(req) > 0 || json_object_size(lim) > 0;
        const char *keys[] = { "cpu", "memory" };
        for (int k = 0; k < 2; k++) {
            json_t *l = json_object_get(lim, keys[k]), *r = json_object_get(req, keys[k]);
            guaranteed &= l && (!r || json_equal(l, r));
        }
    }
    return !any ? "BestEffort" : guaranteed ? "Guaranteed" : "Burstable";
}

void admission_prepare_pod(json_t *pod)
{
    json_object_set_new(pod, "status",
                        json_pack("{s:s, s:s}", "phase", "Pending", "qosClass", qos_class(pod)));
    json_t *spec = kobj(pod, "spec");
    if (!json_object_get(spec, "restartPolicy"))
        json_object_set_new(spec, "restartPolicy", json_string("Always"));
    if (!json_object_get(spec, "terminationGracePeriodSeconds"))
        json_object_set_new(spec, "terminationGracePeriodSeconds", json_integer(30));
    if (!json_object_get(spec, "schedulerName"))
        json_object_set_new(spec, "schedulerName", json_string("default-scheduler"));
}
