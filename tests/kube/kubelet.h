/*
 * kubelet: the simulated node agents. For every pod it schedules (through nodes.c), pulls,
 * starts containers, runs each container's script (lines printed on a timer, then an exit code),
 * restarts containers per restartPolicy with CrashLoopBackOff, kills them on deletion, and
 * keeps status (phase, conditions, containerStatuses with state/lastState/restartCount) and
 * Events the way the real kubelet reports them.
 *
 * A container's script comes from its pod's annotations or its env (see docs/kube-testserver.md):
 *   testserver.trainyard.io/lines, /steps, /line-interval-ms, /exit-code, /rank-exit-codes,
 *   /oom-ranks, /fail-attempts, /run-forever, /image-pull-error; env TESTSERVER_LINES,
 *   TESTSERVER_EXIT_CODE, TESTSERVER_STEPS, TESTSERVER_LINE_INTERVAL_MS.
 * All functions need the world lock held.
 */
#ifndef KS_KUBELET_H
#define KS_KUBELET_H

#include <stdbool.h>

#include <jansson.h>

#include "core/err.h"

struct world;
struct kubelet;

/* Caller frees with kubelet_free(). */
struct kubelet *kubelet_new(void);
void kubelet_free(struct kubelet *k);
/* Advances every pod to the simulated time w->sim_ns. */
void kubelet_tick(struct world *w, struct kubelet *k);

/* Control API. container NULL = the first container. */
struct kubelet_exit {
    int code;           /* exit code */
    bool oom;           /* OOMKilled (code 137) */
    bool restart;       /* restart in place whatever the restartPolicy says */
    const char *reason; /* terminated.reason override, NULL = Completed/Error/OOMKilled */
};
int kubelet_exit(struct world *w, struct kubelet *k, const char *ns, const char *pod,
                 const char *container, const struct kubelet_exit *how, struct err *err);
/* Makes a running container print lines (a JSON array of strings) now. */
int kubelet_print(struct world *w, struct kubelet *k, const char *ns, const char *pod,
                  const char *container, const json_t *lines, struct err *err);
/* A node was lost (deleted = the Node object is gone too): its pods fail. */
void kubelet_node_lost(struct world *w, struct kubelet *k, const char *node, bool deleted);

#endif
