/*
 * local_internal: the local executor's state. local.c (the executor interface: capacity, start,
 * stop, polling ranks and reporting how they ended) and local_rank.c (rank processes: starting
 * a rank's shim, adopting one a previous daemon started) are one module in two files: both
 * keep the list of ranks and read the options, paths and counters, so they share struct local
 * whole. Not for use outside these two files; everything here runs on the controller thread,
 * except that metrics() reads the atomic counters from HTTP threads.
 */
#ifndef TY_LOCAL_INTERNAL_H
#define TY_LOCAL_INTERNAL_H

#include <limits.h>
#include <stdatomic.h>
#include <sys/types.h>

#include "server/local/local.h"

struct lrank {
    int64_t job_pk;
    int attempt;
    int rank;
    pid_t shim;
    pid_t pid; /* the rank process, leader of its process group; 0 until known */
    int pidfd; /* of the shim */
    bool our_child;
    bool running_reported;
    bool stopped;    /* trainyard asked it to stop */
    int64_t kill_at; /* SIGKILL deadline after SIGTERM; 0: none */
    char *dir;
    char key[32];
    char *cgroup;       /* the rank's memory cgroup, NULL: none */
    int64_t oom_before; /* the fallback OOM counter when the rank started, -1: unknown */
};

struct local {
    struct local_options opts;
    char *data_dir;
    char *url;
    char exe[PATH_MAX];
    struct lrank **ranks;
    size_t n, cap;
    char *cgroot; /* where rank cgroups are made, NULL: nowhere */
    atomic_int used;
    atomic_ullong spawned;
};

#define LOCAL(ex) ((struct local *)(ex)->impl)

/* One attempt being started: what every rank's environment is made from (all borrowed). */
struct launch {
    const struct job *job;
    const struct spec_view *spec;
    int attempt;
    int master_port;
    const char *token;
};

/* local.c */
/* DIR/NAME parsed, NULL when absent or not JSON (new reference). */
json_t *local_read_json(const char *dir, const char *name);
/* Reports RANK_RUNNING once the shim wrote rank.json (and learns the rank's pid). */
void local_check_started(struct executor *ex, struct lrank *r);
/* Reports how r ended from its status.json (or as lost when the shim left none). */
void local_report_end(struct executor *ex, struct lrank *r);

/* local_rank.c */
/* DATA_DIR/jobs/<id>/a<attempt>/r<rank> (caller frees). */
char *local_rank_dir(struct local *l, const char *job_id, int attempt, int rank);
/* Adds r to the ranks watched (takes it); removes the i-th one and frees it. */
void local_add_rank(struct local *l, struct lrank *r);
void local_remove_rank(struct local *l, size_t i);
/* Hands the rank's log file to the log collector (when it has a hook). */
void local_follow_log(struct local *l, struct lrank *r);
/* Starts one rank of the attempt under its shim; -1 with err when it could not be started. */
int local_spawn_rank(struct executor *ex, const struct launch *ln, int rank, struct err *err);
/* Adopts one rank of the job's current attempt; returns 0 when its directory is absent. */
int local_adopt_rank(struct executor *ex, const struct job *j, int rank);

#endif
