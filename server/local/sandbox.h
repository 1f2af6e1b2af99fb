/*
 * sandbox: what a local rank may see and be. The daemon runs as root on a shared machine; a
 * rank runs as its job's own unprivileged identity, in a mount namespace of its own:
 *
 *  - identity: a uid and gid of the job's own (from --local-uid-base, one per running job), no
 *    supplementary groups, no capabilities, and no_new_privs, so setuid programs (sudo, su)
 *    cannot give them back. Unix permissions then keep the rank from the daemon's files,
 *    /proc/<pid>/environ and memory of other users' processes, and from signalling the daemon,
 *    the shims and other jobs' ranks;
 *  - files: the whole file system read-only and nosuid; private /tmp and /var/tmp; the daemon's
 *    data directory and secret files (token file, config, kubeconfig, TLS key) hidden under an
 *    empty tmpfs or /dev/null; read-write only the job's own directories (checkpoints, home) and
 *    a /dev/shm shared by the job's ranks alone.
 *
 * The same primitives as systemd's DynamicUser=, ProtectSystem=strict, PrivateTmp= and
 * InaccessiblePaths=, applied by the shim's child before exec: no helper process stands between
 * the shim and the rank, so the shim reaps the rank itself (its exact exit status) and SIGTERM
 * reaches it directly for a graceful stop. A PID namespace is not used: ranks of one job (NCCL,
 * libfabric's shm provider) must see each other's processes, and the per-job uid already keeps
 * other processes out of reach. tests/integration/90-isolation-local.sh tries each of these as a
 * hostile job would.
 */
#ifndef TY_SANDBOX_H
#define TY_SANDBOX_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "core/err.h"

#define SANDBOX_MAX_PATHS 16

struct sandbox {
    uid_t uid;
    gid_t gid;
    const char *hide[SANDBOX_MAX_PATHS]; /* directories: an empty tmpfs; files: /dev/null */
    size_t nhide;
    const char *bind[SANDBOX_MAX_PATHS]; /* read-write, at the same path */
    size_t nbind;
    const char *shm; /* a host directory mounted at /dev/shm; NULL: a private tmpfs */
};

/* Enters the sandbox: the calling process (root, single-threaded, about to exec) gets its
 * mounts and becomes sb->uid. Then changes to the directory cwd (or "/" when the rank may not
 * enter it). -1 with err when any step fails: the caller must not exec then. */
int sandbox_enter(const struct sandbox *sb, const char *cwd, struct err *err);

/* Whether this host lets the daemon sandbox ranks: it is root and a child can enter a sandbox.
 * 0, or -1 with err saying why not. Forks once; call at start. */
int sandbox_probe(struct err *err);

#endif
