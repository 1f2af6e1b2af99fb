/*
 * render: a job spec as the Kubernetes objects that run it. Pure functions (no I/O), so dry
 * runs, start() and the unit tests see the same objects.
 *
 *  - PyTorchJob (kubeflow.org/v1, Training Operator v1.7+): a Master replica and nodes-1 Worker
 *    replicas (or Workers only with an elasticPolicy), container `pytorch`, nprocPerNode,
 *    restartPolicy from spec.restart, runPolicy backoffLimit / activeDeadlineSeconds / suspend.
 *  - TrainJob (trainer.kubeflow.org/v1alpha1): runtimeRef, trainer (image, command, args, env,
 *    numNodes, numProcPerNode, resourcesPerNode) and the pod settings in the form the installed
 *    Trainer takes: runtimePatches (v2.2+), podTemplateOverrides (v2.1) or podSpecOverrides (v2.0).
 *  - A user's own PyTorchJob/TrainJob manifest (spec.kubernetes.manifest), as given, with the
 *    trainyard labels added.
 * Every object, pod template and Secret carries trainyard.io/job-id and trainyard.io/job-name.
 */
#ifndef TY_KUBE_RENDER_H
#define TY_KUBE_RENDER_H

#include <jansson.h>

#include "job/spec.h"
#include "core/err.h"

#define KUBE_LABEL_JOB_ID   "trainyard.io/job-id"
#define KUBE_LABEL_JOB_NAME "trainyard.io/job-name"
#define KUBE_TOKEN_KEY      "token"

enum kube_trainer_api {
    TRAINER_RUNTIME_PATCHES,    /* v2.2+ */
    TRAINER_TEMPLATE_OVERRIDES, /* v2.1 */
    TRAINER_SPEC_OVERRIDES,     /* v2.0 */
};

struct kube_render_ctx {
    const char *job_id;
    const char *namespace; /* the executor's default namespace */
    int attempt;
    const char *url; /* TRAINYARD_URL for the ranks, or NULL */
    bool with_token; /* TRAINYARD_TOKEN from the job's Secret */
    enum kube_trainer_api trainer_api;
    /* Nodes marked in trainyard (store/nodes.h), NULL-terminated; may be NULL. `bad` ones are
     * never used (required node affinity), `suspect` ones only when no other node fits
     * (preferred node affinity). */
    const char *const *avoid_nodes;      /* marked bad */
    const char *const *prefer_not_nodes; /* marked suspect */
};

/* The object to create (new reference), or NULL with ERR_VALIDATION. */
json_t *kube_render(const struct spec_view *v, const struct kube_render_ctx *rc, struct err *err);
/* The kind ("PyTorchJob" or "TrainJob"), name and namespace the spec's object has (borrowed
 * from v, or written into the buffers). */
const char *kube_render_kind(const struct spec_view *v);
void kube_render_name(const struct spec_view *v, const char *job_id, char *out, size_t size);
const char *kube_render_namespace(const struct spec_view *v, const char *def);
/* The Secret holding a job's worker token (new reference). */
json_t *kube_render_secret(const char *name, const char *ns, const char *job_id,
                           const char *job_name, const char *token);
/* The name of a job's token Secret. */
void kube_render_secret_name(const char *object_name, char *out, size_t size);
/* The REST collection path of kind in ns. */
void kube_render_path(const char *kind, const char *ns, char *out, size_t size);

#endif
