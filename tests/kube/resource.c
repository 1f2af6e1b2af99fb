/*
 * resource: the served resources. Kinds, plurals and scopes follow the real APIs: core/v1,
 * kubeflow.org/v1 PyTorchJob (Training Operator v1) and trainer.kubeflow.org/v1alpha1 TrainJob
 * with its runtimes (Trainer v2). Selectable fields are those kube-apiserver registers
 * (pod/strategy.go, event/strategy.go); CRDs only allow metadata.name and metadata.namespace.
 * events.k8s.io/v1 events are a view of the core/v1 ones (eventsv1.c).
 * Read-only static data; thread-safe.
 */
#include "tests/kube/resource.h"

#include <string.h>

#define POD_FIELDS                                                                                 \
    "spec.nodeName spec.restartPolicy spec.schedulerName spec.serviceAccountName "                 \
    "spec.hostNetwork status.phase status.podIP status.nominatedNodeName"
#define EVENT_FIELDS                                                                               \
    "involvedObject.kind involvedObject.namespace involvedObject.name involvedObject.uid "         \
    "involvedObject.apiVersion involvedObject.resourceVersion involvedObject.fieldPath reason "    \
    "reportingComponent source type"

#define EVENTSV1_FIELDS                                                                            \
    "regarding.kind regarding.namespace regarding.name regarding.uid regarding.apiVersion "        \
    "regarding.resourceVersion regarding.fieldPath reason reportingController type"

const struct resource resource_table[] = {
    { "", "v1", "v1", "pods", "pod", "Pod", "pods", true, false, "po", "status log", POD_FIELDS,
      TABLE_POD, NULL },
    { "", "v1", "v1", "events", "event", "Event", "events", true, false, "ev", "", EVENT_FIELDS,
      TABLE_EVENT, NULL },
    { "", "v1", "v1", "services", "service", "Service", "services", true, false, "svc", "status",
      "", TABLE_SERVICE, NULL },
    { "", "v1", "v1", "nodes", "node", "Node", "nodes", false, false, "no", "status",
      "spec.unschedulable", TABLE_NODE, NULL },
    { "", "v1", "v1", "namespaces", "namespace", "Namespace", "namespaces", false, false, "ns",
      "status", "status.phase", TABLE_NAMESPACE, NULL },
    /* Stored as they are, without a controller: what trainyard creates (the worker-token
     * Secret) and what deploy/ holds, so that `kubectl apply --dry-run=server -f deploy/` works. */
    { "", "v1", "v1", "secrets", "secret", "Secret", "secrets", true, false, "", "", "",
      TABLE_GENERIC, NULL },
    { "", "v1", "v1", "serviceaccounts", "serviceaccount", "ServiceAccount", "serviceaccounts",
      true, false, "sa", "", "", TABLE_GENERIC, NULL },
    { "", "v1", "v1", "persistentvolumeclaims", "persistentvolumeclaim", "PersistentVolumeClaim",
      "persistentvolumeclaims", true, false, "pvc", "status", "", TABLE_GENERIC, NULL },
    { "", "v1", "v1", "configmaps", "configmap", "ConfigMap", "configmaps", true, false, "cm", "",
      "", TABLE_GENERIC, NULL },
    { "apps", "v1", "apps/v1", "deployments", "deployment", "Deployment", "deployments.apps", true,
      false, "deploy", "status", "", TABLE_GENERIC, NULL },
    { "rbac.authorization.k8s.io", "v1", "rbac.authorization.k8s.io/v1", "roles", "role", "Role",
      "roles.rbac.authorization.k8s.io", true, false, "", "", "", TABLE_GENERIC, NULL },
    { "rbac.authorization.k8s.io", "v1", "rbac.authorization.k8s.io/v1", "rolebindings",
      "rolebinding", "RoleBinding", "rolebindings.rbac.authorization.k8s.io", true, false, "", "",
      "", TABLE_GENERIC, NULL },
    { "rbac.authorization.k8s.io", "v1", "rbac.authorization.k8s.io/v1", "clusterroles",
      "clusterrole", "ClusterRole", "clusterroles.rbac.authorization.k8s.io", false, false, "", "",
      "", TABLE_GENERIC, NULL },
    { "rbac.authorization.k8s.io", "v1", "rbac.authorization.k8s.io/v1", "clusterrolebindings",
      "clusterrolebinding", "ClusterRoleBinding", "clusterrolebindings.rbac.authorization.k8s.io",
      false, false, "", "", "", TABLE_GENERIC, NULL },
    { "events.k8s.io", "v1", "events.k8s.io/v1", "events", "event", "Event", "events.events.k8s.io",
      true, false, "ev", "", EVENTSV1_FIELDS, TABLE_EVENT, "events" },
    { "kubeflow.org", "v1", "kubeflow.org/v1", "pytorchjobs", "pytorchjob", "PyTorchJob",
      "pytorchjobs.kubeflow.org", true, true, "", "status", "", TABLE_JOB, NULL },
    { "trainer.kubeflow.org", "v1alpha1", "trainer.kubeflow.org/v1alpha1", "trainjobs", "trainjob",
      "TrainJob", "trainjobs.trainer.kubeflow.org", true, true, "", "status", "", TABLE_JOB, NULL },
    { "trainer.kubeflow.org", "v1alpha1", "trainer.kubeflow.org/v1alpha1", "trainingruntimes",
      "trainingruntime", "TrainingRuntime", "trainingruntimes.trainer.kubeflow.org", true, true, "",
      "", "", TABLE_GENERIC, NULL },
    { "trainer.kubeflow.org", "v1alpha1", "trainer.kubeflow.org/v1alpha1",
      "clustertrainingruntimes", "clustertrainingruntime", "ClusterTrainingRuntime",
      "clustertrainingruntimes.trainer.kubeflow.org", false, true, "", "", "", TABLE_GENERIC,
      NULL },
};

const size_t resource_count = sizeof(resource_table) / sizeof(resource_table[0]);

const struct resource *resource_lookup(const char *group, const char *version, const char *plural)
{
    for (size_t i = 0; i < resource_count; i++) {
        const struct resource *r = &resource_table[i];
        if (!strcmp(r->group, group) && !strcmp(r->version, version) && !strcmp(r->plural, plural))
            return r;
    }
    return NULL;
}

const struct resource *resource_by_kind(const char *api_version, const char *kind)
{
    for (size_t i = 0; api_version && kind && i < resource_count; i++) {
        const struct resource *r = &resource_table[i];
        if (!strcmp(r->api_version, api_version) && !strcmp(r->kind, kind))
            return r;
    }
    return NULL;
}

size_t resource_index(const struct resource *r)
{
    return (size_t)(r - resource_table);
}

bool resource_group_version(const char *group, const char *version)
{
    for (size_t i = 0; i < resource_count; i++)
        if (!strcmp(resource_table[i].group, group) && !strcmp(resource_table[i].version, version))
            return true;
    return false;
}

bool resource_word_in(const char *list, const char *word)
{
    size_t n = strlen(word);
    for (const char *p = list; (p = strstr(p, word)) != NULL; p += n) {
        bool start = p == list || p[-1] == ' ';
        bool end = p[n] == '\0' || p[n] == ' ';
        if (start && end)
            return true;
    }
    return false;
}
