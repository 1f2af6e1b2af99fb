/*
 * local_rank: the local executor's rank processes (see local_internal.h). It starts a rank:
 * its directory, its cgroups (resources.memory and --local-pids-max are the limits:
 * server/local/cgroup.h), the environment a distributed launcher would give it (and nothing of
 * the daemon's), its sandbox (server/local/sandbox.h), and the shim that supervises it in a
 * session of its own. After a daemon restart it adopts the ranks a previous daemon started,
 * checking the pid still belongs to that rank's shim.
 *
 * It does not watch ranks or decide how they ended (local.c). Runs on the controller thread;
 * a rank record added here is owned by struct local until local_remove_rank().
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/pidfd.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "server/local/cgroup.h"
#include "core/jsonx.h"
#include "core/parse.h"
#include "core/xalloc.h"
#include "server/local/local_internal.h"

char *local_rank_dir(struct local *l, const char *job_id, int attempt, int rank)
{
    return xasprintf("%s/jobs/%s/a%d/r%d", l->data_dir, job_id, attempt, rank);
}

void local_add_rank(struct local *l, struct lrank *r)
{
    pthread_mutex_lock(&l->gpu_lock);
    XGROW(l->ranks, l->n, l->cap);
    l->ranks[l->n++] = r;
    pthread_mutex_unlock(&l->gpu_lock);
    local_gpus_claim(l, r);
    atomic_fetch_add(&l->used, 1);
}

void local_remove_rank(struct local *l, size_t i)
{
    struct lrank *r = l->ranks[i];
    local_gpus_release(l, r);
    pthread_mutex_lock(&l->gpu_lock);
    l->ranks[i] = l->ranks[--l->n];
    pthread_mutex_unlock(&l->gpu_lock);
    if (r->pidfd >= 0)
        close(r->pidfd);
    cgroup_rank_release(&r->cg);
    free(r->dir);
    free(r);
    atomic_fetch_sub(&l->used, 1);
}

/* The shim's own environment: it runs as root, so the job's env (LD_PRELOAD, say) must not
 * reach it (the rank's is in DIR/env); the sanitizers' settings in test builds pass. */
static char **shim_env(void)
{
    static const char *keep[] = { "ASAN_OPTIONS", "UBSAN_OPTIONS", "LSAN_OPTIONS" };
    char **env = xcalloc(2 + sizeof(keep) / sizeof(keep[0]), sizeof(char *));
    size_t n = 0;
    env[n++] = xstrdup("PATH=/usr/sbin:/usr/bin:/sbin:/bin");
    for (size_t i = 0; i < sizeof(keep) / sizeof(keep[0]); i++)
        if (getenv(keep[i]))
            env[n++] = xasprintf("%s=%s", keep[i], getenv(keep[i]));
    return env;
}

static pid_t spawn_shim(struct local *l, char **argv, const char *dir, struct err *err)
{
    posix_spawnattr_t attr;
    posix_spawn_file_actions_t fa;
    posix_spawnattr_init(&attr);
    posix_spawn_file_actions_init(&fa);
    sigset_t none, defaults;
    sigemptyset(&none);
    sigemptyset(&defaults);
    int sigs[] = { SIGPIPE, SIGTERM, SIGINT, SIGHUP, SIGCHLD };
    for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
        sigaddset(&defaults, sigs[i]);
    posix_spawnattr_setsigmask(&attr, &none);
    posix_spawnattr_setsigdefault(&attr, &defaults);
    /* A session of its own: a Ctrl-C at the daemon's terminal does not reach the ranks. */
    posix_spawnattr_setflags(&attr,
                             POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSID);
    char *errpath = xasprintf("%s/shim.err", dir);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 1, errpath, O_WRONLY | O_CREAT | O_APPEND, 0600);
    posix_spawn_file_actions_adddup2(&fa, 1, 2);
    pid_t pid = 0;
    char **env = shim_env();
    int rc = posix_spawn(&pid, l->exe, &fa, &attr, argv, env);
    launch_strv_free(env);
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&attr);
    free(errpath);
    if (rc != 0) {
        err_set(err, ERR_INTERNAL, "cannot start the rank supervisor: %s", strerror(rc));
        return -1;
    }
    return pid;
}

/* resources.memory in bytes, 0 when not given. */
static int64_t memory_limit(const struct spec_view *v)
{
    const char *q = jsonx_str(v->resources, "memory");
    int64_t milli;
    return q && parse_quantity(q, &milli) == 0 ? milli / 1000 : 0;
}

static void cgroup_name(char *out, size_t len, const char *job_id, int attempt, int rank)
{
    snprintf(out, len, "trainyard-%s-a%d-r%d", job_id, attempt, rank);
}

