/*
 * launch: what a local rank is started with: its environment (the launcher's variables,
 * trainyard's, the spec's env; nothing of the daemon's), the attempt's directories given to the
 * job's identity, and the shim's command line, which carries the rank's cgroups and sandbox.
 * Runs on the controller thread; pure apart from the directories it makes.
 */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdarg.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/jsonx.h"
#include "core/xalloc.h"
#include "server/local/local_internal.h"

/* Makes a directory with exactly mode (whatever the umask), unless it exists. */
static int make_dir(const char *path, mode_t mode)
{
    if (mkdir(path, mode) < 0)
        return errno == EEXIST ? 0 : -1;
    return chmod(path, mode);
}

int local_mkdirs(const char *path, mode_t mode, mode_t parents)
{
    char tmp[PATH_MAX];
    snprintf(tmp, sizeof(tmp), "%s", path);
    for (char *p = tmp + 1; *p; p++) {
        if (*p == '/') {
            *p = '\0';
            if (make_dir(tmp, parents) < 0)
                return -1;
            *p = '/';
        }
    }
    return make_dir(tmp, mode);
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

/* PATH with the daemon's own directory first, so that ranks find trainyard-worker; the rest
 * is the usual one, not the daemon's (a job that wants its own sets PATH in its env). */
static void add_path(struct local *l, char ***env, size_t *n)
{
    char dir[PATH_MAX];
    snprintf(dir, sizeof(dir), "%s", l->exe);
    char *slash = strrchr(dir, '/');
    if (slash)
        *slash = '\0';
    env_add(env, n, "PATH=%s:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", dir);
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

/* Removes NAME=... from env (its first occurrence). */
static void unset_env(char **env, size_t *n, const char *name)
{
    size_t klen = strlen(name);
    for (size_t i = 0; i < *n; i++) {
        if (strncmp(env[i], name, klen) == 0 && env[i][klen] == '=') {
            free(env[i]);
            env[i] = env[--*n];
            env[*n] = NULL;
            return;
        }
    }
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
        unset_env(*env, n, k);
        env_add(env, n, "%s=%s", k, json_string_value(val));
    }
}

/* The rank's GPUs, by UUID, after the spec's env so that a job cannot name others': on a
 * machine with GPUs a rank that asked for none sees none (CUDA_VISIBLE_DEVICES empty). */
static void gpu_env(struct local *l, char ***env, size_t *n, const struct launch *ln, int rank)
{
    if (l->gpus.n == 0)
        return;
    struct buf list = BUF_INIT;
    for (int k = 0; k < ln->gpus_per_rank; k++) {
        if (k)
            buf_putc(&list, ',');
        buf_puts(&list, l->gpus.gpu[ln->gpus[rank * ln->gpus_per_rank + k]].uuid);
    }
    const char *vars[] = { "CUDA_VISIBLE_DEVICES", "NVIDIA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER" };
    for (size_t v = 0; v < 3; v++)
        unset_env(*env, n, vars[v]);
    env_add(env, n, "CUDA_VISIBLE_DEVICES=%s", buf_cstr(&list));
    env_add(env, n, "NVIDIA_VISIBLE_DEVICES=%s", list.len ? buf_cstr(&list) : "void");
    env_add(env, n, "CUDA_DEVICE_ORDER=PCI_BUS_ID");
    buf_release(&list);
}

/* What a rank's environment is made of: the launcher's variables, trainyard's, then the spec's
 * env; nothing of the daemon's (its token, its cloud credentials). */
char **launch_env(struct local *l, const struct launch *ln, int rank)
{
    char **env = NULL;
    size_t n = 0;
    add_path(l, &env, &n);
    env_add(&env, &n, "HOME=%s", ln->home);
    env_add(&env, &n, "USER=trainyard");
    env_add(&env, &n, "LOGNAME=trainyard");
    env_add(&env, &n, "LANG=C.UTF-8");
    launcher_env(&env, &n, ln, rank);
    env_add(&env, &n, "TRAINYARD_JOB_ID=%s", ln->job->id);
    env_add(&env, &n, "TRAINYARD_ATTEMPT=%d", ln->attempt);
    env_add(&env, &n, "TRAINYARD_RESTART_COUNT=%d", ln->attempt);
    if (ln->token)
        env_add(&env, &n, "TRAINYARD_TOKEN=%s", ln->token);
    if (l->url)
        env_add(&env, &n, "TRAINYARD_URL=%s", l->url);
    env_add(&env, &n, "TRAINYARD_CHECKPOINT_DIR=%s", ln->ckpt);
    spec_env(&env, &n, ln->spec->env);
    gpu_env(l, &env, &n, ln, rank);
    return env;
}

void launch_strv_free(char **v)
{
    for (char **p = v; p && *p; p++)
        free(*p);
    free(v);
}

int launch_write_env(const char *dir, char **env, struct err *err)
{
    struct buf b = BUF_INIT;
    for (char **e = env; *e; e++)
        buf_append(&b, *e, strlen(*e) + 1);
    char path[PATH_MAX];
    snprintf(path, sizeof(path), "%s/env", dir);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    ssize_t n = fd >= 0 ? write(fd, b.data, b.len) : -1;
    int saved = errno;
    if (fd >= 0)
        close(fd);
    int rc = 0;
    if (n != (ssize_t)b.len)
        rc = err_set(err, ERR_IO, "cannot write %s: %s", path,
                     n >= 0 ? "short write" : strerror(saved));
    buf_release(&b);
    return rc;
}

static void arg(char ***argv, size_t *n, const char *name, const char *value)
{
    *argv = xrealloc(*argv, (*n + 3) * sizeof(char *));
    (*argv)[(*n)++] = xstrdup(name);
    if (value)
        (*argv)[(*n)++] = xstrdup(value);
    (*argv)[*n] = NULL;
}

static void id_arg(char ***argv, size_t *n, const char *name, unsigned id)
{
    char text[16];
    snprintf(text, sizeof(text), "%u", id);
    arg(argv, n, name, text);
}

/* The sandbox's part of the shim's options: identity, hidden paths, the job's directories. */
static void sandbox_args(struct local *l, const struct launch *ln, char ***argv, size_t *n)
{
    id_arg(argv, n, "--uid", ln->uid);
    id_arg(argv, n, "--gid", ln->uid);
    arg(argv, n, "--hide", l->data_dir);
    for (const char *const *h = l->opts.hide; h && *h; h++)
        if (**h)
            arg(argv, n, "--hide", *h);
    arg(argv, n, "--bind", ln->ckpt);
    arg(argv, n, "--bind", ln->home);
    arg(argv, n, "--shm", ln->shm);
    arg(argv, n, "--cwd", l->cwd);
}

#define RAW_LOG_MIN (8ll << 20) /* two of the collector's reads of a file (READ_CHUNK) */

char **launch_shim_argv(struct local *l, const struct launch *ln, const char *dir,
                        const struct cgroup_rank *cg)
{
    const struct spec_view *v = ln->spec;
    char **argv = NULL;
    size_t n = 0;
    char max_line[32], max_bytes[32];
    snprintf(max_line, sizeof(max_line), "%lld", (long long)l->opts.max_line);
    /* The ranks' raw log files share the job's --log-max-bytes, but each may hold at least
     * RAW_LOG_MIN: a file is the way to the store, not the store, and a budget smaller than what
     * the collector takes in a round or two drops the newest lines of a burst that retention
     * would keep (the store drops the oldest). */
    int64_t share = l->opts.max_log_bytes / (v->nranks > 0 ? v->nranks : 1);
    if (share < RAW_LOG_MIN)
        share = RAW_LOG_MIN;
    snprintf(max_bytes, sizeof(max_bytes), "%lld", (long long)share);
    arg(&argv, &n, l->exe, NULL);
    arg(&argv, &n, "shim", NULL);
    arg(&argv, &n, "--dir", dir);
    arg(&argv, &n, "--max-line", max_line);
    if (l->opts.max_log_bytes > 0)
        arg(&argv, &n, "--max-bytes", max_bytes);
    const char *parts[] = { cg->unified, cg->memory, cg->pids };
    for (size_t i = 0; i < 3; i++) {
        bool seen = false;
        for (size_t k = 0; k < i; k++)
            seen |= parts[k] && parts[i] && strcmp(parts[k], parts[i]) == 0;
        if (parts[i] && !seen)
            arg(&argv, &n, "--cgroup", parts[i]);
    }
    if (cg->unified)
        arg(&argv, &n, "--kill-cgroup", cg->unified);
    if (l->sandbox)
        sandbox_args(l, ln, &argv, &n);
    arg(&argv, &n, "--", NULL);
    for (size_t k = 0; k < json_array_size(v->command); k++)
        arg(&argv, &n, json_string_value(json_array_get(v->command, k)), NULL);
    for (size_t k = 0; k < json_array_size(v->args); k++)
        arg(&argv, &n, json_string_value(json_array_get(v->args, k)), NULL);
    return argv;
}

/* Makes dir (mode 0700) owned by uid, and gives it back to uid when a restart of the job runs
 * as another identity than the attempt before (its identity was taken meanwhile). Parents it
 * makes are 0755 outside the data directory (the rank must pass through them: an admin's
 * checkpoint root) and the daemon's alone inside it (ranks see their own directories there
 * through the sandbox's mounts, never the path). */
static int own_dir(const char *dir, mode_t parents, unsigned uid, bool sandbox, struct err *err)
{
    if (local_mkdirs(dir, 0700, parents) < 0)
        return err_set(err, ERR_IO, "cannot create %s: %s", dir, strerror(errno));
    struct stat sb;
    if (!sandbox || (stat(dir, &sb) == 0 && sb.st_uid == uid))
        return 0;
    if (lchown(dir, uid, uid) < 0)
        return err_set(err, ERR_IO, "cannot give %s to the job: %s", dir, strerror(errno));
    return 0;
}

static unsigned chown_to;
static int chown_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb;
    (void)flag;
    (void)ftw;
    return lchown(path, chown_to, chown_to) < 0 && errno != ENOENT ? -1 : 0;
}

