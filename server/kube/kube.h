/*
 * kube: the `kubernetes` executor. A job becomes a PyTorchJob or TrainJob (render.c) created
 * through the Kubernetes API (client.c) under a deterministic name, so that creating it again
 * after a daemon crash adopts the existing object instead of doubling it. Watches (watch.c) on
 * the jobs, their pods, the namespace's Events and the cluster's Nodes drive every report: the
 * controller learns job and rank states from the objects' conditions and the pods' container
 * states (status.c), the log pipeline gets every pod's lines (logs.c), the job timeline gets
 * the Kubernetes Events (events.c), and GET /v1/nodes reads a snapshot of the nodes (nodes.c).
 *
 * The Training Operator restarts pods itself (manages_restarts): trainyard records restarts and
 * never orders them. fits() is always true (the cluster, or Kueue, queues); start() renders and
 * queues the creation; stop() deletes with propagationPolicy=Foreground (the job is cancelled
 * once its pods are gone); a deleted trainyard job's object is removed with Background.
 *
 * Threads: one loop thread owns every cache and all network I/O. The executor functions run
 * on the controller's thread and only queue commands (adopt() waits for its answer);
 * kube_nodes_snapshot() and metrics may be called from any thread.
 */
#ifndef TY_KUBE_KUBE_H
#define TY_KUBE_KUBE_H

#include <jansson.h>

#include "job/jobstate.h"
#include "server/control/executor.h"
#include "server/ingest/logsource.h"

struct kube_options {
    const char *kubeconfig; /* "" or NULL: KUBECONFIG, ~/.kube/config, in-cluster */
    const char *context;
    const char *namespace;
    int64_t max_line;
    int max_log_streams; /* follow streams at once (0: 1000) */
    const char *url;     /* TRAINYARD_URL for the ranks; may be set later */
    struct log_sources logs;
    void *ctx;
    /* trainyard's state of a job (0), or -1 when it no longer exists; asked from the loop
     * thread about jobs whose object waits suspended (Kueue), to notice cancellations. */
    int (*job_state)(void *ctx, int64_t pk, enum job_state *state);
    /* The nodes with a trainyard mark of `state` ("bad": new pods never go there; "suspect":
     * only when no other node fits), from POST /v1/nodes/{name}/mark and the diagnosis.
     * NULL-terminated; the executor frees each string and the array. NULL: none. Called on
     * the controller's thread and from dry runs (HTTP threads). */
    char **(*marked_nodes)(void *ctx, const char *state);
};

/* Reads the kubeconfig and starts the loop thread. NULL with err when the configuration is
 * unusable (the API server is not contacted here). */
struct executor *kube_new(const struct kube_options *opts, struct err *err);
void kube_set_url(struct executor *ex, const char *url);
/* Stops the loop thread (before the log pipeline it feeds is freed); idempotent. */
void kube_stop(struct executor *ex);
/* The GET /v1/nodes document (new reference), or NULL with err (not listed yet, forbidden). */
json_t *kube_nodes_snapshot(struct executor *ex, struct err *err);
/* Where the executor connects: "<server> (<source>, context <c>, namespace <ns>)". */
const char *kube_describe(struct executor *ex);
/* Server-side validation of a rendered object (POST ?dryRun=All) from any thread but the
 * loop's; 0, or -1 with the Kubernetes Status in err. */
int kube_server_dry_run(struct executor *ex, const json_t *object, struct err *err);

#endif
