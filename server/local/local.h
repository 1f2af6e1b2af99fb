/*
 * local: the embedded executor. Each rank is a process on this machine, started through a
 * shim (server/local/shim.c) in its own session and process group, with the environment a
 * distributed launcher (torchrun, the Kubeflow operator) would give it and nothing of the
 * daemon's. Capacity is counted in rank slots; a job starts only when all its ranks fit.
 *
 * Where the host allows (the daemon is root, cgroup v2 can be delegated), each rank runs
 * sandboxed (sandbox.h) as its job's own identity, in cgroups of its own (cgroup.h) with a
 * process limit and the job's memory; stopping a rank ends every process it made.
 */
#ifndef TY_LOCAL_H
#define TY_LOCAL_H

#include <stdbool.h>
#include <stdint.h>

#include "server/control/executor.h"
#include "server/ingest/logsource.h"

enum local_sandbox { LOCAL_SANDBOX_AUTO, LOCAL_SANDBOX_REQUIRED, LOCAL_SANDBOX_OFF };

struct local_options {
    const char *data_dir; /* rank files go under DATA_DIR/jobs/<id>/ */
    int slots;
    enum local_sandbox sandbox;
    unsigned uid_base;       /* ranks of a job run as uid_base + n, gid the same */
    unsigned uid_count;      /* how many such identities there are */
    int64_t pids_max;        /* processes per rank at most; 0: no limit */
    const char *const *hide; /* files and directories ranks must not see (NULL-terminated) */
    const char *gpus;        /* --local-gpus: NULL/"auto", "none", or indices/UUIDs to use */
    const char *gpus_file;   /* --test-gpus: a JSON list of GPUs instead of NVML (tests) */
    int64_t max_line;
    int64_t max_log_bytes;  /* a job's log (--log-max-bytes): its ranks' raw files share it */
    const char *daemon_url; /* TRAINYARD_URL for the ranks; may be set later */
    struct log_sources logs;
};

/* NULL with err when opts->sandbox is REQUIRED and the host cannot sandbox ranks. */
struct executor *local_new(const struct local_options *opts, struct err *err);
/* The GPUs the executor hands out (0 on a machine without NVIDIA GPUs). */
int local_gpu_count(struct executor *ex);
/* The local machine as GET /v1/nodes lists it: GPUs, slots and who uses them (new reference).
 * Safe from any thread. */
json_t *local_node(struct executor *ex);
/* Whether ranks run sandboxed; when not, why (static or executor-owned text) in *why. */
bool local_sandboxed(struct executor *ex, const char **why);
/* The URL ranks reach the daemon at, once the listener is bound. */
void local_set_url(struct executor *ex, const char *url);
/* The directory holding a job's rank files (caller frees). */
char *local_job_dir(const char *data_dir, const char *job_id);

#endif