static struct lrank *lrank_new(const struct job *j, int attempt, int rank, pid_t shim, char *dir)
{
    struct lrank *r = XNEW(struct lrank);
    r->job_pk = j->pk;
    snprintf(r->job_id, sizeof(r->job_id), "%s", j->id);
    r->attempt = attempt;
    r->rank = rank;
    r->shim = shim;
    r->pidfd = pidfd_open(shim, 0);
    r->dir = dir;
    snprintf(r->key, sizeof(r->key), "a%d/r%d", attempt, rank);
    return r;
}

void local_follow_log(struct local *l, struct lrank *r)
{
    if (!l->opts.logs.add_file)
        return;
    char *path = xasprintf("%s/log", r->dir);
    struct log_origin o = { .rank = r->rank, .attempt = r->attempt, .pid = r->pid };
    l->opts.logs.add_file(l->opts.logs.ctx, r->job_pk, r->key, path, &o);
    free(path);
}

int local_spawn_rank(struct executor *ex, const struct launch *ln, int rank, struct err *err)
{
    struct local *l = LOCAL(ex);
    char *dir = local_rank_dir(l, ln->job->id, ln->attempt, rank);
    if (local_mkdirs(dir, 0700, 0700) < 0) {
        err_set(err, ERR_IO, "cannot create %s: %s", dir, strerror(errno));
        free(dir);
        return -1;
    }
    char name[96];
    cgroup_name(name, sizeof(name), ln->job->id, ln->attempt, rank);
    struct cgroup_rank cg;
    cgroup_rank_create(&l->cgroots, name, memory_limit(ln->spec), l->opts.pids_max, &cg);
    int64_t oom_before = cg.memory ? -1 : cgroup_oom_kills_fallback();
    char **env = launch_env(l, ln, rank);
    int rc = launch_write_env(dir, env, err);
    launch_strv_free(env);
    char **argv = launch_shim_argv(l, ln, dir, &cg);
    pid_t pid = rc < 0 ? -1 : spawn_shim(l, argv, dir, err);
    launch_strv_free(argv);
    if (pid < 0) {
        cgroup_rank_release(&cg);
        free(dir);
        return -1;
    }
    struct lrank *r = lrank_new(ln->job, ln->attempt, rank, pid, dir);
    r->our_child = true;
    r->cg = cg;
    r->uid = ln->uid;
    for (int k = 0; k < ln->gpus_per_rank; k++)
        r->gpu[r->ngpu++] = ln->gpus[rank * ln->gpus_per_rank + k];
    r->oom_before = oom_before;
    local_add_rank(l, r);
    atomic_fetch_add(&l->spawned, 1);
    local_follow_log(l, r);
    return 0;
}

/* True when pid is a live shim supervising dir (guards against a reused pid). */
static bool is_our_shim(pid_t pid, const char *dir)
{
    char path[64], cmd[8192];
    snprintf(path, sizeof(path), "/proc/%d/cmdline", (int)pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return false;
    ssize_t n = read(fd, cmd, sizeof(cmd) - 1);
    close(fd);
    if (n <= 0)
        return false;
    for (ssize_t i = 0; i < n; i++)
        if (cmd[i] == '\0')
            cmd[i] = ' ';
    cmd[n] = '\0';
    return strstr(cmd, " shim ") && strstr(cmd, dir);
}

int local_adopt_rank(struct executor *ex, const struct job *j, int rank)
{
    struct local *l = LOCAL(ex);
    char *dir = local_rank_dir(l, j->id, j->attempt, rank);
    struct stat sb;
    if (stat(dir, &sb) < 0) {
        free(dir);
        return 0;
    }
    json_t *info = local_read_json(dir, "rank.json");
    pid_t shim = (pid_t)jsonx_int(info, "shim_pid", 0);
    unsigned uid = (unsigned)jsonx_int(info, "uid", 0);
    json_decref(info);
    bool alive = shim > 0 && is_our_shim(shim, dir);
    struct lrank *r = lrank_new(j, j->attempt, rank, shim > 0 ? shim : 0, dir);
    char name[96];
    cgroup_name(name, sizeof(name), j->id, j->attempt, rank);
    cgroup_rank_find(&l->cgroots, name, &r->cg);
    r->uid = uid;
    r->oom_before = -1;
    local_gpus_adopt(l, r); /* before it is added: add claims them */
    if (!alive && r->pidfd >= 0) {
        close(r->pidfd);
        r->pidfd = -1;
    }
    local_add_rank(l, r);
    local_check_started(ex, r);
    local_follow_log(l, r);
    if (!alive) {
        local_report_end(ex, r);
        local_remove_rank(l, l->n - 1);
    }
    return 1;
}
