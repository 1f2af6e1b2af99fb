/*
 * metrics: turns the progress lines a training program prints into numbers. Two forms:
 *   {'loss': 1.23, 'grad_norm': 0.8, 'learning_rate': 5e-05, 'epoch': 0.1}   (Hugging Face
 *        Trainer; also with double quotes, tensor(0.8) values, and an optional 'step')
 *   step=10 loss=1.23 lr=3e-4                                              (key=value)
 * Non-numeric values are skipped. "step", "global_step", "iter" and "iteration" give the step
 * instead of a metric.
 */
#ifndef TY_WORKER_METRICS_H
#define TY_WORKER_METRICS_H

#include <stddef.h>
#include <stdint.h>

#define METRIC_NAME_MAX 64

struct metric_kv {
    char name[METRIC_NAME_MAX];
    double value;
};

/* Parses one line (len bytes, no newline needed). Returns the number of metrics stored in out
 * (at most max); sets *step to the step named in the line, or -1. */
int metrics_parse_line(const char *line, size_t len, struct metric_kv *out, int max, int64_t *step);

#endif
