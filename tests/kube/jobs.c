/*
 * jobs: helpers shared by the simulated controllers. Lock: world lock held by callers.
 */
#include "tests/kube/jobs.h"

#include "core/clock.h"
#include "core/jsonx.h"
#include "core/xalloc.h"
#include "tests/kube/admission.h"
#include "tests/kube/events.h"
#include "tests/kube/gc.h"
#include "tests/kube/store.h"
#include "tests/kube/world.h"

static json_t *find_condition(const json_t *status, const char *type)
{
    size_t i;
    json_t *c;
    json_array_foreach (json_object_get(status, "conditions"), i, c)
        if (!strcmp(kstr(c, "type"), type))
            return c;
    return NULL;
}

bool jobs_condition_true(const json_t *status, const char *type)
{
    return !strcmp(kstr(find_condition(status, type), "status"), "True");
}

void jobs_condition_v1(json_t *status, const char *type, const char *cstatus, const char *reason,
                       const char *message)
{
    if (jobs_condition_true(status, "Failed"))
        return;
    json_t *cur = find_condition(status, type);
    if (cur && !strcmp(kstr(cur, "status"), cstatus) && !strcmp(kstr(cur, "reason"), reason))
        return;
    json_t *c = json_pack("{s:s, s:s, s:s, s:s}", "type", type, "status", cstatus, "reason", reason,
                          "message", message);
    ktime_set(c, "lastUpdateTime", clock_now_ns());
    if (cur && !strcmp(kstr(cur, "status"), cstatus))
        json_object_set(c, "lastTransitionTime", json_object_get(cur, "lastTransitionTime"));
    else
        ktime_set(c, "lastTransitionTime", clock_now_ns());
    json_t *old = json_object_get(status, "conditions"), *next = json_array();
    size_t i;
    json_t *o;
    json_array_foreach (old, i, o) {
        const char *t = kstr(o, "type");
        if (!strcmp(t, type) || (!strcmp(type, "Restarting") && !strcmp(t, "Running")) ||
            (!strcmp(type, "Running") && !strcmp(t, "Restarting")))
            continue;
        json_t *keep = json_deep_copy(o);
        if ((!strcmp(type, "Failed") || !strcmp(type, "Succeeded")) && !strcmp(t, "Running"))
            json_object_set_new(keep, "status", json_string("False"));
        json_array_append_new(next, keep);
    }
    json_array_append_new(next, c);
    json_object_set_new(status, "conditions", next);
}

void jobs_condition(json_t *status, const char *type, const char *cstatus, const char *reason,
                    const char *message, json_int_t generation)
{
    json_t *conds = json_object_get(status, "conditions");
    if (!json_is_array(conds))
        json_object_set_new(status, "conditions", conds = json_array());
    json_t *cur = find_condition(status, type);
    if (cur && !strcmp(kstr(cur, "status"), cstatus) && !strcmp(kstr(cur, "reason"), reason))
        return;
    json_t *c = json_pack("{s:s, s:s, s:I, s:s, s:s}", "type", type, "status", cstatus,
                          "observedGeneration", generation, "reason", reason, "message", message);
    if (cur && !strcmp(kstr(cur, "status"), cstatus))
        json_object_set(c, "lastTransitionTime", json_object_get(cur, "lastTransitionTime"));
    else
        ktime_set(c, "lastTransitionTime", clock_now_ns());
    size_t i;
    json_t *o;
    json_array_foreach (conds, i, o)
        if (o == cur) {
            json_array_set_new(conds, i, c);
            return;
        }
    json_array_append_new(conds, c);
}

bool jobs_owned(const json_t *obj, const char *uid)
{
    size_t i;
    json_t *ref;
    json_array_foreach (kpath(obj, "metadata.ownerReferences"), i, ref)
        if (!strcmp(kstr(ref, "uid"), uid))
            return true;
    return false;
}

static const char *const index_keys[] = { "training.kubeflow.org/job-name",
                                          "jobset.sigs.k8s.io/jobset-name" };

static void index_key(char *out, size_t size, const char *ns, const char *key, const char *value)
{
    snprintf(out, size, "%s/%s=%s", ns, key, value);
}

