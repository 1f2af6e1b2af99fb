/*
 * kubelet_script: what a simulated container does: the lines it prints, at what pace, and how
 * it ends. Read from the pod's annotations (testserver.trainyard.io/...) and the container's
 * env (TESTSERVER_...), so a test scripts a job through its manifest alone. Without either, a
 * container prints a short torch-style training log and exits 0.
 */
#ifndef KS_KUBELET_SCRIPT_H
#define KS_KUBELET_SCRIPT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

struct script {
    char **lines;
    size_t n;
    int64_t interval_ns; /* simulated time between lines */
    int exit_code;
    bool oom;     /* ends OOMKilled (exit 137) */
    bool forever; /* never exits by itself */
};

/* attempt: 1 for the first start of this container (same pod name), 2 after a restart... */
void script_load(struct script *s, const json_t *pod, const json_t *container, int attempt);
void script_release(struct script *s);
/* The rank of a pod: env RANK, else the job-completion-index annotation, else the replica
 * index label; -1 when none. */
int script_rank(const json_t *pod, const json_t *container);

#endif
