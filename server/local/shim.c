/*
 * shim: supervises one rank of a local job (`trainyard shim`, started by local_rank.c). It runs the
 * rank's command in its own process group, turns its stdout and stderr into timestamped log
 * records (server/ingest/logrec.h) appended to DIR/log, and records how the rank ended in
 * DIR/status.json. It lives in its own session, so it outlives a daemon that crashes or is
 * killed: the rank keeps running, its output keeps being recorded, and a restarted daemon reads
 * the files and adopts it.
 *
 *   DIR/rank.json    {"pid", "shim_pid", "started_at"}   written once the rank runs
 *   DIR/log          log records, appended
 *   DIR/status.json  {"exit_code", "signal", "finished_at"}   written once, atomically
 *
 *   DIR/env          the rank's environment, NUL-separated, written by the daemon
 *
 * With --max-bytes the log file holds at most that many bytes on disk: the collector punches
 * out what it has stored (server/ingest/collect.c: the file keeps its size and offsets, the
 * blocks are freed), and while the rank writes faster than the collector stores, the lines that
 * do not fit are dropped and counted, and a marker line says how many, as on a full disk. The
 * daemon gives each rank its share of the job's --log-max-bytes, at least 8 MiB (launch.c).
 * Without this the file between the rank and the store grew without bound (15 s of `yes` wrote
 * 4.6 GB with a 2 MiB limit), and a full disk makes every write of every user fail. On a file
 * system that cannot punch holes the limit is not applied (the collector could never make room).
 *
 * The rank's environment never is the shim's: the shim runs as root, and a job's env
 * (LD_PRELOAD, say) must not reach it. With --uid the rank runs sandboxed (sandbox.h); with
 * --kill-cgroup, whatever the rank leaves behind when it ends (a setsid'd or double-forked
 * process) is killed through the cgroup, not only the rank's process group.
 *
 * Single-threaded; signals are read from a signalfd.
 */
#include "server/local/shim.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/falloc.h>
#include <poll.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/buf.h"
#include "core/clock.h"
#include "core/linesplit.h"
#include "core/parse.h"
#include "core/xalloc.h"
#include "server/ingest/logrec.h"
#include "server/local/cgroup.h"
#include "server/local/sandbox.h"

#define SHIM_MAX_CGROUPS 3

struct shim {
    const char *dir;
    const char *cgroups[SHIM_MAX_CGROUPS]; /* entered by the rank before exec */
    size_t ncgroups;
    const char *kill_cgroup; /* the rank's cgroup v2 node, or NULL */
    bool sandboxed;
    struct sandbox sandbox;
    const char *cwd;
    char **env; /* the rank's environment, from DIR/env */
    int log_fd;
    pid_t child;
    struct linesplit split[2];
    struct buf out;    /* records not yet written */
    size_t dropped;    /* lines not kept while the disk was full and out at its limit */
    int64_t max_bytes; /* --max-bytes: the file's blocks on disk at most; 0: no limit */
    bool bounded;      /* max_bytes applies (the file system punches holes) */
    int64_t room;      /* bytes that may still be added before the next look at the file */
    size_t over;       /* lines not kept because the file was at max_bytes */
    int64_t now;
    enum log_stream stream; /* of the line being emitted */
};

/* Records waiting while the disk is full; past this, lines are counted, not kept. */
#define OUT_MAX (64u << 20)

/* Appends r unless the file's limit leaves no room for it; false when it was dropped. */
static bool put_record(struct shim *s, const struct logrec *r)
{
    size_t before = s->out.len;
    logrec_format(&s->out, r);
    int64_t used = (int64_t)(s->out.len - before);
    if (!s->bounded || used <= s->room) {
        s->room -= used;
        return true;
    }
    s->out.len = before; /* take it back */
    s->out.data[before] = '\0';
    return false;
}