/* The job's own directory under the data directory: handed over whole when its owner changes. */
static int own_tree(const char *dir, unsigned uid, bool sandbox, struct err *err)
{
    struct stat sb;
    if (sandbox && stat(dir, &sb) == 0 && sb.st_uid != uid) {
        chown_to = uid; /* nftw has no context argument; the controller thread alone calls this */
        if (nftw(dir, chown_entry, 16, FTW_PHYS) < 0)
            return err_set(err, ERR_IO, "cannot give %s to the job: %s", dir, strerror(errno));
    }
    return own_dir(dir, 0700, uid, sandbox, err);
}

int local_prepare_dirs(struct local *l, struct launch *ln, struct err *err)
{
    const char *id = ln->job->id;
    const char *path = jsonx_str(ln->spec->checkpoint, "path");
    /* Without a checkpoint path the job gets its own directory, kept across its restarts (they
     * resume) and removed with the job; a new job never resumes another's run. */
    ln->ckpt = path ? xstrdup(path) : xasprintf("%s/jobs/%s/checkpoints", l->data_dir, id);
    ln->home = xasprintf("%s/jobs/%s/home", l->data_dir, id);
    ln->shm = xasprintf("/dev/shm/trainyard-%s", id);
    bool sb = l->sandbox;
    int rc =
        path ? own_dir(ln->ckpt, 0755, ln->uid, sb, err) : own_tree(ln->ckpt, ln->uid, sb, err);
    if (rc < 0 || own_tree(ln->home, ln->uid, sb, err) < 0 ||
        own_dir(ln->shm, 0755, ln->uid, sb, err) < 0) {
        local_release_dirs(ln);
        return -1;
    }
    return 0;
}

void local_release_dirs(struct launch *ln)
{
    free((char *)ln->ckpt);
    free((char *)ln->home);
    free((char *)ln->shm);
    ln->ckpt = ln->home = ln->shm = NULL;
}

static int remove_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb;
    (void)flag;
    (void)ftw;
    return remove(path);
}

void local_remove_tree(const char *dir)
{
    nftw(dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

void local_remove_shm(const char *job_id)
{
    char *dir = xasprintf("/dev/shm/trainyard-%s", job_id);
    local_remove_tree(dir);
    free(dir);
}
