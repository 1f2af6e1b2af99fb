/*
 * local: the local executor (see local.h). The controller thread calls every function here;
 * only metrics() may come from another thread, so the counters it reads are atomic.
 *
 * A rank is watched through a pidfd of its shim: readable once the shim exits, whether the
 * shim is our child or was adopted after a daemon restart. How the rank ended is read from the
 * shim's status.json, never from waitpid(), because an adopted shim is not our child.
 *
 * Each rank runs in a memory cgroup of its own when the daemon may make one (server/cgroup.h):
 * resources.memory is its limit, and an OOM kill the kernel counted there (or, without rank
 * cgroups, a SIGKILL trainyard did not send while an OOM counter rose) is reported as
 * "OOMKilled".
 */
#include "server/local.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdatomic.h>
#include <sys/pidfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "server/cgroup.h"
#include "server/core/clock.h"
#include "server/core/jsonx.h"
#include "server/core/log.h"
#include "server/core/parse.h"
#include "server/core/xalloc.h"

extern char **environ;

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

char *local_job_dir(const char *data_dir, const char *job_id)
{
    return xasprintf("%s/jobs/%s", data_dir, job_id);
}

static char *rank_dir(struct local *l, const char *job_id, int attempt, int rank)
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

static json_t *read_json(const char *dir, const char *name)
{
    char path[PATH_MAX];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    return json_load_file(path, 0, NULL);
}

/* A free TCP port on loopback for MASTER_PORT. */
static int free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    socklen_t len = sizeof(a);
    int port = 29500;
    if (fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0 &&
        getsockname(fd, (struct sockaddr *)&a, &len) == 0)
        port = ntohs(a.sin_port);
    if (fd >= 0)
        close(fd);
    return port;
}

static void add_rank(struct local *l, struct lrank *r)
{
    if (l->n == l->cap) {
        l->cap = l->cap ? l->cap * 2 : 16;
        l->ranks = xrealloc(l->ranks, l->cap * sizeof(*l->ranks));
    }
    l->ranks[l->n++] = r;
    atomic_fetch_add(&l->used, 1);
}

static void remove_rank(struct local *l, size_t i)
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

struct launch {
    const struct job *job;
    const struct spec_view *spec;
    int attempt;
    int master_port;
    const char *token;
};

