/*
 * run: fork/exec plus one poll loop over a signalfd and the child's two pipes. Signals are
 * blocked in the worker and read from the signalfd, so none is lost between checks; the child
 * gets the original mask back before exec. Single-threaded apart from the reporter's thread.
 */
#include "worker/run.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/buf.h"
#include "core/clock.h"
#include "core/parse.h"
#include "core/xalloc.h"
#include "worker/metrics.h"

#define LINE_MAX_BYTES (64 * 1024)
#define DRAIN_MS       2000 /* output still read after the child exits (grandchildren may hold it) */

static const int forwarded[] = { SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2 };

struct stream {
    int fd;  /* read end, -1 at EOF */
    int out; /* 1 or 2 */
    struct buf line;
    int discarding; /* inside a line longer than LINE_MAX_BYTES */
};

struct sup {
    const struct run_opts *o;
    pid_t pid;
    int status, exited;
    int64_t kill_at; /* mono ns; 0: none */
    int killed;      /* SIGKILL sent after the grace period */
    int64_t last_step, implicit_step;
    struct stream s[2];
};

static void write_all(int fd, const char *p, size_t n)
{
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return; /* our own output is gone: keep the child running, drop its output */
        p += w;
        n -= (size_t)w;
    }
}

static void parse_line(struct sup *s, const struct buf *line)
{
    struct metric_kv kv[32];
    int64_t step;
    int n = metrics_parse_line(line->data ? line->data : "", line->len, kv, 32, &step);
    if (!s->o->reporter || (n == 0 && step < 0))
        return;
    if (step >= 0)
        s->last_step = step;
    else if (n > 0)
        step = s->last_step >= 0 ? s->last_step : ++s->implicit_step;
    int64_t now = clock_now_ns();
    for (int i = 0; i < n; i++)
        reporter_add(s->o->reporter, kv[i].name, step, kv[i].value, now);
    if (step >= 0)
        reporter_set_step(s->o->reporter, step);
}

/* Copies what the child wrote through, then splits it into lines at '\n' or '\r' (tqdm). */
static void on_output(struct sup *s, struct stream *st)
{
    char chunk[65536];
    ssize_t n = read(st->fd, chunk, sizeof(chunk));
    if (n < 0 && (errno == EINTR || errno == EAGAIN))
        return;
    if (n <= 0) {
        close(st->fd);
        st->fd = -1;
        return;
    }
    write_all(st->out, chunk, (size_t)n);
    for (ssize_t i = 0; i < n; i++) {
        char c = chunk[i];
        if (c == '\n' || c == '\r') {
            if (!st->discarding)
                parse_line(s, &st->line);
            buf_reset(&st->line);
            st->discarding = 0;
        } else if (!st->discarding) {
            buf_putc(&st->line, c);
            if (st->line.len > LINE_MAX_BYTES) {
                st->discarding = 1;
                buf_reset(&st->line);
            }
        }
    }
}

/* Collects exited children; as PID 1, orphans land here too. */
static void reap(struct sup *s)
{
    int st;
    pid_t p;
    while ((p = waitpid(-1, &st, WNOHANG)) > 0)
        if (p == s->pid) {
            s->status = st;
            s->exited = 1;
        }
}

