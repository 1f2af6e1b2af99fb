/* signals: signalfd-based signal handling. Call signals_open() from main before threads. */
#include "server/daemon/signals.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <unistd.h>

static void daemon_signals(sigset_t *set)
{
    sigemptyset(set);
    sigaddset(set, SIGTERM);
    sigaddset(set, SIGINT);
    sigaddset(set, SIGHUP);
    sigaddset(set, SIGCHLD);
}

int signals_open(struct err *err)
{
    sigset_t set;
    daemon_signals(&set);
    if (sigprocmask(SIG_BLOCK, &set, NULL) < 0)
        return err_set(err, ERR_INTERNAL, "sigprocmask: %s", strerror(errno));
    /* A client that goes away mid-response must not kill the daemon. */
    signal(SIGPIPE, SIG_IGN);
    int fd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
    if (fd < 0)
        return err_set(err, ERR_INTERNAL, "signalfd: %s", strerror(errno));
    return fd;
}

enum signal_event signals_wait(int fd, int timeout_ms)
{
    struct pollfd p = { .fd = fd, .events = POLLIN };
    if (poll(&p, 1, timeout_ms) <= 0)
        return SIGNAL_NONE;
    struct signalfd_siginfo info;
    if (read(fd, &info, sizeof(info)) != (ssize_t)sizeof(info))
        return SIGNAL_NONE;
    switch (info.ssi_signo) {
    case SIGTERM:
    case SIGINT:
        return SIGNAL_STOP;
    case SIGHUP:
        return SIGNAL_RELOAD;
    case SIGCHLD:
        return SIGNAL_CHILD;
    default:
        return SIGNAL_NONE;
    }
}
