/*
 * sandbox: a rank's mount namespace and identity (see sandbox.h). Runs in the shim's child
 * between fork and exec: single-threaded, as root, allowed to fail only by returning -1 (the
 * child then reports and exits 127 instead of running the rank unconfined).
 */
#include "server/local/sandbox.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static int fail(struct err *err, const char *what, const char *path)
{
    return err_set(err, ERR_INTERNAL, "sandbox: %s%s%s: %s", what, path ? " " : "",
                   path ? path : "", strerror(errno));
}

static int set_attr(const char *path, uint64_t set, uint64_t clr, unsigned flags)
{
    struct mount_attr a = { .attr_set = set, .attr_clr = clr };
    return mount_setattr(AT_FDCWD, path, flags, &a, sizeof(a));
}

/* Whether path is the root of a mount (a bind target, /dev, /proc), not a plain directory. */
static bool is_mount_point(const char *path)
{
    struct stat here, up;
    char parent[PATH_MAX];
    snprintf(parent, sizeof(parent), "%s/..", path);
    return stat(path, &here) == 0 && stat(parent, &up) == 0 &&
           (here.st_dev != up.st_dev || here.st_ino == up.st_ino);
}

static int mkdirs(const char *path)
{
    char tmp[PATH_MAX];
    snprintf(tmp, sizeof(tmp), "%s", path);
    for (char *p = tmp + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        if (mkdir(tmp, 0711) < 0 && errno != EEXIST)
            return -1;
        *p = '/';
    }
    return mkdir(tmp, 0711) < 0 && errno != EEXIST ? -1 : 0;
}

/* Mounts what fd refers to (opened before anything was hidden) read-write at dest. */
static int bind_fd(int fd, const char *dest, struct err *err)
{
    char src[64];
    snprintf(src, sizeof(src), "/proc/self/fd/%d", fd);
    if (mkdirs(dest) < 0)
        return fail(err, "cannot make the mount point", dest);
    if (mount(src, dest, NULL, MS_BIND, NULL) < 0)
        return fail(err, "cannot bind", dest);
    if (set_attr(dest, MOUNT_ATTR_NOSUID, MOUNT_ATTR_RDONLY, 0) < 0)
        return fail(err, "cannot make writable", dest);
    return 0;
}

/* An empty directory (tmpfs) over a directory, /dev/null over a file; absent paths stay so. The
 * rank may pass through a hidden directory to its own bound ones, not list it (0711). */
