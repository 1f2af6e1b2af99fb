/*
 * local: the embedded executor. Each rank is a process on this machine, started through a
 * shim (server/local/shim.c) in its own session and process group, with the environment a
 * distributed launcher (torchrun, the Kubeflow operator) would give it. Capacity is counted in
 * rank slots; a job starts only when all its ranks fit.
 */
#ifndef TY_LOCAL_H
#define TY_LOCAL_H

#include <stdint.h>

#include "server/control/executor.h"
#include "server/ingest/logsource.h"

struct local_options {
    const char *data_dir; /* rank files go under DATA_DIR/jobs/<id>/ */
    int slots;
    int64_t max_line;
    const char *daemon_url; /* TRAINYARD_URL for the ranks; may be set later */
    struct log_sources logs;
};

struct executor *local_new(const struct local_options *opts, struct err *err);
/* The URL ranks reach the daemon at, once the listener is bound. */
void local_set_url(struct executor *ex, const char *url);
/* The directory holding a job's rank files (caller frees). */
char *local_job_dir(const char *data_dir, const char *job_id);

#endif
