/*
 * pytorchjob: the Training Operator v1 PyTorchJob controller, after kubeflow/trainer v1.9
 * (pkg/controller.v1/pytorch and common): pods <job>-<master|worker>-<i> with the
 * training.kubeflow.org labels and torchrun env, one headless Service per pod, restart
 * handling per replica restartPolicy (ExitCode: recreate on exit >= 128, fail on 1-127), the
 * backoff limit, active deadline, suspend/resume, cleanPodPolicy and TTL after finishing,
 * conditions with PyTorchJob<Reason> reasons, and the matching Events.
 * Not simulated: elastic policy, gang scheduling, scale subresource.
 */
#include "tests/kube/jobs.h"

#include <ctype.h>

#include "core/clock.h"
#include "core/jsonx.h"
#include "core/parse.h"
#include "core/xalloc.h"
#include "tests/kube/events.h"
#include "tests/kube/gc.h"
#include "tests/kube/store.h"
#include "tests/kube/world.h"

static const struct event_source src = { "pytorchjob-controller", NULL };

struct counts {
    int active, running, succeeded, failed, restarts;
    bool restarting;
    char failed_type[16];
};

static const char *restart_policy(const json_t *spec)
{
    const char *p = kstr(spec, "restartPolicy");
    return p[0] ? p : "OnFailure";
}

static int replicas(const json_t *spec)
{
    return (int)jsonx_int(spec, "replicas", 1);
}

static void lower(const char *in, char *out, size_t size)
{
    size_t i = 0;
    for (; in[i] && i + 1 < size; i++)
        out[i] = (char)tolower((unsigned char)in[i]);
    out[i] = '\0';
}

/* The torchrun env of kubeflow/trainer v1.9 pkg/controller.v1/pytorch/envvar.go. */
static void inject_env(json_t *container, const json_t *job, const char *rtype, int index)
{
    json_t *specs = kpath(job, "spec.pytorchReplicaSpecs");
    int total = 0;
    const char *k;
    json_t *s;
    json_object_foreach (specs, k, s)
        total += replicas(s);
    char buf[300];
    const char *name = kstr(json_object_get(job, "metadata"), "name");
    const char *nproc = kstr(json_object_get(job, "spec"), "nprocPerNode");
    jobs_set_env(container, "PYTHONUNBUFFERED", "1");
    snprintf(buf, sizeof(buf), "%d", total);
    jobs_set_env(container, "PET_NNODES", buf);
    if (nproc[0])
        jobs_set_env(container, "PET_NPROC_PER_NODE", nproc);
    if (!json_object_get(specs, "Master"))
        return;
    jobs_set_env(container, "MASTER_PORT", "23456");
    jobs_set_env(container, "PET_MASTER_PORT", "23456");
    snprintf(buf, sizeof(buf), "%s-master-0", name);
    jobs_set_env(container, "MASTER_ADDR", buf);
    jobs_set_env(container, "PET_MASTER_ADDR", buf);
    int per = 1;
    if (nproc[0] && parse_int(nproc, 1, 1 << 16, &per) < 0)
        per = 1;
    snprintf(buf, sizeof(buf), "%d", total * per);
    jobs_set_env(container, "WORLD_SIZE", buf);
    snprintf(buf, sizeof(buf), "%d", strcmp(rtype, "Master") ? index + 1 : 0);
    jobs_set_env(container, "RANK", buf);
    jobs_set_env(container, "PET_NODE_RANK", buf);
}

static json_t *owner_ref(const json_t *job)
{
    const json_t *m = json_object_get(job, "metadata");
    return json_pack("[{s:s, s:s, s:s, s:s, s:b, s:b}]", "apiVersion", "kubeflow.org/v1", "kind",
                     "PyTorchJob", "name", kstr(m, "name"), "uid", kstr(m, "uid"), "controller", 1,
                     "blockOwnerDeletion", 1);
}

