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
#include <pthread.h>
#include <stdatomic.h>
#include <sys/types.h>

#include "server/local/cgroup.h"
#include "server/local/gpus.h"
#include "server/local/local.h"

struct lrank {
    int64_t job_pk;
    char job_id[32];
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
    struct cgroup_rank cg; /* the rank's cgroups (parts may be NULL) */
    unsigned uid;          /* the identity the rank runs as */
    int gpu[GPUS_MAX];     /* its GPUs (indices into struct local's gpus) */
    int ngpu;
    int64_t oom_before; /* the fallback OOM counter when the rank started, -1: unknown */
};

struct local {
    struct local_options opts;
    char *data_dir;
    char *url;
    char exe[PATH_MAX];
    struct lrank **ranks;
    size_t n, cap;
    struct cgroup_roots cgroots; /* where rank cgroups are made */
    bool sandbox;                /* ranks run sandboxed */
    char why[512];               /* why not, when they do not */
    char cwd[PATH_MAX];          /* the daemon's directory: the ranks' too */
    atomic_int used;
    atomic_ullong spawned;
    struct gpus gpus; /* the machine's, as found at start (read-only) */
    /* Who uses each GPU, and the rank list: written on the controller thread under gpu_lock,
     * read under it by GET /v1/nodes. */
    pthread_mutex_t gpu_lock;
    int64_t gpu_job[GPUS_MAX]; /* the job's pk, 0: free */
    char gpu_job_id[GPUS_MAX][32];
    int gpu_rank[GPUS_MAX];
};

#define LOCAL(ex) ((struct local *)(ex)->impl)

/* One attempt being started: what every rank's environment is made from (all borrowed). */
struct launch {
    const struct job *job;
    const struct spec_view *spec;
    int attempt;
    int master_port;
    const char *token;
    unsigned uid;     /* the job's identity (gid the same) */
    const char *ckpt; /* the checkpoint directory */
    const char *home; /* the job's home directory */
    const char *shm;  /* the directory the ranks share as /dev/shm */
    const int *gpus;  /* rank r's GPUs: gpus[r * gpus_per_rank ...], indices into l->gpus */
    int gpus_per_rank;
};

/* local.c */
/* DIR/NAME parsed, NULL when absent or not JSON (new reference). */
json_t *local_read_json(const char *dir, const char *name);
/* Reports RANK_RUNNING once the shim wrote rank.json (and learns the rank's pid). */
void local_check_started(struct executor *ex, struct lrank *r);
/* Reports how r ended from its status.json (or as lost when the shim left none). */
void local_report_end(struct executor *ex, struct lrank *r);

/* launch.c */
/* Makes the attempt's directories (checkpoints, home, shared memory) and gives them to its
 * identity; fills ln->ckpt, home and shm (freed with local_release_dirs). */
int local_prepare_dirs(struct local *l, struct launch *ln, struct err *err);
void local_release_dirs(struct launch *ln);
/* Removes the job's shared-memory directory (no rank of it runs any more). */
void local_remove_shm(const char *job_id);
/* Removes a directory tree (files first). */
void local_remove_tree(const char *dir);
/* Makes path and its missing parents: the last with mode, the others with parents. */
int local_mkdirs(const char *path, mode_t mode, mode_t parents);
/* The rank's environment (caller frees with launch_strv_free). */
char **launch_env(struct local *l, const struct launch *ln, int rank);
/* Writes env to DIR/env (0600) for the shim, which gives it to the rank. */
int launch_write_env(const char *dir, char **env, struct err *err);
/* The shim's command line for one rank with cgroups cg (caller frees with launch_strv_free). */
char **launch_shim_argv(struct local *l, const struct launch *ln, const char *dir,
                        const struct cgroup_rank *cg);
void launch_strv_free(char **v);

/* local_gpus.c: handing GPUs to ranks */
/* GPUs per rank the spec asks for (resources.gpus). */
int local_gpus_per_rank(const struct spec_view *v);
/* Free GPUs now. */
int local_gpus_free(struct local *l);
/* Picks n free GPUs into out (indices), lowest first; -1 when fewer are free. */
int local_gpus_pick(struct local *l, int n, int *out);
/* Marks r's GPUs as its (after start or adoption) / free again (its end). */
void local_gpus_claim(struct local *l, const struct lrank *r);
void local_gpus_release(struct local *l, const struct lrank *r);
/* The GPUs named by UUID in the rank's CUDA_VISIBLE_DEVICES (read from DIR/env), into r (not
 * yet claimed: local_add_rank does). */
void local_gpus_adopt(struct local *l, struct lrank *r);
/* The machine as GET /v1/nodes shows it (new reference). */
json_t *local_gpus_node(struct local *l);

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
