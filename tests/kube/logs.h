/*
 * logs: GET /api/v1/namespaces/NS/pods/NAME/log with the PodLogOptions kubectl and trainyard
 * use: container, follow, previous, sinceSeconds, sinceTime, timestamps, tailLines, limitBytes.
 * Errors use the kubelet's words (validateContainerLogStatus). A follow stream ends when the
 * container instance it reads terminates, like `kubectl logs -f` since Kubernetes 1.6.
 */
#ifndef KS_LOGS_H
#define KS_LOGS_H

#include "tests/kube/rest.h"

void logs_handle(struct request *req, const struct target *t, struct reply *rep);
/* The same with the container given (the kubelet's /containerLogs/NS/POD/CONTAINER, which a
 * real API server calls for GET .../log; tests/kube/sim), or NULL to take it from the query. */
void logs_serve(struct request *req, const struct target *t, const char *container,
                struct reply *rep);

#endif