static int hide(const char *path, struct err *err)
{
    struct stat sb;
    if (stat(path, &sb) < 0)
        return 0;
    if (S_ISDIR(sb.st_mode)) {
        if (mount("tmpfs", path, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0711,size=1m") < 0)
            return fail(err, "cannot hide", path);
        return 0;
    }
    if (mount("/dev/null", path, NULL, MS_BIND, NULL) < 0 ||
        set_attr(path, MOUNT_ATTR_RDONLY, 0, 0) < 0)
        return fail(err, "cannot hide", path);
    return 0;
}

static int private_tmp(const char *path, struct err *err)
{
    struct stat sb;
    if (stat(path, &sb) < 0 || !S_ISDIR(sb.st_mode))
        return 0;
    if (mount("tmpfs", path, "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777") < 0)
        return fail(err, "cannot mount a private", path);
    return 0;
}

/* The whole tree read-only and nosuid; devices and /proc stay writable (/dev/null, GPUs). */
static int read_only_root(struct err *err)
{
    if (mount("none", "/", "none", MS_REC | MS_SLAVE, NULL) < 0)
        return fail(err, "cannot make mounts private", NULL);
    if (set_attr("/", MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID, 0, AT_RECURSIVE) < 0)
        return fail(err, "cannot make / read-only", NULL);
    if (is_mount_point("/dev") && set_attr("/dev", 0, MOUNT_ATTR_RDONLY, AT_RECURSIVE) < 0)
        return fail(err, "cannot keep /dev writable", NULL);
    if (is_mount_point("/proc") && set_attr("/proc", 0, MOUNT_ATTR_RDONLY, 0) < 0)
        return fail(err, "cannot keep /proc writable", NULL);
    return 0;
}

/* Opens the directories to bind, after the namespace is ours (a mount from another namespace
 * cannot be bound) and before anything hides them. fds[i] for sb->bind[i], then the shm one. */
static int open_sources(const struct sandbox *sb, int *fds, size_t *opened, int *shm_fd,
                        struct err *err)
{
    for (; *opened < sb->nbind; (*opened)++) {
        fds[*opened] = open(sb->bind[*opened], O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (fds[*opened] < 0)
            return fail(err, "cannot open", sb->bind[*opened]);
    }
    if (sb->shm && (*shm_fd = open(sb->shm, O_PATH | O_DIRECTORY | O_CLOEXEC)) < 0)
        return fail(err, "cannot open", sb->shm);
    return 0;
}

static int mounts(const struct sandbox *sb, int *fds, size_t *opened, int *shm_fd, struct err *err)
{
    if (unshare(CLONE_NEWNS) < 0)
        return fail(err, "cannot make a mount namespace", NULL);
    if (read_only_root(err) < 0 || open_sources(sb, fds, opened, shm_fd, err) < 0 ||
        private_tmp("/tmp", err) < 0 || private_tmp("/var/tmp", err) < 0)
        return -1;
    for (size_t i = 0; i < sb->nhide; i++)
        if (hide(sb->hide[i], err) < 0)
            return -1;
    for (size_t i = 0; i < sb->nbind; i++)
        if (bind_fd(fds[i], sb->bind[i], err) < 0)
            return -1;
    if (*shm_fd >= 0)
        return bind_fd(*shm_fd, "/dev/shm", err);
    return private_tmp("/dev/shm", err);
}

static int become(uid_t uid, gid_t gid, struct err *err)
{
    if (setgroups(0, NULL) < 0 || setresgid(gid, gid, gid) < 0 || setresuid(uid, uid, uid) < 0)
        return fail(err, "cannot change identity", NULL);
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
        return fail(err, "cannot set no_new_privs", NULL);
    if (setuid(0) == 0 || geteuid() == 0) { /* the identity must not be undoable */
        errno = EPERM;
        return fail(err, "root could be regained", NULL);
    }
    return 0;
}

int sandbox_enter(const struct sandbox *sb, const char *cwd, struct err *err)
{
    int fds[SANDBOX_MAX_PATHS], shm_fd = -1, rc = -1;
    size_t opened = 0;
    if (mounts(sb, fds, &opened, &shm_fd, err) < 0 || become(sb->uid, sb->gid, err) < 0)
        goto out;
    /* The daemon's directory, unless the rank may not enter it or it is hidden: then "/". */
    if ((!cwd || chdir(cwd) < 0) && chdir("/") < 0) {
        fail(err, "cannot change directory to", "/");
        goto out;
    }
    rc = 0;
out:
    for (size_t i = 0; i < opened; i++)
        close(fds[i]);
    if (shm_fd >= 0)
        close(shm_fd);
    return rc;
}

int sandbox_probe(struct err *err)
{
    if (geteuid() != 0)
        return err_set(err, ERR_UNAVAILABLE,
                       "the daemon is not root, so ranks cannot run as an identity of their own");
    int pipefd[2];
    if (pipe2(pipefd, O_CLOEXEC) < 0)
        return fail(err, "cannot make a pipe", NULL);
    pid_t pid = fork();
    if (pid == 0) {
        close(pipefd[0]);
        struct err e;
        err_init(&e);
        struct sandbox sb = { .uid = 65534, .gid = 65534 };
        int ok = sandbox_enter(&sb, "/", &e) == 0 && access("/", R_OK) == 0;
        if (!ok && write(pipefd[1], e.msg, strlen(e.msg)) < 0)
            _exit(2);
        _exit(ok ? 0 : 1);
    }
    close(pipefd[1]);
    char msg[256] = "";
    ssize_t n = pid > 0 ? read(pipefd[0], msg, sizeof(msg) - 1) : -1;
    close(pipefd[0]);
    int status = 0;
    if (pid < 0 || waitpid(pid, &status, 0) < 0)
        return fail(err, "cannot fork", NULL);
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
        return 0;
    msg[n > 0 ? n : 0] = '\0';
    return err_set(err, ERR_UNAVAILABLE, "%s", msg[0] ? msg : "the sandbox test process failed");
}