static json_t *new_pod(const json_t *job, const char *rtype, const json_t *spec, int index)
{
    const json_t *m = json_object_get(job, "metadata");
    const char *name = kstr(m, "name");
    char lrt[16], pname[300], idx[16];
    lower(rtype, lrt, sizeof(lrt));
    snprintf(pname, sizeof(pname), "%s-%s-%d", name, lrt, index);
    snprintf(idx, sizeof(idx), "%d", index);
    json_t *tmpl = json_deep_copy(json_object_get(spec, "template"));
    json_t *meta = kobj(tmpl, "metadata"), *pspec = kobj(tmpl, "spec");
    json_t *labels = kobj(meta, "labels");
    json_object_set_new(labels, "training.kubeflow.org/operator-name",
                        json_string("pytorchjob-controller"));
    json_object_set_new(labels, "training.kubeflow.org/job-name", json_string(name));
    json_object_set_new(labels, "training.kubeflow.org/replica-type", json_string(lrt));
    json_object_set_new(labels, "training.kubeflow.org/replica-index", json_string(idx));
    bool leader =
        !strcmp(rtype, "Master") || (!kpath(job, "spec.pytorchReplicaSpecs.Master") && index == 0);
    if (leader)
        json_object_set_new(labels, "training.kubeflow.org/job-role", json_string("master"));
    json_object_set_new(meta, "name", json_string(pname));
    json_object_set_new(meta, "namespace", json_string(kstr(m, "namespace")));
    json_object_set_new(meta, "ownerReferences", owner_ref(job));
    jobs_copy_test_annotations(job, meta);
    const char *policy = restart_policy(spec);
    json_object_set_new(pspec, "restartPolicy",
                        json_string(!strcmp(policy, "ExitCode") ? "Never" : policy));
    size_t i;
    json_t *c;
    json_array_foreach (json_object_get(pspec, "containers"), i, c) {
        inject_env(c, job, rtype, index);
        if (!strcmp(kstr(c, "name"), "pytorch") && !json_object_get(c, "ports"))
            json_object_set_new(c, "ports",
                                json_pack("[{s:s, s:i, s:s}]", "name", "pytorchjob-port",
                                          "containerPort", 23456, "protocol", "TCP"));
    }
    return tmpl;
}

static void ensure_service(struct world *w, const json_t *job, const json_t *pod)
{
    const struct resource *svc = resource_lookup("", "v1", "services");
    const json_t *pm = json_object_get(pod, "metadata");
    if (store_get(w->store, svc, kstr(pm, "namespace"), kstr(pm, "name")))
        return;
    json_t *sel = json_deep_copy(json_object_get(pm, "labels"));
    json_object_del(sel, "training.kubeflow.org/job-role");
    json_t *s =
        json_pack("{s:{s:s, s:s, s:O, s:o}, s:{s:s, s:s, s:o, s:[{s:s, s:i, s:i}]}}", "metadata",
                  "name", kstr(pm, "name"), "namespace", kstr(pm, "namespace"), "labels",
                  json_object_get(pm, "labels"), "ownerReferences", owner_ref(job), "spec",
                  "clusterIP", "None", "type", "ClusterIP", "selector", sel, "ports", "name",
                  "pytorchjob-port", "port", 23456, "targetPort", 23456);
    if (store_create(w->store, svc, s, NULL))
        events_emit(w, job, &src, "Normal", "SuccessfulCreateService", NULL, "Created service: %s",
                    kstr(pm, "name"));
}

/* The job's pods, found by their fixed names and checked by owner uid. Caller frees with
 * store_list_free(). */
