/*
 * trainyard-worker: the agent inside every training container (docs/worker.md).
 *   preflight [--json]     check the node (GPUs, NCCL, fabric, container) and report
 *   run -- CMD...          run the training command, forward signals, report metrics
 *                          (--preflight: the node check first; a failed check stops there)
 *   train [...]            the reference trainer
 * Parses flags, sets up signals and stdio, calls the module that does the work; the only
 * file that calls exit().
 */
#include <getopt.h>
#include <stdint.h>
#include <signal.h>
#include <stdlib.h>

#include "core/parse.h"
#include "worker/preflight.h"
#include "worker/rankenv.h"
#include "worker/run.h"
#include "worker/train.h"

static const char usage[] =
    "usage: trainyard-worker preflight [--json] [--gpus N] [--efa N] [--shm-min BYTES]\n"
    "                                  [--checkpoint-dir DIR] [--disk-min BYTES] [--timeout S]\n"
    "       trainyard-worker run [--preflight] [--grace S] [--heartbeat S] -- CMD [ARG...]\n"
    "       trainyard-worker train [--data FILE] [--steps N] [--checkpoint-dir DIR]\n"
    "                              [--checkpoint-every N] [--seed S] [--batch N] [--lr X]\n"
    "                              [--context N] [--embed N] [--hidden N] [--log-every N]\n"
    "       trainyard-worker version\n"
    "Environment and exit codes: docs/worker.md\n";

static int bad_usage(const char *fmt, const char *arg)
{
    fprintf(stderr, "trainyard-worker: ");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, "\n%s", usage);
    return 2;
}

static int fail(struct err *err)
{
    fprintf(stderr, "trainyard-worker: %s\n", err->msg);
    err_release(err);
    return 1;
}

static void on_stop(int signo)
{
    train_request_stop(signo);
}

static const struct option train_flags[] = { { "data", 1, 0, 'd' },
                                             { "steps", 1, 0, 's' },
                                             { "checkpoint-dir", 1, 0, 'c' },
                                             { "checkpoint-every", 1, 0, 'e' },
                                             { "seed", 1, 0, 'S' },
                                             { "batch", 1, 0, 'b' },
                                             { "lr", 1, 0, 'l' },
                                             { "context", 1, 0, 'C' },
                                             { "embed", 1, 0, 'E' },
                                             { "hidden", 1, 0, 'H' },
                                             { "log-every", 1, 0, 'L' },
                                             { "timeout", 1, 0, 't' },
                                             { "keep", 1, 0, 'k' },
                                             { 0, 0, 0, 0 } };

/* Applies one train flag; returns 0, or 2 (bad usage, message printed). */
static int train_flag(struct train_opts *o, int c, const char *arg)
{
    const char *name = "";
    for (const struct option *p = train_flags; p->name; p++)
        if (p->val == c)
            name = p->name;
    if (c == 'd' || c == 'c') {
        *(c == 'd' ? &o->data : &o->ckpt_dir) = arg;
        return 0;
    }
    if (c == 'l') {
        char *end;
        o->lr = strtof(arg, &end);
        return *end || !(o->lr > 0 && o->lr < 10) ? bad_usage("bad value for --%s", name) : 0;
    }
    int64_t v;
    if (c == '?' || parse_int64(arg, 0, c == 'S' ? INT64_MAX : 100000000, &v) < 0)
        return c == '?' ? bad_usage("unknown option%s", "") : bad_usage("bad value for --%s", name);
    switch (c) {
    case 's':
        o->steps = (long)v;
        break;
    case 'e':
        o->ckpt_every = (long)v;
        break;
    case 'S':
        o->seed = (uint64_t)v;
        break;
    case 'b':
        o->batch = (int)v;
        break;
    case 'C':
        o->context = (int)v;
        break;
    case 'E':
        o->embed = (int)v;
        break;
    case 'H':
        o->hidden = (int)v;
        break;
    case 'L':
        o->log_every = (int)v;
        break;
    case 't':
        o->timeout_ms = (int)(v * 1000);
        break;
    case 'k':
        o->keep = (int)v;
        break;
    }
    return 0;
}

static int cmd_train(int argc, char **argv, const struct rankenv *re)
{
    struct train_opts o;
    train_opts_default(&o);
    o.ckpt_dir = getenv("TRAINYARD_CHECKPOINT_DIR");
    if (o.ckpt_dir && !*o.ckpt_dir)
        o.ckpt_dir = NULL;
    int c;
    while ((c = getopt_long(argc, argv, "", train_flags, NULL)) != -1)
        if (train_flag(&o, c, optarg))
            return 2;
    if (optind < argc)
        return bad_usage("unexpected argument '%s'", argv[optind]);
    struct sigaction sa = { .sa_handler = on_stop };
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    struct err err;
    err_init(&err);
    int rc = train_run(&o, re, stdout, stderr, &err);
    return rc < 0 ? fail(&err) : rc;
}

int main(int argc, char **argv)
{
    struct err err;
    struct rankenv re;
    err_init(&err);
    setvbuf(stdout, NULL, _IOLBF, 0);
    signal(SIGPIPE, SIG_IGN);
    if (argc < 2)
        return bad_usage("no command%s", "");
    const char *cmd = argv[1];
    if (strcmp(cmd, "version") == 0 || strcmp(cmd, "--version") == 0) {
        puts("trainyard-worker " TY_VERSION);
        return 0;
    }
    if (strcmp(cmd, "help") == 0 || strcmp(cmd, "--help") == 0) {
        fputs(usage, stdout);
        return 0;
    }
    if (rankenv_load(&re, &err) < 0)
        return fail(&err);
    if (strcmp(cmd, "train") == 0)
        return cmd_train(argc - 1, argv + 1, &re);
    if (strcmp(cmd, "run") == 0)
        return run_main(argc - 1, argv + 1, &re);
    if (strcmp(cmd, "preflight") == 0)
        return preflight_main(argc - 1, argv + 1, &re);
    return bad_usage("unknown command '%s'", cmd);
}
