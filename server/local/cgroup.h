/*
 * cgroup: the cgroups of the local executor's ranks. Each rank gets a node of its own in every
 * hierarchy that has something it needs, all under the same name:
 *  - a cgroup v2 node (cgroup.kill, cgroup.events): one write ends every process of the rank,
 *    those that called setsid() or double-forked included, and "populated 0" says they all
 *    ended. On a pure v2 host the same node holds memory.max and pids.max;
 *  - on a hybrid host (v1 controllers beside a v2 tree without them), a v1 memory cgroup
 *    (resources.memory is its limit) and a v1 pids cgroup (the rank's process limit).
 * The kernel counts OOM kills per memory cgroup (v2 memory.events, v1 memory.oom_control).
 *
 * The roots are found once (cgroup_roots_probe): under the daemon's own cgroups, so that a
 * daemon in a systemd service with Delegate=yes or in a container with its own cgroup namespace
 * keeps its ranks inside its own budget. On a pure v2 host the daemon moves itself into a
 * "daemon" leaf so that its node can enable memory and pids for its children (the kernel's
 * no-internal-processes rule).
 *
 * Where a hierarchy is missing, ranks run without that part and cgroup_roots_missing() says
 * what is missing; an OOM kill is then inferred from a counter that rose while the rank ran:
 * the daemon's cgroup's, else the kernel's (/proc/vmstat oom_kill).
 *
 * Plain files under /sys/fs/cgroup and /proc. Roots are read-only after the probe; the
 * functions on a rank's cgroups are safe from any thread.
 */
#ifndef TY_CGROUP_H
#define TY_CGROUP_H

#include <stdbool.h>
#include <stdint.h>

/* Where rank cgroups are made; any path may be NULL (that part is not available). */
struct cgroup_roots {
    char *unified;   /* v2 node of the daemon: rank nodes go under it */
    bool v2_memory;  /* the v2 node has memory.max for its children */
    bool v2_pids;    /* ... and pids.max */
    char *v1_memory; /* v1 memory cgroup of the daemon */
    char *v1_pids;   /* v1 pids cgroup of the daemon */
};

/* One rank's cgroups (paths, caller frees with cgroup_rank_release). */
struct cgroup_rank {
    char *unified;
    char *memory; /* where memory is limited and OOM kills are counted: v1, or the v2 node */
    char *pids;   /* where the process count is limited: v1, or the v2 node */
};

/* Finds the roots (see above). Never fails: what cannot be used is left NULL. */
void cgroup_roots_probe(struct cgroup_roots *roots);
void cgroup_roots_release(struct cgroup_roots *roots);
/* NULL when ranks can have a v2 node (kill), a memory limit and a process limit; else a static
 * sentence naming what is missing. */
const char *cgroup_roots_missing(const struct cgroup_roots *roots);

/* Creates the rank's cgroups named name in every root, with a memory limit (bytes; 0: none)
 * and a process limit (0: none). Parts that cannot be made stay NULL. */
void cgroup_rank_create(const struct cgroup_roots *roots, const char *name, int64_t memory_bytes,
                        int64_t pids_max, struct cgroup_rank *out);
/* The rank's existing cgroups named name (after a daemon restart); absent parts stay NULL. */
void cgroup_rank_find(const struct cgroup_roots *roots, const char *name, struct cgroup_rank *out);
/* Removes the rank's cgroups (their processes have ended) and frees the paths. */
void cgroup_rank_release(struct cgroup_rank *cg);

/* Moves the calling process into the cgroup at path (the shim's child, before exec). */
int cgroup_enter(const char *path);
/* Sends sig to every process in the cgroup at path, except skip (0: none). SIGKILL uses
 * cgroup.kill where the kernel has it. Returns how many processes were signalled, -1 when the
 * cgroup cannot be read. */
int cgroup_signal(const char *path, int sig, int skip);
/* Whether any process is left in the v2 node at path (cgroup.events "populated"). */
bool cgroup_populated(const char *path);
/* OOM kills the kernel counted in the memory cgroup at path; -1 when unknown. */
int64_t cgroup_oom_kills(const char *path);
/* OOM kills counted where no rank cgroup exists: the daemon's cgroup, else the kernel's
 * total; -1 when unknown. Compare two readings. */
int64_t cgroup_oom_kills_fallback(void);

#endif