static json_t **own_pods(struct world *w, const json_t *job, size_t *n)
{
    const json_t *m = json_object_get(job, "metadata");
    const struct resource *pods_res = resource_lookup("", "v1", "pods");
    json_t *specs = kpath(job, "spec.pytorchReplicaSpecs");
    size_t cap = 0, count = 0;
    const char *rtype;
    json_t *spec;
    json_object_foreach (specs, rtype, spec)
        cap += (size_t)(replicas(spec) > 0 ? replicas(spec) : 0);
    json_t **out = xcalloc(cap + 1, sizeof(json_t *));
    json_object_foreach (specs, rtype, spec) {
        char lrt[16], name[300];
        lower(rtype, lrt, sizeof(lrt));
        for (int i = 0; i < replicas(spec) && count < cap; i++) {
            snprintf(name, sizeof(name), "%s-%s-%d", kstr(m, "name"), lrt, i);
            json_t *pod = store_get(w->store, pods_res, kstr(m, "namespace"), name);
            if (pod && jobs_owned(pod, kstr(m, "uid")))
                out[count++] = json_incref(pod);
        }
    }
    *n = count;
    return out;
}

/* One replica's pods: create the missing, handle the failed, count the rest. */
static void sync_replica(struct world *w, const json_t *job, const char *rtype, const json_t *spec,
                         struct counts *rc, json_t *rstatus)
{
    const json_t *m = json_object_get(job, "metadata");
    const char *name = kstr(m, "name"), *ns = kstr(m, "namespace"), *uid = kstr(m, "uid");
    const char *policy = restart_policy(spec);
    char lrt[16], pname[300];
    lower(rtype, lrt, sizeof(lrt));
    memset(rc, 0, sizeof(*rc));
    for (int i = 0; i < replicas(spec); i++) {
        snprintf(pname, sizeof(pname), "%s-%s-%d", name, lrt, i);
        const json_t *pod = store_get(w->store, resource_lookup("", "v1", "pods"), ns, pname);
        if (pod && !jobs_owned(pod, uid))
            pod = NULL; /* someone else's: creating ours will fail with AlreadyExists */
        if (!pod && !jobs_may_create(w))
            continue;
        if (!pod) {
            json_t *p = new_pod(job, rtype, spec, i);
            jobs_create_pod(w, job, p, &src);
            if ((pod = store_get(w->store, resource_lookup("", "v1", "pods"), ns, pname)))
                ensure_service(w, job, pod);
            rc->active++;
            continue;
        }
        if (kpath(pod, "metadata.deletionTimestamp"))
            continue;
        const char *phase = kstr(kpath(pod, "status"), "phase");
        if (strcmp(policy, "Never") && strcmp(policy, "ExitCode"))
            rc->restarts += jobs_restarts(pod);
        if (!strcmp(phase, "Succeeded")) {
            rc->succeeded++;
        } else if (!strcmp(phase, "Failed")) {
            int code = jobs_exit_code(pod, "pytorch");
            events_emit(w, job, &src, "Normal", "ExitedWithCode", NULL,
                        "Pod: %s.%s exited with code %d", ns, pname, code);
            bool retry = !strcmp(policy, "ExitCode") ? code >= 128 : strcmp(policy, "Never") != 0;
            if (retry) {
                jobs_delete_pod(w, job, pod, &src);
                rc->restarting = true;
            }
            rc->failed++;
        } else {
            rc->active++;
            rc->running += !strcmp(phase, "Running");
        }
    }
    json_t *st = json_object();
    if (rc->active)
        json_object_set_new(st, "active", json_integer(rc->active));
    if (rc->succeeded)
        json_object_set_new(st, "succeeded", json_integer(rc->succeeded));
    if (rc->failed)
        json_object_set_new(st, "failed", json_integer(rc->failed));
    char sel[600];
    snprintf(sel, sizeof(sel),
             "training.kubeflow.org/job-name=%s,training.kubeflow.org/operator-name="
             "pytorchjob-controller,training.kubeflow.org/replica-type=%s",
             name, lrt);
    json_object_set_new(st, "selector", json_string(sel));
    json_object_set_new(rstatus, rtype, st);
}

static void finish(struct world *w, const json_t *job, json_t *status, const char *type,
                   const char *reason, const char *msg)
{
    jobs_condition_v1(status, type, "True", reason, msg);
    ktime_set(status, "completionTime", clock_now_ns());
    events_emit(w, job, &src, strcmp(type, "Failed") ? "Normal" : "Warning", reason, NULL, "%s",
                msg);
}