/* The marker for lines dropped at the limit, once there is room again (or force: the end). */
static void note_over(struct shim *s, bool force)
{
    if (!s->over)
        return;
    char mark[224];
    int n = snprintf(mark, sizeof(mark),
                     "[trainyard: %zu lines lost: the rank wrote faster than its log is stored "
                     "and its log file holds %lld bytes at most (--log-max-bytes)]",
                     s->over, (long long)s->max_bytes);
    struct logrec m = { .time = s->now, .stream = STREAM_STDERR, .text = mark, .len = (size_t)n };
    if (force) {
        logrec_format(&s->out, &m);
        s->over = 0;
    } else if (put_record(s, &m)) {
        s->over = 0;
    }
}

static void emit(void *ctx, const char *line, size_t len, int flags)
{
    struct shim *s = ctx;
    note_over(s, false);
    if (s->over) {
        s->over++;
        return;
    }
    if (s->out.len >= OUT_MAX) {
        s->dropped++;
        return;
    }
    if (s->dropped) {
        char mark[96];
        int n = snprintf(mark, sizeof(mark), "[trainyard: %zu lines lost: the disk was full]",
                         s->dropped);
        struct logrec m = {
            .time = s->now, .stream = STREAM_STDERR, .text = mark, .len = (size_t)n
        };
        logrec_format(&s->out, &m);
        s->dropped = 0;
    }
    struct logrec r = {
        .time = s->now, .stream = s->stream, .flags = flags, .text = line, .len = len
    };
    if (!put_record(s, &r))
        s->over++;
}

static bool no_room(int e)
{
    return e == ENOSPC || e == EDQUOT;
}

/* How much more the file may take: its limit less the blocks it holds and what waits. */
static void measure_room(struct shim *s)
{
    struct stat st;
    if (s->bounded && fstat(s->log_fd, &st) == 0)
        s->room = s->max_bytes - (int64_t)st.st_blocks * 512 - (int64_t)s->out.len;
}

/* Whether the file system can punch holes in the log (tried past its end: nothing changes). */
static bool can_punch(int fd)
{
    struct stat st;
    if (fstat(fd, &st) < 0)
        return false;
    off_t past = (st.st_size | 0xfffff) + 1;
    return fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, past, 4096) == 0;
}

static void flush_records(struct shim *s)
{
    size_t off = 0;
    while (off < s->out.len) {
        ssize_t n = write(s->log_fd, s->out.data + off, s->out.len - off);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && !no_room(errno))
            off = s->out.len; /* not a full disk: there is nothing to wait for */
        if (n <= 0)
            break; /* disk full: the rest waits for the next flush (the rank keeps running) */
        off += (size_t)n;
    }
    buf_consume(&s->out, off);
    measure_room(s);
}

/* Writes path atomically: a temporary file, fsync, rename, fsync of the directory. */
static int write_atomic(const char *dir, const char *name, const char *text)
{
    char tmp[4096], path[4096];
    snprintf(tmp, sizeof(tmp), "%s/.%s.tmp", dir, name);
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
        return -1;
    size_t len = strlen(text);
    ssize_t n = write(fd, text, len);
    int rc = n == (ssize_t)len && fsync(fd) == 0 ? 0 : -1;
    int saved = n >= 0 && n < (ssize_t)len ? ENOSPC : errno; /* a short write: no room */
    close(fd);
    if (rc == 0 && (rc = rename(tmp, path)) < 0)
        saved = errno;
    int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd >= 0) {
        fsync(dfd);
        close(dfd);
    }
    errno = saved; /* the caller tells a full disk from a missing directory */
    return rc;
}

