/*
 * local_rank: the local executor's rank processes (see local_internal.h). It starts a rank:
 * its directory, its memory cgroup (resources.memory is the limit, when the daemon may make
 * rank cgroups: server/local/cgroup.h), the environment a distributed launcher would give it, and
 * the shim that supervises it in a session of its own. After a daemon restart it adopts the
 * ranks a previous daemon started, checking the pid still belongs to that rank's shim.
 *
 * It does not watch ranks or decide how they ended (local.c). Runs on the controller thread;
 * a rank record added here is owned by struct local until local_remove_rank().
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/pidfd.h>
#include <sys/stat.h>
#include <unistd.h>

#include "server/local/cgroup.h"
#include "core/jsonx.h"
#include "core/parse.h"
#include "core/xalloc.h"
#include "server/local/local_internal.h"

extern char **environ;

char *local_rank_dir(struct local *l, const char *job_id, int attempt, int rank)
{
    return xasprintf("%s/jobs/%s/a%d/r%d", l->data_dir, job_id, attempt, rank);
}

static int mkdirs(const char *path)
{
    char tmp[PATH_MAX];
    snprintf(tmp, sizeof(tmp), "%s", path);
    for (char *p = tmp + 1; *p; p++) {
        if (*p == '/') {
            *p = '\0';
            if (mkdir(tmp, 0755) < 0 && errno != EEXIST)
                return -1;
            *p = '/';
        }
    }
    return mkdir(tmp, 0755) < 0 && errno != EEXIST ? -1 : 0;
}

void local_add_rank(struct local *l, struct lrank *r)
{
    XGROW(l->ranks, l->n, l->cap);
    l->ranks[l->n++] = r;
    atomic_fetch_add(&l->used, 1);
}

void local_remove_rank(struct local *l, size_t i)
{
    struct lrank *r = l->ranks[i];
    if (r->pidfd >= 0)
        close(r->pidfd);
    cgroup_remove(r->cgroup);
    free(r->cgroup);
    free(r->dir);
    free(r);
    l->ranks[i] = l->ranks[--l->n];
    atomic_fetch_sub(&l->used, 1);
}

static void env_add(char ***env, size_t *n, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void env_add(char ***env, size_t *n, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    struct buf b = BUF_INIT;
    buf_vprintf(&b, fmt, ap);
    va_end(ap);
    *env = xrealloc(*env, (*n + 2) * sizeof(char *));
    (*env)[(*n)++] = buf_detach(&b, NULL);
    (*env)[*n] = NULL;
}

/* The daemon's own settings and secrets stay out of the ranks' environment; PATH is set
 * below. */
static bool private_var(const char *kv)
{
    return strncmp(kv, "TRAINYARD_", 10) == 0 || strncmp(kv, "PATH=", 5) == 0;
}

/* PATH with the daemon's own directory first, so that ranks find trainyard-worker. */
static void add_path(struct local *l, char ***env, size_t *n)
{
    const char *path = getenv("PATH");
    char dir[PATH_MAX];
    snprintf(dir, sizeof(dir), "%s", l->exe);
    char *slash = strrchr(dir, '/');
    if (slash)
        *slash = '\0';
    env_add(env, n, "PATH=%s%s%s", dir, path && *path ? ":" : "", path ? path : "");
}

/* What torchrun (and its PET_ twins) would set for this rank on a one-node job. */
static void launcher_env(char ***env, size_t *n, const struct launch *ln, int rank)
{
    const struct spec_view *v = ln->spec;
    int node = rank / v->procs_per_node, local_rank = rank % v->procs_per_node;
    env_add(env, n, "RANK=%d", rank);
    env_add(env, n, "LOCAL_RANK=%d", local_rank);
    env_add(env, n, "WORLD_SIZE=%d", v->nranks);
    env_add(env, n, "LOCAL_WORLD_SIZE=%d", v->procs_per_node);
    env_add(env, n, "NODE_RANK=%d", node);
    env_add(env, n, "GROUP_RANK=%d", node);
    env_add(env, n, "MASTER_ADDR=127.0.0.1");
    env_add(env, n, "MASTER_PORT=%d", ln->master_port);
    env_add(env, n, "PET_NNODES=%d", v->nodes);
    env_add(env, n, "PET_NPROC_PER_NODE=%d", v->procs_per_node);
    env_add(env, n, "PET_NODE_RANK=%d", node);
    env_add(env, n, "PET_MASTER_ADDR=127.0.0.1");
    env_add(env, n, "PET_MASTER_PORT=%d", ln->master_port);
}

/* The spec's env; its value replaces an inherited one of the same name. */
static void spec_env(char ***env, size_t *n, json_t *spec)
{
    const char *k;
    json_t *val;
    json_object_foreach(spec, k, val)
    {
        if (!json_is_string(val))
            continue;
        size_t klen = strlen(k);
        for (size_t i = 0; i < *n; i++) {
            if (strncmp((*env)[i], k, klen) == 0 && (*env)[i][klen] == '=') {
                free((*env)[i]);
                (*env)[i] = (*env)[--*n];
                (*env)[*n] = NULL;
                break;
            }
        }
        env_add(env, n, "%s=%s", k, json_string_value(val));
    }
}