/* A finished job: clean pods up per cleanPodPolicy, delete the job after its TTL. */
static void finished(struct world *w, const json_t *job, json_t **pods, size_t n)
{
    const char *policy = kstr(kpath(job, "spec.runPolicy"), "cleanPodPolicy");
    for (size_t i = 0; i < n; i++) {
        const char *phase = kstr(kpath(pods[i], "status"), "phase");
        if (!strcmp(policy, "All") || (!strcmp(policy, "Running") &&
                                       (!strcmp(phase, "Running") || !strcmp(phase, "Pending"))))
            jobs_delete_pod(w, job, pods[i], &src);
    }
    json_t *ttl = kpath(job, "spec.runPolicy.ttlSecondsAfterFinished");
    int64_t done;
    const char *at = json_string_value(kpath(job, "status.completionTime"));
    if (json_is_integer(ttl) && at && clock_parse(at, &done) == 0 &&
        clock_now_ns() >= done + json_integer_value(ttl) * NS_PER_SEC) {
        const json_t *m = json_object_get(job, "metadata");
        json_decref(gc_delete(w, resource_lookup("kubeflow.org", "v1", "pytorchjobs"),
                              kstr(m, "namespace"), kstr(m, "name"), "Background", -1, NULL));
    }
}

static bool suspend(struct world *w, const json_t *job, json_t *status, json_t **pods, size_t n)
{
    const char *name = kstr(json_object_get(job, "metadata"), "name");
    char msg[400];
    if (!json_is_true(kpath(job, "spec.runPolicy.suspend"))) {
        if (jobs_condition_true(status, "Suspended")) {
            snprintf(msg, sizeof(msg), "PyTorchJob %s is resumed.", name);
            jobs_condition_v1(status, "Suspended", "False", "PyTorchJobResumed", msg);
            json_object_del(status, "startTime");
            events_emit(w, job, &src, "Normal", "PyTorchJobResumed", NULL, "%s", msg);
        }
        return false;
    }
    for (size_t i = 0; i < n; i++)
        jobs_delete_pod(w, job, pods[i], &src);
    if (!jobs_condition_true(status, "Suspended")) {
        snprintf(msg, sizeof(msg), "PyTorchJob %s is suspended.", name);
        jobs_condition_v1(status, "Running", "False", "PyTorchJobSuspended", msg);
        jobs_condition_v1(status, "Suspended", "True", "PyTorchJobSuspended", msg);
        json_object_del(status, "startTime");
        events_emit(w, job, &src, "Normal", "PyTorchJobSuspended", NULL, "%s", msg);
    }
    json_object_set_new(status, "replicaStatuses", json_object());
    return true;
}

/* Backoff limit and active deadline: the job fails as a whole. */
static bool past_limits(const json_t *job, const json_t *status, int restarts, char *msg,
                        size_t size)
{
    const char *name = kstr(json_object_get(job, "metadata"), "name");
    json_t *limit = kpath(job, "spec.runPolicy.backoffLimit");
    if (json_is_integer(limit) && restarts > json_integer_value(limit)) {
        snprintf(msg, size,
                 "PyTorchJob %s has failed because it has reached the specified "
                 "backoff limit",
                 name);
        return true;
    }
    json_t *ads = kpath(job, "spec.runPolicy.activeDeadlineSeconds");
    int64_t start;
    const char *st = kstr(status, "startTime");
    if (json_is_integer(ads) && clock_parse(st, &start) == 0 &&
        clock_now_ns() >= start + json_integer_value(ads) * NS_PER_SEC) {
        snprintf(msg, size,
                 "PyTorchJob %s has failed because it was active longer than "
                 "specified deadline",
                 name);
        return true;
    }
    return false;
}

