/*
 * jobs: the simulated Kubeflow controllers. pytorchjob.c plays the Training Operator v1
 * (kubeflow.org/v1 PyTorchJob), trainjob.c plays Trainer v2 with JobSet and the Job controller
 * underneath (trainer.kubeflow.org/v1alpha1 TrainJob); both are level-triggered reconcilers
 * called for every job on every simulation tick. This header also holds their shared helpers.
 * All functions need the world lock held.
 */
#ifndef KS_JOBS_H
#define KS_JOBS_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "tests/kube/resource.h"

struct world;
struct event_source;

/* index: the tick's pod index slot for jobs_pods() (NULL until first used). */
void pytorchjob_reconcile(struct world *w, const json_t *job, json_t **index);
void trainjob_reconcile(struct world *w, const json_t *job, json_t **index);

/* Kubeflow v1 JobCondition rules (setCondition/filterOutCondition of kubeflow common): no
 * change after Failed; Running and Restarting replace each other; Succeeded/Failed turn
 * Running False; the changed condition moves to the end (the State column). */
void jobs_condition_v1(json_t *status, const char *type, const char *cstatus, const char *reason,
                       const char *message);
/* metav1.Condition (TrainJob): replaced in place, lastTransitionTime kept if status is same. */
void jobs_condition(json_t *status, const char *type, const char *cstatus, const char *reason,
                    const char *message, json_int_t generation);
/* True when status.conditions has type with status "True". */
bool jobs_condition_true(const json_t *status, const char *type);

/* The pods in ns with label key=value and, if owner_uid is set, an ownerReference to it. They
 * come from an index by job label (training.kubeflow.org/job-name,
 * jobset.sigs.k8s.io/jobset-name) built at the first call of a tick into *index, so that
 * reconciling N jobs does not scan every pod N times; the caller of the reconcilers frees it
 * with json_decref(). Caller frees the result with store_list_free(). */
json_t **jobs_pods(struct world *w, json_t **index, const char *ns, const char *key,
                   const char *value, const char *owner_uid, size_t *n);
/* True when obj has an ownerReference to uid. */
bool jobs_owned(const json_t *obj, const char *uid);
/* False when the controllers have created as many pods as a tick allows (they go on next
 * tick). */
bool jobs_may_create(struct world *w);
/* Stores pod (steals it) and records SuccessfulCreatePod on the job. */
void jobs_create_pod(struct world *w, const json_t *job, json_t *pod,
                     const struct event_source *src);
/* Deletes pod (graceful) and records SuccessfulDeletePod on the job. */
void jobs_delete_pod(struct world *w, const json_t *job, const json_t *pod,
                     const struct event_source *src);
/* Sets env name=value on a container (replacing an existing entry). */
void jobs_set_env(json_t *container, const char *name, const char *value);
/* The exit code of container in pod (state, else lastState), or -1. */
int jobs_exit_code(const json_t *pod, const char *container);
/* Sum of restartCount over the pod's containers. */
int jobs_restarts(const json_t *pod);
/* Stores the job with status (steals status) when it changed. */
void jobs_write_status(struct world *w, const struct resource *res, const json_t *job,
                       json_t *status);
/* Copies the job's testserver.trainyard.io/ annotations into the pod's metadata. */
void jobs_copy_test_annotations(const json_t *job, json_t *pod_meta);

#endif
