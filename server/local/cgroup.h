/*
 * cgroup: memory cgroups for the local executor's ranks, so that a rank's memory limit
 * (resources.memory) holds and an OOM kill is known for what it is. Each rank gets its own
 * cgroup under the daemon's (cgroup v1 memory controller, or v2 when memory is delegated);
 * the kernel counts OOM kills per cgroup (v2 memory.events, v1 memory.oom_control).
 *
 * Where no cgroup can be made (no write access, controller not delegated), ranks run in the
 * daemon's cgroup and an OOM kill is inferred from a counter that rose while the rank ran:
 * the daemon's cgroup's, else the kernel's (/proc/vmstat oom_kill).
 *
 * Plain files under /sys/fs/cgroup and /proc; no state; thread-safe.
 */
#ifndef TY_CGROUP_H
#define TY_CGROUP_H

#include <stdint.h>

/* Where rank cgroups can be made (caller frees), or NULL. */
char *cgroup_memory_root(void);
/* Creates root/name with a memory limit (bytes; 0: none). Returns its path (caller frees), or
 * NULL when it cannot be made. */
char *cgroup_create(const char *root, const char *name, int64_t limit_bytes);
/* Moves the calling process into the cgroup at path (the shim's child, before exec). */
int cgroup_enter(const char *path);
/* OOM kills the kernel counted in the cgroup at path; -1 when unknown. */
int64_t cgroup_oom_kills(const char *path);
/* OOM kills counted where no rank cgroup exists: the daemon's cgroup, else the kernel's
 * total; -1 when unknown. Compare two readings. */
int64_t cgroup_oom_kills_fallback(void);
/* Removes an empty cgroup (its processes have exited). */
void cgroup_remove(const char *path);

#endif