/* The child's side of spawn(): cgroups, sandbox, then the rank. Never returns. */
static void run_rank(struct shim *s, char **argv, int out_fd, int err_fd)
{
    setpgid(0, 0);
    for (size_t i = 0; i < s->ncgroups; i++)
        cgroup_enter(s->cgroups[i]); /* the shim stays outside: it must outlive the rank */
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    signal(SIGPIPE, SIG_DFL);
    int devnull = open("/dev/null", O_RDONLY);
    if (devnull >= 0)
        dup2(devnull, 0);
    if (devnull > 2)
        close(devnull);
    dup2(out_fd, 1);
    dup2(err_fd, 2);
    umask(022); /* the usual one, not the daemon's 077 */
    char msg[1024];
    struct err err;
    err_init(&err);
    if (s->sandboxed && sandbox_enter(&s->sandbox, s->cwd, &err) < 0) {
        int n = snprintf(msg, sizeof(msg), "trainyard: %s\n", err.msg);
        if (write(2, msg, (size_t)n) < 0) {
            /* nothing left to report to */
        }
        _exit(127); /* never run a rank outside the sandbox it was given */
    }
    extern char **environ;
    environ = s->env; /* execvp looks the command up in the rank's PATH */
    execvp(argv[0], argv);
    int n =
        snprintf(msg, sizeof(msg), "trainyard: cannot run '%s': %s\n", argv[0], strerror(errno));
    if (write(2, msg, (size_t)n) < 0) {
        /* nothing left to report to */
    }
    _exit(127);
}

static pid_t spawn(struct shim *s, char **argv, int out_fd, int err_fd)
{
    pid_t pid = fork();
    if (pid == 0)
        run_rank(s, argv, out_fd, err_fd);
    return pid;
}

/* Sends sig to the rank: every process of its cgroup, else its process group. */
static void signal_rank(struct shim *s, int sig)
{
    if (!s->kill_cgroup || cgroup_signal(s->kill_cgroup, sig, 0) < 0)
        kill(-s->child, sig);
}

/* Ends whatever the rank left behind and waits (up to 5 s) until it has gone. */
static void kill_leftovers(struct shim *s)
{
    signal_rank(s, SIGKILL);
    for (int i = 0; s->kill_cgroup && i < 500 && cgroup_populated(s->kill_cgroup); i++)
        clock_sleep_ms(10);
}

/* Reads what a pipe holds into its splitter; returns 0 at end of file. */
static int drain_pipe(struct shim *s, int fd, enum log_stream stream)
{
    char chunk[65536];
    ssize_t n = read(fd, chunk, sizeof(chunk));
    if (n < 0)
        return errno == EINTR || errno == EAGAIN ? 1 : 0;
    s->now = clock_now_ns();
    s->stream = stream;
    if (n == 0) {
        linesplit_finish(&s->split[stream], emit, s);
        return 0;
    }
    linesplit_feed(&s->split[stream], chunk, (size_t)n, s->now, emit, s);
    return 1;
}

static void forward_signal(struct shim *s, int sfd)
{
    struct signalfd_siginfo info;
    while (read(sfd, &info, sizeof(info)) == (ssize_t)sizeof(info))
        if (info.ssi_signo != SIGCHLD)
            signal_rank(s, (int)info.ssi_signo);
}

/* Runs until both pipes reach end of file and the child is reaped; returns its wait status. */
static int supervise(struct shim *s, int out_fd, int err_fd, int sfd)
{
    struct pollfd fds[3] = { { out_fd, POLLIN, 0 }, { err_fd, POLLIN, 0 }, { sfd, POLLIN, 0 } };
    int status = 0;
    bool reaped = false;
    int64_t reaped_at = 0;
    while (fds[0].fd >= 0 || fds[1].fd >= 0) {
        int rc = poll(fds, 3, 250);
        if (rc < 0 && errno != EINTR)
            break;
        for (int i = 0; i < 2; i++) {
            if (fds[i].fd >= 0 && (fds[i].revents & (POLLIN | POLLHUP)) &&
                !drain_pipe(s, fds[i].fd, (enum log_stream)i)) {
                close(fds[i].fd);
                fds[i].fd = -1;
            }
        }
        if (fds[2].revents & POLLIN)
            forward_signal(s, sfd);
        if (!reaped && waitpid(s->child, &status, WNOHANG) == s->child) {
            reaped = true;
            reaped_at = clock_mono_ns();
            /* Whatever the rank left behind must not outlive it. */
            kill_leftovers(s);
        }
        if (reaped && clock_mono_ns() - reaped_at > 5 * NS_PER_SEC)
            break; /* a process outside the group still holds the pipes */
        s->now = clock_now_ns();
        for (int i = 0; i < 2; i++) {
            s->stream = (enum log_stream)i;
            linesplit_tick(&s->split[i], s->now, emit, s);
        }
        flush_records(s);
    }
    if (!reaped)
        waitpid(s->child, &status, 0);
    return status;
}

