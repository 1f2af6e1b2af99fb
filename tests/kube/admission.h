/*
 * admission: what runs between decoding and storing an object: namespace lifecycle, name
 * rules, and the Kubeflow validating webhooks (PyTorchJob webhook denials are 403 Forbidden,
 * TrainJob CEL rules are 422 Invalid), so that trainyard meets the same refusals as on EKS.
 */
#ifndef KS_ADMISSION_H
#define KS_ADMISSION_H

#include <jansson.h>

#include "core/err.h"
#include "tests/kube/resource.h"

struct world;

/* Checks obj (a create when old is NULL, else an update of old). World lock held. */
int admission_review(struct world *w, const struct resource *res, const json_t *obj,
                     const json_t *old, struct err *err);

/* The Training Operator's PyTorchJob validating webhook alone: 0, or -1 with its denial
 * (ERR_FORBIDDEN, "admission webhook \"validator.pytorchjob...\" denied the request: ..."). */
int admission_pytorchjob(const json_t *job, struct err *err);

/* What the pod strategy sets on create (PrepareForCreate): phase Pending, the QoS class and
 * the default restartPolicy. */
void admission_prepare_pod(json_t *pod);

#endif
