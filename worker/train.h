/*
 * train: `trainyard-worker train`, the reference trainer. Trains model.h on a text file with
 * AdamW, logs Hugging Face Trainer lines on stdout, checkpoints and resumes (see ckpt.h), and
 * with WORLD_SIZE > 1 averages gradients over libfabric (fabric.h) so all ranks stay identical.
 */
#ifndef TY_WORKER_TRAIN_H
#define TY_WORKER_TRAIN_H

#include <stdint.h>
#include <stdio.h>

#include "core/err.h"
#include "worker/rankenv.h"

struct train_opts {
    const char *data;     /* corpus; NULL: TRAINYARD_DATA or the shipped examples/corpus.txt */
    long steps;           /* optimizer steps in all (a resumed run stops at the same step) */
    const char *ckpt_dir; /* NULL: no checkpoints */
    long ckpt_every;      /* steps between checkpoints */
    int keep;             /* checkpoints kept */
    uint64_t seed;
    int batch; /* examples per rank and step */
    int context, embed, hidden;
    float lr;         /* peak learning rate (warmup, then cosine to a tenth) */
    int log_every;    /* steps between log lines */
    int timeout_ms;   /* rendezvous and fabric timeout */
    const char *rdzv; /* rendezvous spec, NULL: from the environment */
};

/* Defaults for every field. */
void train_opts_default(struct train_opts *o);

/* Runs the training; log lines go to out, a tqdm-like progress bar to progress (may be NULL).
 * Returns the exit status for main: 0 when done, 128+signal when stopped by SIGTERM/SIGINT
 * after saving a checkpoint; -1 with err on failure. */
int train_run(const struct train_opts *o, const struct rankenv *re, FILE *out, FILE *progress,
              struct err *err);

/* Asks a running train_run() to stop after the current step (signal-safe). */
void train_request_stop(int signo);

#endif