static char **rank_env(struct local *l, const struct launch *ln, int rank)
{
    char **env = NULL;
    size_t n = 0;
    for (char **e = environ; *e; e++)
        if (!private_var(*e))
            env_add(&env, &n, "%s", *e);
    add_path(l, &env, &n);
    launcher_env(&env, &n, ln, rank);
    env_add(&env, &n, "TRAINYARD_JOB_ID=%s", ln->job->id);
    env_add(&env, &n, "TRAINYARD_ATTEMPT=%d", ln->attempt);
    env_add(&env, &n, "TRAINYARD_RESTART_COUNT=%d", ln->attempt);
    if (ln->token)
        env_add(&env, &n, "TRAINYARD_TOKEN=%s", ln->token);
    if (l->url)
        env_add(&env, &n, "TRAINYARD_URL=%s", l->url);
    /* Without a checkpoint path the job gets its own directory, kept across its restarts (they
     * resume) and removed with the job; a new job never resumes another's run. */
    const char *ckpt = jsonx_str(ln->spec->checkpoint, "path");
    if (ckpt)
        env_add(&env, &n, "TRAINYARD_CHECKPOINT_DIR=%s", ckpt);
    else
        env_add(&env, &n, "TRAINYARD_CHECKPOINT_DIR=%s/jobs/%s/checkpoints", l->data_dir,
                ln->job->id);
    spec_env(&env, &n, ln->spec->env);
    return env;
}

static void strv_free(char **v)
{
    for (char **p = v; p && *p; p++)
        free(*p);
    free(v);
}

static char **shim_argv(struct local *l, const char *dir, const char *cgroup,
                        const struct spec_view *v)
{
    size_t nc = json_array_size(v->command), na = json_array_size(v->args);
    char **argv = xcalloc(10 + nc + na, sizeof(char *));
    size_t i = 0;
    argv[i++] = xstrdup(l->exe);
    argv[i++] = xstrdup("shim");
    argv[i++] = xstrdup("--dir");
    argv[i++] = xstrdup(dir);
    argv[i++] = xstrdup("--max-line");
    argv[i++] = xasprintf("%lld", (long long)l->opts.max_line);
    if (cgroup) {
        argv[i++] = xstrdup("--cgroup");
        argv[i++] = xstrdup(cgroup);
    }
    argv[i++] = xstrdup("--");
    for (size_t k = 0; k < nc; k++)
        argv[i++] = xstrdup(json_string_value(json_array_get(v->command, k)));
    for (size_t k = 0; k < na; k++)
        argv[i++] = xstrdup(json_string_value(json_array_get(v->args, k)));
    return argv;
}

static pid_t spawn_shim(struct local *l, char **argv, char **env, const char *dir, struct err *err)
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
    posix_spawn_file_actions_addopen(&fa, 1, errpath, O_WRONLY | O_CREAT | O_APPEND, 0644);
    posix_spawn_file_actions_adddup2(&fa, 1, 2);
    pid_t pid = 0;
    int rc = posix_spawn(&pid, l->exe, &fa, &attr, argv, env);
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

static char *rank_cgroup(struct local *l, const char *job_id, int attempt, int rank, int64_t limit,
                         bool create)
{
    if (!l->cgroot)
        return NULL;
    char name[96];
    snprintf(name, sizeof(name), "trainyard-%s-a%d-r%d", job_id, attempt, rank);
    if (create)
        return cgroup_create(l->cgroot, name, limit);
    char *path = xasprintf("%s/%s", l->cgroot, name);
    struct stat sb;
    if (stat(path, &sb) == 0)
        return path;
    free(path);
    return NULL;
}

static struct lrank *lrank_new(int64_t job_pk, int attempt, int rank, pid_t shim, char *dir)
{
    struct lrank *r = XNEW(struct lrank);
    r->job_pk = job_pk;
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
    if (mkdirs(dir) < 0) {
        err_set(err, ERR_IO, "cannot create %s: %s", dir, strerror(errno));
        free(dir);
        return -1;
    }
    char *cg = rank_cgroup(l, ln->job->id, ln->attempt, rank, memory_limit(ln->spec), true);
    int64_t oom_before = cg ? -1 : cgroup_oom_kills_fallback();
    char **argv = shim_argv(l, dir, cg, ln->spec);
    char **env = rank_env(l, ln, rank);
    pid_t pid = spawn_shim(l, argv, env, dir, err);
    strv_free(argv);
    strv_free(env);
    if (pid < 0) {
        cgroup_remove(cg);
        free(cg);
        free(dir);
        return -1;
    }
    struct lrank *r = lrank_new(ln->job->pk, ln->attempt, rank, pid, dir);
    r->our_child = true;
    r->cgroup = cg;
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
    json_decref(info);
    bool alive = shim > 0 && is_our_shim(shim, dir);
    struct lrank *r = lrank_new(j->pk, j->attempt, rank, shim > 0 ? shim : 0, dir);
    r->cgroup = rank_cgroup(l, j->id, j->attempt, rank, 0, false);
    r->oom_before = -1;
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
