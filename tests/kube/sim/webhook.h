/*
 * webhook: the Training Operator's validating webhook for PyTorchJobs
 * (validator.pytorchjob.training-operator.kubeflow.org, kubeflow/trainer v1.9
 * pkg/webhooks/pytorch), served by the simulator because the operator it belongs to is
 * simulated: the real API server calls it on every create and update (dry runs included) and
 * answers a denial with 403 Forbidden "admission webhook ... denied the request: ...", as on a
 * cluster. The rules are admission_pytorchjob()'s (tests/kube/admission.c).
 */
#ifndef KSIM_WEBHOOK_H
#define KSIM_WEBHOOK_H

#include "core/err.h"
#include "server/kube/client.h"
#include "tests/kube/http.h"

#define WEBHOOK_PATH "/validate-kubeflow-org-v1-pytorchjob"

/* Registers (blocking) a ValidatingWebhookConfiguration that sends PyTorchJob creates and
 * updates to https://127.0.0.1:port WEBHOOK_PATH, trusting ca_pem. */
int webhook_register(struct kube_client *c, int port, const char *ca_pem, struct err *err);
/* Removes it (blocking; a stopped simulator must not block PyTorchJob creation). */
void webhook_unregister(struct kube_client *c);
/* POST WEBHOOK_PATH: an AdmissionReview (admission.k8s.io/v1) in, its response out. */
void webhook_handle(struct request *req, struct reply *rep);

#endif
