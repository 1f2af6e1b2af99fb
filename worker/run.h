/*
 * run: `trainyard-worker run -- CMD...`, the supervisor of the training command.
 * The command runs as a child in its own process group with the worker's stdin, and its
 * stdout/stderr pass through byte for byte while their lines are parsed for metrics (metrics.h)
 * and reported (reporter.h). SIGTERM, SIGINT, SIGHUP and SIGQUIT are forwarded to the group and
 * start the grace period, after which the group gets SIGKILL (what Kubernetes does on
 * preemption); SIGUSR1/SIGUSR2 are forwarded as they are. As PID 1 it also reaps orphans.
 */
#ifndef TY_WORKER_RUN_H
#define TY_WORKER_RUN_H

#include <stdint.h>

#include "server/core/err.h"
#include "worker/rankenv.h"
#include "worker/reporter.h"

struct run_opts {
    char **argv;               /* NULL-terminated command */
    int64_t grace_ms;          /* from the first terminating signal to SIGKILL */
    struct reporter *reporter; /* may be NULL */
};

/* Runs the command to its end. Returns the status for main(): the command's exit code, 128+N
 * when it died of signal N, 127 when it could not be started (err says why). */
int run_child(const struct run_opts *o, struct err *err);

/* The subcommand: flags, environment, reporter; returns the exit status. */
int run_main(int argc, char **argv, const struct rankenv *re);

#endif
