/*
 * signals: the daemon's signals as events. main() calls signals_open() before starting any
 * thread, so every thread inherits the blocked mask and SIGTERM/SIGINT/SIGHUP/SIGCHLD are only
 * ever read from the signalfd, never delivered asynchronously.
 */
#ifndef TY_SIGNALS_H
#define TY_SIGNALS_H

#include "core/err.h"

enum signal_event { SIGNAL_NONE, SIGNAL_STOP, SIGNAL_RELOAD, SIGNAL_CHILD };

/* Blocks the signals and returns a signalfd (caller closes), or -1 with err. */
int signals_open(struct err *err);
/* Waits up to timeout_ms for a signal on fd; returns what arrived or SIGNAL_NONE. */
enum signal_event signals_wait(int fd, int timeout_ms);

#endif
