/*
 * local: the local executor (see local.h): its executor interface (capacity in rank slots,
 * start, stop, adopt, forget, dry-run render, Prometheus text) and the watching of its ranks.
 * Starting and adopting rank processes is local_rank.c. The controller thread calls every
 * function here; only metrics() may come from another thread, so the counters it reads are
 * atomic. struct local owns its rank records (local_internal.h).
 *
 * A rank is watched through a pidfd of its shim: readable once the shim exits, whether the
 * shim is our child or was adopted after a daemon restart. How the rank ended is read from the
 * shim's status.json, never from waitpid(), because an adopted shim is not our child.
 *
 * Each rank runs in cgroups of its own where the daemon may make them (server/local/cgroup.h):
 * resources.memory is its limit, and an OOM kill the kernel counted there (or, without rank
 * cgroups, a SIGKILL trainyard did not send while an OOM counter rose) is reported as
 * "OOMKilled"; signals go to every process of the rank's cgroup, so a stop reaches what the
 * rank started in a session of its own too. Where the host allows, ranks run sandboxed as
 * their job's identity (server/local/sandbox.h): one uid per running job, from --local-uid-base.
 */
#include "server/local/local.h"

#include <errno.h>
#include <ftw.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/jsonx.h"
#include "core/prom.h"
#include "core/xalloc.h"
#include "server/local/local_internal.h"
#include "server/local/sandbox.h"

char *local_job_dir(const char *data_dir, const char *job_id)
{
    return xasprintf("%s/jobs/%s", data_dir, job_id);
}

json_t *local_read_json(const char *dir, const char *name)
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

/* The job's identity: uid_base + its pk (modulo the range), or the next one no other running
 * job has. A job keeps it while any of its ranks runs; restarts may get another. */
static unsigned job_uid(struct local *l, int64_t pk)
{
    unsigned count = l->opts.uid_count ? l->opts.uid_count : 1;
    for (unsigned k = 0; k < count; k++) {
        unsigned uid = l->opts.uid_base + (unsigned)((uint64_t)(pk + k) % count);
        bool taken = false;
        for (size_t i = 0; i < l->n && !taken; i++)
            taken = l->ranks[i]->job_pk != pk && l->ranks[i]->uid == uid;
        if (!taken)
            return uid;
    }
    return l->opts.uid_base; /* more running jobs than identities: refused by fits() first */
}

static int local_start(struct executor *ex, const struct job *j, const struct spec_view *v,
                       int attempt, const char *token, struct err *err)
{
    struct local *l = LOCAL(ex);
    int per_rank = local_gpus_per_rank(v);
    int *gpus = xcalloc((size_t)v->nranks * (size_t)per_rank + 1, sizeof(int));
    struct launch ln = { .job = j,
                         .spec = v,
                         .attempt = attempt,
                         .master_port = free_port(),
                         .token = token,
                         .uid = l->sandbox ? job_uid(l, j->pk) : (unsigned)getuid(),
                         .gpus = gpus,
                         .gpus_per_rank = per_rank };
    if (local_gpus_pick(l, v->nranks * per_rank, gpus) < 0) {
        err_set(err, ERR_UNAVAILABLE, "%d GPUs are not free", v->nranks * per_rank);
        report_start_failure(ex, j, attempt, 0, v->nranks, err->msg);
        free(gpus);
        return -1;
    }
    if (local_prepare_dirs(l, &ln, err) < 0) {
        report_start_failure(ex, j, attempt, 0, v->nranks, err->msg);
        free(gpus);
        return -1;
    }
    int rc = 0;
    for (int r = 0; r < v->nranks && rc == 0; r++) {
        rc = local_spawn_rank(ex, &ln, r, err);
        if (rc < 0)
            report_start_failure(ex, j, attempt, r, v->nranks, err->msg);
    }
    local_release_dirs(&ln);
    free(gpus);
    return rc;
}

static int local_fits(struct executor *ex, const struct job *j, const struct spec_view *v)
{
    (void)j;
    struct local *l = LOCAL(ex);
    return atomic_load(&l->used) + v->nranks <= l->opts.slots &&
           v->nranks * local_gpus_per_rank(v) <= local_gpus_free(l);
}

static void local_capacity(struct executor *ex, int64_t *slots, int64_t *gpus)
{
    struct local *l = LOCAL(ex);
    *slots = l->opts.slots;
    *gpus = (int64_t)l->gpus.n;
}

int local_gpu_count(struct executor *ex)
{
    return (int)LOCAL(ex)->gpus.n;
}

json_t *local_node(struct executor *ex)
{
    return local_gpus_node(LOCAL(ex));
}

/* Every process of the rank: its cgroup when it has one (setsid'd ones too), else its group. */
static void signal_rank(struct lrank *r, int sig)
{
    if (r->cg.unified && cgroup_signal(r->cg.unified, sig, 0) >= 0)
        return;
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
    if (r->cg.memory)
        return cgroup_oom_kills(r->cg.memory) > 0;
    if (sig != SIGKILL || r->stopped || r->oom_before < 0)
        return false;
    return cgroup_oom_kills_fallback() > r->oom_before;
}