static void on_signal(struct sup *s, int sigfd)
{
    struct signalfd_siginfo si;
    while (read(sigfd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
        int sig = (int)si.ssi_signo;
        if (sig == SIGCHLD) {
            reap(s);
            continue;
        }
        if (s->exited)
            continue;
        kill(-s->pid, sig);
        if (sig != SIGUSR1 && sig != SIGUSR2 && s->kill_at == 0) {
            s->kill_at = clock_mono_ns() + s->o->grace_ms * NS_PER_MS;
            fprintf(stderr, "trainyard-worker: forwarded %s; SIGKILL in %lld ms\n", strsignal(sig),
                    (long long)s->o->grace_ms);
        }
    }
}

/* In the child: its own group, the parent's death kills it, then exec. The forwarded signals
 * get their default action back: one ignored by whoever started the worker (a shell's
 * background job ignores SIGINT and SIGQUIT) must still stop the command. Never returns. */
static void exec_child(const struct run_opts *o, const sigset_t *orig, int out_w, int err_w,
                       int errpipe)
{
    setpgid(0, 0);
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    signal(SIGPIPE, SIG_DFL);
    for (size_t i = 0; i < sizeof(forwarded) / sizeof(forwarded[0]); i++)
        signal(forwarded[i], SIG_DFL);
    sigprocmask(SIG_SETMASK, orig, NULL);
    dup2(out_w, 1);
    dup2(err_w, 2);
    execvpe(o->argv[0], o->argv, o->envp ? o->envp : environ);
    int e = errno;
    if (write(errpipe, &e, sizeof(e)) < 0)
        _exit(127);
    _exit(127);
}

static void signal_set(sigset_t *set)
{
    sigemptyset(set);
    for (size_t i = 0; i < sizeof(forwarded) / sizeof(forwarded[0]); i++)
        sigaddset(set, forwarded[i]);
    sigaddset(set, SIGCHLD);
}

static int spawn(struct sup *s, const sigset_t *orig, struct err *err)
{
    int out[2], errp[2], ep[2];
    if (pipe2(out, O_CLOEXEC) < 0 || pipe2(errp, O_CLOEXEC) < 0 || pipe2(ep, O_CLOEXEC) < 0)
        return err_set(err, ERR_IO, "pipe: %s", strerror(errno));
    fflush(NULL);
    s->pid = fork();
    if (s->pid < 0)
        return err_set(err, ERR_IO, "fork: %s", strerror(errno));
    if (s->pid == 0)
        exec_child(s->o, orig, out[1], errp[1], ep[1]);
    setpgid(s->pid, s->pid); /* also here: no window where a signal reaches the wrong group */
    close(out[1]);
    close(errp[1]);
    close(ep[1]);
    int e = 0;
    ssize_t n = read(ep[0], &e, sizeof(e));
    close(ep[0]);
    s->s[0] = (struct stream){ .fd = out[0], .out = 1 };
    s->s[1] = (struct stream){ .fd = errp[0], .out = 2 };
    if (n == (ssize_t)sizeof(e))
        return err_set(err, ERR_INVALID, "cannot run %s: %s", s->o->argv[0], strerror(e));
    return 0;
}

static void loop(struct sup *s, int sigfd)
{
    int64_t drain_until = 0;
    for (;;) {
        int64_t now = clock_mono_ns();
        if (s->exited && !drain_until)
            drain_until = now + DRAIN_MS * NS_PER_MS;
        if (s->exited && ((s->s[0].fd < 0 && s->s[1].fd < 0) || now >= drain_until))
            return;
        if (!s->exited && s->kill_at && now >= s->kill_at && !s->killed) {
            kill(-s->pid, SIGKILL);
            s->killed = 1;
        }
        int64_t until = s->exited ? drain_until : (s->kill_at && !s->killed ? s->kill_at : 0);
        /* Never wait blindly: a SIGCHLD taken by another thread of a caller that did not block
         * it would otherwise be missed; the child is also checked for every 250 ms. */
        int timeout = until ? (int)((until - now) / NS_PER_MS + 1) : 250;
        if (timeout > 250)
            timeout = 250;
        struct pollfd p[3] = { { sigfd, POLLIN, 0 },
                               { s->s[0].fd, POLLIN, 0 },
                               { s->s[1].fd, POLLIN, 0 } };
        if (poll(p, 3, timeout) < 0 && errno != EINTR)
            return;
        if (p[0].revents)
            on_signal(s, sigfd);
        if (!s->exited)
            reap(s);
        for (int i = 0; i < 2; i++)
            if (p[i + 1].revents && s->s[i].fd >= 0)
                on_output(s, &s->s[i]);
    }
}

static int report_exit(struct sup *s)
{
    const char *name = s->o->name ? s->o->name : s->o->argv[0];
    int st = s->status, code;
    if (WIFSIGNALED(st)) {
        code = 128 + WTERMSIG(st);
        fprintf(stderr, "trainyard-worker: %s killed by signal %d (%s)%s\n", name, WTERMSIG(st),
                strsignal(WTERMSIG(st)), s->killed ? " after the grace period" : "");
        if (s->o->reporter)
            reporter_set_exit(s->o->reporter, 0, WTERMSIG(st));
    } else {
        code = WEXITSTATUS(st);
        fprintf(stderr, "trainyard-worker: %s exited with status %d\n", name, code);
        if (s->o->reporter)
            reporter_set_exit(s->o->reporter, code, 0);
    }
    return code;
}

int run_child(const struct run_opts *o, struct err *err)
{
    struct sup s = { .o = o, .last_step = -1 };
    sigset_t set, orig, child;
    int ret = 127, sigfd = -1;
    signal_set(&set);
    sigprocmask(SIG_BLOCK, &set, &orig);
    child = orig; /* the command starts with these signals unblocked, whoever blocked them */
    for (int sig = 1; sig < NSIG; sig++)
        if (sigismember(&set, sig))
            sigdelset(&child, sig);
    sigfd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
    if (sigfd < 0) {
        err_set(err, ERR_IO, "signalfd: %s", strerror(errno));
        goto out;
    }
    if (spawn(&s, &child, err) < 0) {
        if (s.pid > 0)
            waitpid(s.pid, NULL, 0);
        goto out;
    }
    loop(&s, sigfd);
    if (!s.exited) { /* poll failed: should not happen; do not leave the child behind */
        kill(-s.pid, SIGKILL);
        waitpid(s.pid, &s.status, 0);
    }
    ret = report_exit(&s);
out:
    for (int i = 0; i < 2; i++) {
        if (s.s[i].fd >= 0 && s.pid > 0)
            close(s.s[i].fd);
        buf_release(&s.s[i].line);
    }
    if (sigfd >= 0)
        close(sigfd);
    sigprocmask(SIG_SETMASK, &orig, NULL);
    return ret;
}

/* A duration from a flag or variable ("30s", "250ms", "2"), or def. -1 when malformed. */
static int duration_ms(const char *name, const char *text, int64_t def, int64_t *out)
{
    int64_t ns;
    *out = def;
    if (!text)
        return 0;
    if (parse_duration(text, &ns) < 0) {
        fprintf(stderr, "trainyard-worker: %s=%s is not a duration\n", name, text);
        return -1;
    }
    *out = ns / NS_PER_MS;
    return 0;
}

/* The environment of the preflight (see run_preflight). Caller frees with strv_free(). */
static char **preflight_env(void)
{
    const char *nnodes = rankenv_get("PET_NNODES"), *node = rankenv_get("PET_NODE_RANK");
    int nodes = 0, per_node = nnodes && !rankenv_get("LOCAL_RANK") &&
                              parse_int(nnodes, 1, 1 << 20, &nodes) == 0;
    size_t n = 0, k = 0;
    while (environ[n])
        n++;
    char **env = xcalloc(n + 3, sizeof(char *));
    for (size_t i = 0; i < n; i++) {
        const char *e = environ[i];
        if (!per_node || (strncmp(e, "RANK=", 5) && strncmp(e, "WORLD_SIZE=", 11) &&
                          strncmp(e, "LOCAL_WORLD_SIZE=", 17)))
            env[k++] = xstrdup(e);
    }
    if (per_node) {
        if (!node)
            node = rankenv_get("RANK");
        env[k++] = xasprintf("RANK=%s", node ? node : "0");
        env[k++] = xasprintf("WORLD_SIZE=%d", nodes);
    }
    return env;
}

static void strv_free(char **v)
{
    for (char **p = v; p && *p; p++)
        free(*p);
    free(v);
}

int run_preflight(const char *exe, int64_t grace_ms, struct err *err)
{
    char *argv[] = { (char *)exe, "preflight", NULL };
    char **env = preflight_env();
    struct run_opts o = { .argv = argv, .envp = env, .name = "preflight", .grace_ms = grace_ms };
    int rc = run_child(&o, err);
    strv_free(env);
    return rc;
}

/* A terminating signal that came (blocked) while the preflight ran: 128+N, else 0. */
static int pending_stop(void)
{
    sigset_t pend;
    sigpending(&pend);
    for (size_t i = 0; i < 4; i++) /* SIGTERM, SIGINT, SIGHUP, SIGQUIT */
        if (sigismember(&pend, forwarded[i]))
            return 128 + forwarded[i];
    return 0;
}

/* --preflight: 0 to go on to the command, else the status to exit with. */
static int preflight_first(const char *cmd, int64_t grace_ms)
{
    char exe[4096];
    struct err err;
    err_init(&err);
    ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    exe[n > 0 ? n : 0] = '\0';
    int rc = n > 0 ? run_preflight(exe, grace_ms, &err) : 127;
    if (n <= 0)
        err_set(&err, ERR_IO, "/proc/self/exe: %s", strerror(errno));
    if (err_is_set(&err))
        fprintf(stderr, "trainyard-worker: %s\n", err.msg);
    if (rc == 0)
        rc = pending_stop();
    if (rc != 0)
        fprintf(stderr, "trainyard-worker: preflight %s: %s not started\n",
                rc == 1    ? "failed (report above)"
                : rc > 128 ? "stopped by a signal"
                           : "did not run",
                cmd);
    err_release(&err);
    return rc;
}

/* Flags and their variables; 0, or 2 after printing what is wrong. */
static int parse_flags(int argc, char **argv, int64_t *grace_ms, int64_t *hb_ms, int64_t *cap,
                       int *preflight)
{
    static const struct option opts[] = { { "grace", 1, 0, 'g' },
                                          { "heartbeat", 1, 0, 'h' },
                                          { "preflight", 0, 0, 'p' },
                                          { 0, 0, 0, 0 } };
    const char *grace = rankenv_get("TRAINYARD_GRACE_PERIOD");
    const char *hb = rankenv_get("TRAINYARD_HEARTBEAT_INTERVAL");
    const char *capv = rankenv_get("TRAINYARD_REPORT_BUFFER");
    const char *pf = rankenv_get("TRAINYARD_PREFLIGHT");
    bool on = false;
    int c;
    if (pf && parse_bool(pf, &on) < 0) {
        fprintf(stderr, "trainyard-worker: TRAINYARD_PREFLIGHT=%s is not a boolean\n", pf);
        return 2;
    }
    *preflight = on;
    while ((c = getopt_long(argc, argv, "+", opts, NULL)) != -1) {
        if (c == '?')
            return 2;
        if (c == 'p')
            *preflight = 1;
        else
            *(c == 'g' ? &grace : &hb) = optarg;
    }
    *cap = 10000;
    if (duration_ms("grace", grace, 30000, grace_ms) < 0 ||
        duration_ms("heartbeat", hb, 10000, hb_ms) < 0 ||
        (capv && parse_int64(capv, 1, 10000000, cap) < 0))
        return 2;
    if (optind >= argc) {
        fprintf(stderr, "trainyard-worker run: no command (usage: run [--preflight] [--grace S] "
                        "-- CMD...)\n");
        return 2;
    }
    return 0;
}

int run_main(int argc, char **argv, const struct rankenv *re)
{
    int64_t grace_ms, hb_ms, cap;
    int preflight, rc;
    if (parse_flags(argc, argv, &grace_ms, &hb_ms, &cap, &preflight))
        return 2;
    struct err err;
    err_init(&err);
    sigset_t set; /* blocked before the reporter thread starts, so only the signalfd sees them */
    signal_set(&set);
    sigprocmask(SIG_BLOCK, &set, NULL);
    if (preflight && (rc = preflight_first(argv[optind], grace_ms)) != 0)
        return rc;
    struct reporter *rep =
        reporter_new(rankenv_get("TRAINYARD_URL"), rankenv_get("TRAINYARD_TOKEN"), re->job_id,
                     re->rank, (size_t)cap, &err);
    if (!rep || reporter_start(rep, (int)hb_ms, &err) < 0) {
        fprintf(stderr, "trainyard-worker: reporting disabled: %s\n", err.msg);
        err_release(&err);
        reporter_free(rep);
        rep = NULL;
    }
    struct run_opts o = { .argv = argv + optind, .grace_ms = grace_ms, .reporter = rep };
    rc = run_child(&o, &err);
    if (err_is_set(&err))
        fprintf(stderr, "trainyard-worker: %s\n", err.msg);
    if (rep) {
        reporter_stop(rep);
        struct reporter_stats st;
        reporter_stats(rep, &st);
        if (rankenv_get("TRAINYARD_URL") && (st.pending || st.dropped_total))
            fprintf(stderr, "trainyard-worker: %zu metric(s) not delivered, %llu dropped\n",
                    st.pending, (unsigned long long)st.dropped_total);
        reporter_free(rep);
    }
    err_release(&err);
    return rc;
}