static json_t *index_build(struct world *w)
{
    json_t *index = json_object();
    size_t n;
    json_t **pods = store_list(w->store, resource_lookup("", "v1", "pods"), NULL, &n);
    for (size_t i = 0; i < n; i++) {
        const json_t *labels = kpath(pods[i], "metadata.labels");
        for (size_t k = 0; k < sizeof(index_keys) / sizeof(index_keys[0]); k++) {
            const char *v = kstr(labels, index_keys[k]);
            if (!v[0])
                continue;
            char key[800];
            index_key(key, sizeof(key), kstr(kpath(pods[i], "metadata"), "namespace"),
                      index_keys[k], v);
            json_t *list = json_object_get(index, key);
            if (!list)
                json_object_set_new(index, key, list = json_array());
            json_array_append(list, pods[i]);
        }
    }
    store_list_free(pods, n);
    return index;
}

json_t **jobs_pods(struct world *w, json_t **index, const char *ns, const char *key,
                   const char *value, const char *owner_uid, size_t *n)
{
    char ikey[800];
    if (!*index)
        *index = index_build(w);
    index_key(ikey, sizeof(ikey), ns, key, value);
    json_t *list = json_object_get(*index, ikey);
    json_t **out = xcalloc(json_array_size(list) + 1, sizeof(json_t *));
    size_t count = 0, i;
    json_t *pod;
    json_array_foreach (list, i, pod)
        if (!owner_uid || jobs_owned(pod, owner_uid))
            out[count++] = json_incref(pod);
    *n = count;
    return out;
}

bool jobs_may_create(struct world *w)
{
    return w->create_budget > 0;
}

void jobs_create_pod(struct world *w, const json_t *job, json_t *pod,
                     const struct event_source *src)
{
    w->create_budget--;
    char name[300];
    snprintf(name, sizeof(name), "%s", kstr(json_object_get(pod, "metadata"), "name"));
    struct err err;
    err_init(&err);
    admission_prepare_pod(pod);
    if (store_create(w->store, resource_lookup("", "v1", "pods"), pod, &err))
        events_emit(w, job, src, "Normal", "SuccessfulCreatePod", NULL, "Created pod: %s", name);
    else
        events_emit(w, job, src, "Warning", "FailedCreatePod", NULL, "Error creating: %s", err.msg);
    err_release(&err);
}

void jobs_delete_pod(struct world *w, const json_t *job, const json_t *pod,
                     const struct event_source *src)
{
    const json_t *m = json_object_get(pod, "metadata");
    if (json_object_get(m, "deletionTimestamp"))
        return;
    char name[300];
    snprintf(name, sizeof(name), "%s", kstr(m, "name"));
    json_decref(gc_delete(w, resource_lookup("", "v1", "pods"), kstr(m, "namespace"), name, NULL,
                          -1, NULL));
    events_emit(w, job, src, "Normal", "SuccessfulDeletePod", NULL, "Deleted pod: %s", name);
}

void jobs_set_env(json_t *container, const char *name, const char *value)
{
    json_t *env = json_object_get(container, "env");
    if (!json_is_array(env))
        json_object_set_new(container, "env", env = json_array());
    size_t i;
    json_t *e;
    json_array_foreach (env, i, e)
        if (!strcmp(kstr(e, "name"), name)) {
            json_array_set_new(env, i, json_pack("{s:s, s:s}", "name", name, "value", value));
            return;
        }
    json_array_append_new(env, json_pack("{s:s, s:s}", "name", name, "value", value));
}

int jobs_exit_code(const json_t *pod, const char *container)
{
    size_t i;
    json_t *c;
    json_array_foreach (kpath(pod, "status.containerStatuses"), i, c) {
        if (container && strcmp(kstr(c, "name"), container))
            continue;
        json_t *t = kpath(c, "state.terminated");
        if (!t)
            t = kpath(c, "lastState.terminated");
        if (t)
            return (int)jsonx_int(t, "exitCode", -1);
    }
    return -1;
}

int jobs_restarts(const json_t *pod)
{
    int n = 0;
    size_t i;
    json_t *c;
    json_array_foreach (kpath(pod, "status.containerStatuses"), i, c)
        n += (int)jsonx_int(c, "restartCount", 0);
    return n;
}

void jobs_write_status(struct world *w, const struct resource *res, const json_t *job,
                       json_t *status)
{
    if (!job || json_equal(status, json_object_get(job, "status"))) {
        json_decref(status);
        return;
    }
    json_t *copy = json_deep_copy(job);
    json_object_set_new(copy, "status", status);
    store_replace(w->store, res, copy, NULL);
}

void jobs_copy_test_annotations(const json_t *job, json_t *pod_meta)
{
    const char *k;
    json_t *v;
    json_object_foreach (kpath(job, "metadata.annotations"), k, v)
        if (!strncmp(k, "testserver.trainyard.io/", 24))
            json_object_set(kobj(pod_meta, "annotations"), k, v);
}
