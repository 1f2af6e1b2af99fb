/*
 * kubelet_pod: the runtime state the kubelet simulation keeps per pod and per container,
 * shared by kubelet.c (which advances it) and kubelet_pod.c (which renders it into the stored
 * Pod's status). Internal to the kubelet simulation.
 */
#ifndef KS_KUBELET_POD_H
#define KS_KUBELET_POD_H

#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>

#include "tests/kube/kubelet_script.h"

struct world;

/* ST_LOST: on a node that stopped reporting (behind a real API server: deleted at `at`). */
enum stage { ST_UNSCHEDULED, ST_PULLING, ST_STUCK, ST_RUNNING, ST_DONE, ST_KILLING, ST_LOST };
enum cstate { C_WAITING, C_RUNNING, C_TERMINATED };

struct ctr {
    char name[64], image[256], id[80];
    enum cstate state;
    char wait_reason[32], wait_msg[256], reason[32];
    int restarts, exit_code;
    int64_t started, finished; /* wall clock */
    json_t *last;              /* lastState.terminated, or NULL */
    struct script script;
    size_t next_line;
    int64_t next_at, backoff_until; /* simulated clock */
    bool force_restart;
};

struct podrt {
    char uid[40], ns[254], name[254], node[254], ip[20], host_ip[20];
    enum stage stage;
    int64_t at;      /* simulated time of the next step */
    int64_t started; /* wall clock: status.startTime */
    const char *evict_reason, *evict_msg;
    struct ctr *c;
    size_t n;
    json_t *pod; /* the newest stored version seen (own reference), like an informer cache */
    bool idle;   /* finished or stuck: nothing to do until the pod changes */
    bool pulled; /* the images are pulled (a configuration error retries only the start) */
    bool gone;   /* deleted from the store */
    struct podrt *next;
};

/* Rewrites the pod's status from rt when it differs; sched_msg is a FailedScheduling reason
 * (NULL once scheduled). World lock held. */
void kubelet_write_status(struct world *w, struct podrt *rt, const json_t *pod,
                          const char *sched_msg);

#endif
