/*
 * run: `trainyard-worker run -- CMD...`, the supervisor of the training command.
 * The command runs as a child in its own process group with the worker's stdin, and its
 * stdout/stderr pass through byte for byte while their lines are parsed for metrics (metrics.h)
 * and reported (reporter.h). SIGTERM, SIGINT, SIGHUP and SIGQUIT are forwarded to the group and
 * start the grace period, after which the group gets SIGKILL (what Kubernetes does on
 * preemption); SIGUSR1/SIGUSR2 are forwarded as they are. As PID 1 it also reaps orphans.
 *
 * With --preflight (or TRAINYARD_PREFLIGHT=1) `trainyard-worker preflight` runs first, as a
 * supervised child of its own (so the CUDA context and libraries it loads die with it), and a
 * failed check stops there: the command is not started and run exits with the preflight's
 * status, the report printed and sent to the daemon by the preflight itself.
 */
#ifndef TY_WORKER_RUN_H
#define TY_WORKER_RUN_H

#include <stdint.h>

#include "core/err.h"
#include "worker/rankenv.h"
#include "worker/reporter.h"

struct run_opts {
    char **argv;               /* NULL-terminated command */
    char **envp;               /* its environment; NULL: the worker's */
    const char *name;          /* in messages; NULL: argv[0] */
    int64_t grace_ms;          /* from the first terminating signal to SIGKILL */
    struct reporter *reporter; /* may be NULL */
};

/* Runs the command to its end. Returns the status for main(): the command's exit code, 128+N
 * when it died of signal N, 127 when it could not be started (err says why). */
int run_child(const struct run_opts *o, struct err *err);

/* Runs `exe preflight` under run_child(). When the command is a launcher that starts the ranks
 * itself (torchrun in a PyTorchJob pod: PET_NNODES is a number and LOCAL_RANK is unset) the
 * preflight is the node's: RANK=PET_NODE_RANK (else RANK), WORLD_SIZE=PET_NNODES, and it tests
 * all the node's GPUs; otherwise it is the rank's own. Returns 0 when no check failed, else the
 * status to exit with (1 a check failed, 2 bad settings, 128+N stopped by signal N). */
int run_preflight(const char *exe, int64_t grace_ms, struct err *err);

/* The subcommand: flags, environment, reporter; returns the exit status. */
int run_main(int argc, char **argv, const struct rankenv *re);

#endif