void local_report_end(struct executor *ex, struct lrank *r)
{
    json_t *st = local_read_json(r->dir, "status.json");
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
                     r->cg.memory ? "OOM kill counted in the rank's memory cgroup"
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

void local_check_started(struct executor *ex, struct lrank *r)
{
    json_t *info = local_read_json(r->dir, "rank.json");
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
    local_follow_log(LOCAL(ex), r);
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

static bool job_running(struct local *l, int64_t pk)
{
    for (size_t i = 0; i < l->n; i++)
        if (l->ranks[i]->job_pk == pk)
            return true;
    return false;
}

static void local_poll(struct executor *ex)
{
    struct local *l = LOCAL(ex);
    int64_t now = clock_mono_ns();
    for (size_t i = 0; i < l->n;) {
        struct lrank *r = l->ranks[i];
        if (!r->running_reported)
            local_check_started(ex, r);
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
            local_check_started(ex, r);
        local_report_end(ex, r);
        int64_t pk = r->job_pk;
        char id[32];
        snprintf(id, sizeof(id), "%s", r->job_id);
        local_remove_rank(l, i);
        if (!job_running(l, pk))
            local_remove_shm(id); /* shared memory is RAM: not kept past the job's last rank */
    }
}

static int local_adopt(struct executor *ex, const struct job *j, const struct spec_view *v,
                       struct err *err)
{
    int found = 0;
    for (int r = 0; r < v->nranks; r++)
        found += local_adopt_rank(ex, j, r);
    if (found == 0)
        return 1; /* nothing of this attempt exists yet: the controller starts it */
    for (int r = 0; r < v->nranks && found < v->nranks; r++) {
        char *dir = local_rank_dir(LOCAL(ex), j->id, j->attempt, r);
        struct stat sb;
        if (stat(dir, &sb) < 0)
            report_start_failure(ex, j, j->attempt, r, r + 1,
                                 "the daemon stopped before this rank was started");
        free(dir);
    }
    (void)err;
    return 0;
}

static void local_forget(struct executor *ex, const char *job_id)
{
    char *dir = local_job_dir(LOCAL(ex)->data_dir, job_id);
    local_remove_tree(dir);
    free(dir);
    local_remove_shm(job_id);
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
        char *dir = local_rank_dir(l, job_id, 0, r);
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
    struct prom p;
    prom_init(&p, out);
    prom_scalar(&p, "trainyard_local_slots", PROM_GAUGE, "Rank slots of the local executor.",
                l->opts.slots);
    prom_scalar(&p, "trainyard_local_slots_used", PROM_GAUGE, "Rank slots in use.",
                atomic_load(&l->used));
    prom_scalar(&p, "trainyard_local_ranks_started_total", PROM_COUNTER, "Rank processes started.",
                (double)atomic_load(&l->spawned));
}

static void local_free(struct executor *ex)
{
    if (!ex)
        return;
    struct local *l = LOCAL(ex);
    while (l->n)
        local_remove_rank(l, l->n - 1);
    free(l->ranks);
    free(l->data_dir);
    free(l->url);
    cgroup_roots_release(&l->cgroots);
    pthread_mutex_destroy(&l->gpu_lock);
    free(l);
    free(ex);
}

void local_set_url(struct executor *ex, const char *url)
{
    struct local *l = LOCAL(ex);
    free(l->url);
    l->url = url ? xstrdup(url) : NULL;
}

/* Whether ranks run sandboxed: the host must allow it (root, mount namespaces) and give ranks
 * cgroups that can end them and limit them; else why not, in l->why. */
static int decide_sandbox(struct local *l, struct err *err)
{
    if (l->opts.sandbox == LOCAL_SANDBOX_OFF) {
        snprintf(l->why, sizeof(l->why),
                 "turned off (--local-sandbox=off): ranks run as the "
                 "daemon and can read its data and tokens");
        return 0;
    }
    struct err probe;
    err_init(&probe);
    const char *missing = cgroup_roots_missing(&l->cgroots);
    int probed = sandbox_probe(&probe);
    if (probed == 0 && !missing) {
        l->sandbox = true;
    } else {
        snprintf(l->why, sizeof(l->why), "unavailable: %s", probed < 0 ? probe.msg : missing);
        if (l->opts.sandbox == LOCAL_SANDBOX_REQUIRED)
            err_set(err, ERR_UNAVAILABLE, "ranks cannot be sandboxed on this host: %s",
                    l->why + strlen("unavailable: "));
    }
    err_release(&probe);
    return l->opts.sandbox == LOCAL_SANDBOX_REQUIRED && !l->sandbox ? -1 : 0;
}

bool local_sandboxed(struct executor *ex, const char **why)
{
    struct local *l = LOCAL(ex);
    if (why)
        *why = l->sandbox ? NULL : l->why;
    return l->sandbox;
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
    if (!getcwd(l->cwd, sizeof(l->cwd)))
        snprintf(l->cwd, sizeof(l->cwd), "/");
    cgroup_roots_probe(&l->cgroots);
    pthread_mutex_init(&l->gpu_lock, NULL);
    if (gpus_discover(&l->gpus, opts->gpus, opts->gpus_file, err) < 0 ||
        decide_sandbox(l, err) < 0) {
        pthread_mutex_destroy(&l->gpu_lock);
        cgroup_roots_release(&l->cgroots);
        free(l->data_dir);
        free(l->url);
        free(l);
        return NULL;
    }
    struct executor *ex = XNEW(struct executor);
    *ex = (struct executor){ .name = "local",
                             .fits = local_fits,
                             .capacity = local_capacity,
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