static int usage(void)
{
    fprintf(stderr, "usage: trainyard shim --dir DIR [--max-line BYTES] [--max-bytes BYTES] "
                    "[--cgroup DIR]... "
                    "[--kill-cgroup DIR] [--uid UID --gid GID [--hide PATH]... [--bind DIR]... "
                    "[--shm DIR] [--cwd DIR]] -- COMMAND [ARG]...\n");
    return 2;
}

/* Appends v to a list of at most max; false when full. */
static bool add(const char **list, size_t *n, size_t max, const char *v)
{
    if (*n >= max)
        return false;
    list[(*n)++] = v;
    return true;
}

static bool parse_id(const char *text, unsigned *id)
{
    int64_t v;
    if (parse_int64(text, 1, UINT32_MAX - 1, &v) < 0)
        return false;
    *id = (unsigned)v;
    return true;
}

/* One option and its value; false when it is not one. */
static bool parse_option(struct shim *s, const char *opt, const char *v, int64_t *max_line,
                         bool *uid, bool *gid)
{
    struct sandbox *sb = &s->sandbox;
    if (strcmp(opt, "--dir") == 0)
        s->dir = v;
    else if (strcmp(opt, "--max-line") == 0)
        return parse_int64(v, 256, 1 << 24, max_line) == 0;
    else if (strcmp(opt, "--max-bytes") == 0)
        return parse_int64(v, 4096, INT64_MAX, &s->max_bytes) == 0;
    else if (strcmp(opt, "--cgroup") == 0)
        return add(s->cgroups, &s->ncgroups, SHIM_MAX_CGROUPS, v);
    else if (strcmp(opt, "--kill-cgroup") == 0)
        s->kill_cgroup = v;
    else if (strcmp(opt, "--uid") == 0)
        return *uid = parse_id(v, &sb->uid);
    else if (strcmp(opt, "--gid") == 0)
        return *gid = parse_id(v, &sb->gid);
    else if (strcmp(opt, "--hide") == 0)
        return add(sb->hide, &sb->nhide, SANDBOX_MAX_PATHS, v);
    else if (strcmp(opt, "--bind") == 0)
        return add(sb->bind, &sb->nbind, SANDBOX_MAX_PATHS, v);
    else if (strcmp(opt, "--shm") == 0)
        sb->shm = v;
    else if (strcmp(opt, "--cwd") == 0)
        s->cwd = v;
    else
        return false;
    return true;
}

/* Reads the options before "--"; the index of "--", or -1 on a usage error. */
static int parse_args(int argc, char **argv, struct shim *s, int64_t *max_line)
{
    bool uid = false, gid = false;
    int i = 1;
    for (; i < argc && strcmp(argv[i], "--") != 0; i += 2)
        if (i + 1 >= argc || !parse_option(s, argv[i], argv[i + 1], max_line, &uid, &gid))
            return -1;
    if (uid != gid)
        return -1; /* a sandbox needs both */
    s->sandboxed = uid;
    return s->dir && i + 1 < argc ? i : -1;
}