static char **rank_env(struct local *l, const struct launch *ln, int rank)
{
    char **env = NULL;
    size_t n = 0;
    for (char **e = environ; *e; e++)
        if (!private_var(*e))
            env_add(&env, &n, "%s", *e);
    add_path(l, &env, &n);
    const struct spec_view *v = ln->spec;
    int node = rank / v->procs_per_node, local_rank = rank % v->procs_per_node;
    env_add(&env, &n, "RANK=%d", rank);
    env_add(&env, &n, "LOCAL_RANK=%d", local_rank);
    env_add(&env, &n, "WORLD_SIZE=%d", v->nranks);
    env_add(&env, &n, "LOCAL_WORLD_SIZE=%d", v->procs_per_node);
    env_add(&env, &n, "NODE_RANK=%d", node);
    env_add(&env, &n, "GROUP_RANK=%d", node);
    env_add(&env, &n, "MASTER_ADDR=127.0.0.1");
    env_add(&env, &n, "MASTER_PORT=%d", ln->master_port);
    env_add(&env, &n, "PET_NNODES=%d", v->nodes);
    env_add(&env, &n, "PET_NPROC_PER_NODE=%d", v->procs_per_node);
    env_add(&env, &n, "PET_NODE_RANK=%d", node);
    env_add(&env, &n, "PET_MASTER_ADDR=127.0.0.1");
    env_add(&env, &n, "PET_MASTER_PORT=%d", ln->master_port);
    env_add(&env, &n, "TRAINYARD_JOB_ID=%s", ln->job->id);
    env_add(&env, &n, "TRAINYARD_ATTEMPT=%d", ln->attempt);
    env_add(&env, &n, "TRAINYARD_RESTART_COUNT=%d", ln->attempt);
    if (ln->token)
        env_add(&env, &n, "TRAINYARD_TOKEN=%s", ln->token);
    if (l->url)
        env_add(&env, &n, "TRAINYARD_URL=%s", l->url);
    const char *ckpt = jsonx_str(v->checkpoint, "path");
    if (ckpt)
        env_add(&env, &n, "TRAINYARD_CHECKPOINT_DIR=%s", ckpt);
    const char *k;
    json_t *val;
    json_object_foreach(v->env, k, val)
    {
        if (!json_is_string(val))
            continue;
        size_t klen = strlen(k);
        for (size_t i = 0; i < n; i++) { /* the spec's value replaces an inherited one */
            if (strncmp(env[i], k, klen) == 0 && env[i][klen] == '=') {
                free(env[i]);
                env[i] = env[--n];
                env[n] = NULL;
                break;
            }
        }
        env_add(&env, &n, "%s=%s", k, json_string_value(val));
    }
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

static void follow_log(struct local *l, struct lrank *r)
{
    if (!l->opts.logs.add_file)
        return;
    char *path = xasprintf("%s/log", r->dir);
    struct log_origin o = { .rank = r->rank, .attempt = r->attempt, .pid = r->pid };
    l->opts.logs.add_file(l->opts.logs.ctx, r->job_pk, r->key, path, &o);
    free(path);
}

static int spawn_rank(struct executor *ex, const struct launch *ln, int rank, struct err *err)
{
    struct local *l = LOCAL(ex);
    char *dir = rank_dir(l, ln->job->id, ln->attempt, rank);
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
    add_rank(l, r);
    atomic_fetch_add(&l->spawned, 1);
    follow_log(l, r);
    return 0;
}

static void report_start_failure(struct executor *ex, const struct job *j, int attempt, int from,
                                 int to, const char *why)
{
    for (int r = from; r < to; r++) {
        struct rank_report rep = { .job_pk = j->pk,
                                   .attempt = attempt,
                                   .rank = r,
                                   .state = RANK_FAILED,
                                   .exit_code = -1,
                                   .reason = "StartFailed",
                                   .message = why };
        executor_report_rank(ex, &rep);
    }
}

static int local_start(struct executor *ex, const struct job *j, const struct spec_view *v,
                       int attempt, const char *token, struct err *err)
{
    struct launch ln = { j, v, attempt, free_port(), token };
    for (int r = 0; r < v->nranks; r++) {
        if (spawn_rank(ex, &ln, r, err) < 0) {
            report_start_failure(ex, j, attempt, r, v->nranks, err->msg);
            return -1;
        }
    }
    return 0;
}

static int local_fits(struct executor *ex, const struct job *j, const struct spec_view *v)
{
    (void)j;
    struct local *l = LOCAL(ex);
    return atomic_load(&l->used) + v->nranks <= l->opts.slots;
}

static void signal_rank(struct lrank *r, int sig)
{
    if (r->pid > 0)
        kill(-r->pid, sig);
    else
        kill(r->shim, sig); /* the shim forwards it to the rank's group */
}

static int local_stop(struct executor *ex, const struct job *j, int64_t grace_ns, struct err *err)
{
    (void)err;
    struct local *l = LOCAL(ex);
    int64_t now = clock_mono_ns();
    for (size_t i = 0; i < l->n; i++) {
        struct lrank *r = l->ranks[i];
        if (r->job_pk != j->pk || r->stopped)
            continue;
        r->stopped = true;
        signal_rank(r, SIGTERM);
        r->kill_at = now + grace_ns;
    }
    return 0;
}

static const char *end_reason(int code, int sig, bool stopped)
{
    if (stopped)
        return "Stopped";
    if (sig == SIGKILL)
        return "Killed";
    if (sig == SIGSEGV)
        return "SegmentationFault";
    if (sig)
        return "Signal";
    if (code == 0)
        return "Completed";
    if (code == 127)
        return "CommandNotFound";
    if (code == 126)
        return "CommandNotExecutable";
    return "Error";
}

/* True when the rank was killed by the kernel's OOM killer, as far as can be told. */
static bool oom_killed(const struct lrank *r, int sig)
{
    if (r->cgroup)
        return cgroup_oom_kills(r->cgroup) > 0;
    if (sig != SIGKILL || r->stopped || r->oom_before < 0)
        return false;
    return cgroup_oom_kills_fallback() > r->oom_before;
}

/* Reports how r ended from its status.json (or as lost when the shim left none). */
static void report_end(struct executor *ex, struct lrank *r)
{
    json_t *st = read_json(r->dir, "status.json");
    struct rank_report rep = { .job_pk = r->job_pk,
                               .attempt = r->attempt,
                               .rank = r->rank,
                               .pid = r->pid,
                               .exit_code = -1,
                               .node = "localhost" };
    char msg[160] = "";
    if (st) {
        rep.exit_code = (int)jsonx_int(st, "exit_code", -1);
        rep.signal = (int)jsonx_int(st, "signal", 0);
        rep.time = jsonx_int(st, "finished_at", 0);
        rep.state = rep.exit_code == 0 ? RANK_SUCCEEDED : RANK_FAILED;
        rep.reason = end_reason(rep.exit_code, rep.signal, r->stopped);
        if (oom_killed(r, rep.signal)) {
            rep.reason = "OOMKilled";
            snprintf(msg, sizeof(msg), "%s",
                     r->cgroup ? "OOM kill counted in the rank's memory cgroup"
                               : "SIGKILL while the kernel counted an OOM kill");
        } else if (rep.signal == SIGKILL && !r->stopped) {
            snprintf(msg, sizeof(msg), "SIGKILL not sent by trainyard (out of memory?)");
        }
    } else {
        rep.state = RANK_LOST;
        rep.reason = "Lost";
        snprintf(msg, sizeof(msg), "the rank's supervisor ended without recording an exit");
    }
    rep.message = msg;
    executor_report_rank(ex, &rep);
    json_decref(st);
    struct local *l = LOCAL(ex);
    if (l->opts.logs.file_done)
        l->opts.logs.file_done(l->opts.logs.ctx, r->job_pk, r->key);
}

static void check_started(struct executor *ex, struct lrank *r)
{
    json_t *info = read_json(r->dir, "rank.json");
    if (!info)
        return;
    r->pid = (pid_t)jsonx_int(info, "pid", 0);
    r->running_reported = true;
    struct rank_report rep = { .job_pk = r->job_pk,
                               .attempt = r->attempt,
                               .rank = r->rank,
                               .state = RANK_RUNNING,
                               .pid = r->pid,
                               .node = "localhost",
                               .exit_code = -1,
                               .time = jsonx_int(info, "started_at", 0) };
    json_decref(info);
    executor_report_rank(ex, &rep);
    follow_log(LOCAL(ex), r);
    if (r->stopped)
        signal_rank(r, SIGTERM); /* asked to stop before its pid was known */
}

static bool shim_exited(struct lrank *r)
{
    if (r->pidfd < 0 && r->our_child) {
        /* No pidfd (Linux before 5.3, valgrind): our child stays a zombie until reaped. */
        pid_t w = waitpid(r->shim, NULL, WNOHANG);
        return w == r->shim || (w < 0 && errno == ECHILD);
    }
    if (r->pidfd < 0)
        return kill(r->shim, 0) < 0 && errno == ESRCH;
    struct pollfd p = { .fd = r->pidfd, .events = POLLIN };
    return poll(&p, 1, 0) > 0;
}

static void local_poll(struct executor *ex)
{
    struct local *l = LOCAL(ex);
    int64_t now = clock_mono_ns();
    for (size_t i = 0; i < l->n;) {
        struct lrank *r = l->ranks[i];
        if (!r->running_reported)
            check_started(ex, r);
        if (r->kill_at && now >= r->kill_at) {
            signal_rank(r, SIGKILL);
            r->kill_at = 0;
        }
        if (!shim_exited(r)) {
            i++;
            continue;
        }
        if (r->our_child)
            waitpid(r->shim, NULL, WNOHANG);
        if (!r->running_reported)
            check_started(ex, r);
        report_end(ex, r);
        remove_rank(l, i);
    }
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

/* Adopts one rank of the job's current attempt; returns 0 when its directory is absent. */
static int adopt_rank(struct executor *ex, const struct job *j, int rank)
{
    struct local *l = LOCAL(ex);
    char *dir = rank_dir(l, j->id, j->attempt, rank);
    struct stat sb;
    if (stat(dir, &sb) < 0) {
        free(dir);
        return 0;
    }
    json_t *info = read_json(dir, "rank.json");
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
    add_rank(l, r);
    check_started(ex, r);
    follow_log(l, r);
    if (!alive) {
        report_end(ex, r);
        remove_rank(l, l->n - 1);
    }
    return 1;
}

static int local_adopt(struct executor *ex, const struct job *j, const struct spec_view *v,
                       struct err *err)
{
    int found = 0;
    for (int r = 0; r < v->nranks; r++)
        found += adopt_rank(ex, j, r);
    if (found == 0)
        return 1; /* nothing of this attempt exists yet: the controller starts it */
    for (int r = 0; r < v->nranks && found < v->nranks; r++) {
        char *dir = rank_dir(LOCAL(ex), j->id, j->attempt, r);
        struct stat sb;
        if (stat(dir, &sb) < 0)
            report_start_failure(ex, j, j->attempt, r, r + 1,
                                 "the daemon stopped before this rank was started");
        free(dir);
    }
    (void)err;
    return 0;
}

static int remove_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb;
    (void)flag;
    (void)ftw;
    return remove(path);
}

static void local_forget(struct executor *ex, const char *job_id)
{
    char *dir = local_job_dir(LOCAL(ex)->data_dir, job_id);
    nftw(dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
    free(dir);
}

static json_t *local_render(struct executor *ex, const json_t *spec, const char *job_id,
                            struct err *err)
{
    (void)err;
    struct local *l = LOCAL(ex);
    struct spec_view v;
    spec_view(spec, &v);
    json_t *ranks = json_array();
    for (int r = 0; r < v.nranks; r++) {
        char *dir = rank_dir(l, job_id, 0, r);
        json_array_append_new(ranks, json_pack("{s:i,s:i,s:i,s:s}", "rank", r, "node_rank",
                                               r / v.procs_per_node, "local_rank",
                                               r % v.procs_per_node, "dir", dir));
        free(dir);
    }
    return json_pack("{s:s,s:i,s:i,s:o}", "executor", "local", "slots_needed", v.nranks,
                     "slots_total", l->opts.slots, "ranks", ranks);
}

static void local_metrics(struct executor *ex, struct buf *out)
{
    struct local *l = LOCAL(ex);
    buf_printf(out,
               "# HELP trainyard_local_slots Rank slots of the local executor.\n"
               "# TYPE trainyard_local_slots gauge\ntrainyard_local_slots %d\n"
               "# HELP trainyard_local_slots_used Rank slots in use.\n"
               "# TYPE trainyard_local_slots_used gauge\ntrainyard_local_slots_used %d\n"
               "# HELP trainyard_local_ranks_started_total Rank processes started.\n"
               "# TYPE trainyard_local_ranks_started_total counter\n"
               "trainyard_local_ranks_started_total %llu\n",
               l->opts.slots, atomic_load(&l->used), (unsigned long long)atomic_load(&l->spawned));
}

static void local_free(struct executor *ex)
{
    if (!ex)
        return;
    struct local *l = LOCAL(ex);
    while (l->n)
        remove_rank(l, l->n - 1);
    free(l->ranks);
    free(l->data_dir);
    free(l->url);
    free(l->cgroot);
    free(l);
    free(ex);
}

void local_set_url(struct executor *ex, const char *url)
{
    struct local *l = LOCAL(ex);
    free(l->url);
    l->url = url ? xstrdup(url) : NULL;
}

struct executor *local_new(const struct local_options *opts, struct err *err)
{
    struct local *l = XNEW(struct local);
    l->opts = *opts;
    l->data_dir = xstrdup(opts->data_dir);
    l->url = opts->daemon_url ? xstrdup(opts->daemon_url) : NULL;
    ssize_t n = readlink("/proc/self/exe", l->exe, sizeof(l->exe) - 1);
    if (n <= 0) {
        free(l->data_dir);
        free(l->url);
        free(l);
        err_set(err, ERR_INTERNAL, "cannot find this program's path: %s", strerror(errno));
        return NULL;
    }
    l->exe[n] = '\0';
    l->cgroot = cgroup_memory_root();
    struct executor *ex = XNEW(struct executor);
    *ex = (struct executor){ .name = "local",
                             .fits = local_fits,
                             .start = local_start,
                             .stop = local_stop,
                             .adopt = local_adopt,
                             .poll = local_poll,
                             .forget = local_forget,
                             .render = local_render,
                             .metrics = local_metrics,
                             .free = local_free,
                             .impl = l };
    return ex;
}