static void update_conditions(struct world *w, const json_t *job, json_t *status,
                              const struct counts *master, const struct counts *worker,
                              bool has_master, int nworkers)
{
    const char *name = kstr(json_object_get(job, "metadata"), "name");
    char msg[400];
    const struct counts *bad = master->failed ? master : worker;
    const char *bad_type = master->failed ? "Master" : "Worker";
    if (master->restarting || worker->restarting) {
        snprintf(msg, sizeof(msg), "PyTorchJob %s is restarting because %d %s replica(s) failed.",
                 name, bad->failed, bad_type);
        if (!jobs_condition_true(status, "Restarting"))
            events_emit(w, job, &src, "Warning", "PyTorchJobRestarting", NULL, "%s", msg);
        jobs_condition_v1(status, "Restarting", "True", "PyTorchJobRestarting", msg);
    } else if (master->failed || worker->failed) {
        snprintf(msg, sizeof(msg), "PyTorchJob %s is failed because %d %s replica(s) failed.", name,
                 bad->failed, bad_type);
        finish(w, job, status, "Failed", "PyTorchJobFailed", msg);
    } else if (has_master ? master->succeeded > 0 : nworkers > 0 && worker->succeeded == nworkers) {
        snprintf(msg, sizeof(msg), "PyTorchJob %s is successfully completed.", name);
        finish(w, job, status, "Succeeded", "PyTorchJobSucceeded", msg);
    } else if (has_master ? master->running > 0 : worker->running > 0) {
        snprintf(msg, sizeof(msg), "PyTorchJob %s is running.", name);
        jobs_condition_v1(status, "Running", "True", "PyTorchJobRunning", msg);
    }
}

void pytorchjob_reconcile(struct world *w, const json_t *job, json_t **index)
{
    const json_t *m = json_object_get(job, "metadata");
    if (json_object_get(m, "deletionTimestamp"))
        return;
    const json_t *st = json_object_get(job, "status");
    const char *clean = kstr(kpath(job, "spec.runPolicy"), "cleanPodPolicy");
    if ((jobs_condition_true(st, "Succeeded") || jobs_condition_true(st, "Failed")) &&
        !kpath(job, "spec.runPolicy.ttlSecondsAfterFinished") && strcmp(clean, "All") &&
        strcmp(clean, "Running"))
        return; /* finished, and nothing to clean up */
    const struct resource *res = resource_lookup("kubeflow.org", "v1", "pytorchjobs");
    json_t *status = json_deep_copy(st);
    if (!json_is_object(status)) {
        json_decref(status);
        status = json_object();
    }
    char msg[400];
    if (!json_object_get(status, "conditions")) {
        snprintf(msg, sizeof(msg), "PyTorchJob %s is created.", kstr(m, "name"));
        jobs_condition_v1(status, "Created", "True", "PyTorchJobCreated", msg);
    }
    size_t n;
    (void)index; /* the operator's pods have fixed names: no label index needed */
    json_t **pods = own_pods(w, job, &n);
    if (jobs_condition_true(status, "Succeeded") || jobs_condition_true(status, "Failed")) {
        finished(w, job, pods, n);
    } else if (!suspend(w, job, status, pods, n)) {
        if (!json_object_get(status, "startTime"))
            ktime_set(status, "startTime", clock_now_ns());
        json_t *specs = kpath(job, "spec.pytorchReplicaSpecs");
        json_t *mspec = json_object_get(specs, "Master"), *wspec = json_object_get(specs, "Worker");
        struct counts mc = { 0 }, wc = { 0 };
        json_t *rstatus = json_object();
        if (mspec)
            sync_replica(w, job, "Master", mspec, &mc, rstatus);
        if (wspec)
            sync_replica(w, job, "Worker", wspec, &wc, rstatus);
        json_object_set_new(status, "replicaStatuses", rstatus);
        if (past_limits(job, status, mc.restarts + wc.restarts, msg, sizeof(msg)))
            finish(w, job, status, "Failed", "PyTorchJobFailed", msg);
        else
            update_conditions(w, job, status, &mc, &wc, mspec != NULL, wspec ? replicas(wspec) : 0);
    }
    store_list_free(pods, n);
    jobs_write_status(w, res, store_get(w->store, res, kstr(m, "namespace"), kstr(m, "name")),
                      status);
}