/* DIR/env: NUL-separated NAME=VALUE entries (at most 1 MiB), as an environ array. */
static char **read_env(const char *dir, struct buf *text)
{
    char path[4096];
    snprintf(path, sizeof(path), "%s/env", dir);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return NULL;
    char chunk[65536];
    ssize_t n;
    while (text->len < (1u << 20) && (n = read(fd, chunk, sizeof(chunk))) > 0)
        buf_append(text, chunk, (size_t)n);
    close(fd);
    size_t count = 0;
    for (size_t i = 0; i < text->len; i++)
        count += text->data[i] == '\0';
    char **env = xcalloc(count + 1, sizeof(char *));
    size_t k = 0;
    for (size_t off = 0; off < text->len && k < count; off += strlen(text->data + off) + 1)
        env[k++] = text->data + off;
    return env;
}

/* The signals the shim forwards or reaps, delivered through a signalfd. */
static int signal_fd(void)
{
    sigset_t mask;
    sigemptyset(&mask);
    sigaddset(&mask, SIGTERM);
    sigaddset(&mask, SIGINT);
    sigaddset(&mask, SIGHUP);
    sigaddset(&mask, SIGCHLD);
    sigprocmask(SIG_BLOCK, &mask, NULL);
    return signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
}

/* The daemon reads the rank's end from status.json, after its log: while the disk is full,
 * wait for room (up to an hour) rather than lose the last lines or the exit status. */
static void report_end(struct shim *s, int status)
{
    int code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    int sig = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
    char json[256];
    snprintf(json, sizeof(json), "{\"exit_code\":%d,\"signal\":%d,\"finished_at\":%lld}\n", code,
             sig, (long long)clock_now_ns());
    for (int tries = 0; tries < 3600; tries++) {
        if (s->out.len == 0) {
            fsync(s->log_fd);
            if (write_atomic(s->dir, "status.json", json) == 0 || !no_room(errno))
                break; /* written, or the rank's directory is gone with its deleted job */
        }
        clock_sleep_ms(1000);
        flush_records(s);
    }
}

int shim_main(int argc, char **argv)
{
    /* Nothing the daemon had open (its database, its sockets) reaches the shim or the rank. */
    close_range(3, ~0u, 0);
    struct shim s = { .log_fd = -1 };
    int64_t max_line = 65536;
    int i = parse_args(argc, argv, &s, &max_line);
    if (i < 0)
        return usage();
    struct buf env_text = BUF_INIT;
    static char *no_env[] = { NULL };
    s.env = read_env(s.dir, &env_text);
    char path[4096];
    snprintf(path, sizeof(path), "%s/log", s.dir);
    s.log_fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    int out[2], err[2];
    if (s.log_fd < 0 || pipe2(out, O_CLOEXEC) < 0 || pipe2(err, O_CLOEXEC) < 0) {
        fprintf(stderr, "trainyard shim: %s: %s\n", path, strerror(errno));
        return 1;
    }
    s.bounded = s.max_bytes > 0 && can_punch(s.log_fd);
    measure_room(&s);
    int sfd = signal_fd();
    for (int k = 0; k < 2; k++)
        linesplit_init(&s.split[k], (size_t)max_line);
    int64_t started = clock_now_ns();
    if (!s.env)
        s.env = no_env;
    s.child = spawn(&s, argv + i + 1, out[1], err[1]);
    close(out[1]);
    close(err[1]);
    if (s.child > 0)
        setpgid(s.child, s.child);
    char json[256];
    snprintf(json, sizeof(json), "{\"pid\":%d,\"shim_pid\":%d,\"uid\":%u,\"started_at\":%lld}\n",
             (int)s.child, (int)getpid(), s.sandboxed ? s.sandbox.uid : (unsigned)getuid(),
             (long long)started);
    write_atomic(s.dir, "rank.json", json);
    int status = s.child > 0 ? supervise(&s, out[0], err[0], sfd) : (127 << 8);
    note_over(&s, true);
    flush_records(&s);
    report_end(&s, status);
    for (int k = 0; k < 2; k++)
        linesplit_release(&s.split[k]);
    buf_release(&s.out);
    if (s.env != no_env)
        free(s.env);
    buf_release(&env_text);
    close(s.log_fd);
    return 0;
}
