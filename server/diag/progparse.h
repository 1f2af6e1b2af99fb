/*
 * progparse: recognises the training-progress lines of the frameworks people run and pulls
 * out their numbers:
 *   - Hugging Face Trainer dicts:  {'loss': 1.23, 'grad_norm': 0.5, 'learning_rate': 5e-05,
 *     'epoch': 0.12}  and the final {'train_runtime': ..., 'train_samples_per_second': ...};
 *   - Megatron-LM:  iteration 100/ 500000 | consumed samples: ... | lm loss: 7.1E+00 | ...
 *   - DeepSpeed:  [Rank 0] step=100, skipped=0, lr=[...]  /  epoch=0/micro_step=400/
 *     global_step=100, RunningAvgSamplesPerSec=...  /  steps: 100 loss: 2.3 ... samples/sec: 62
 *   - tqdm:  45%|████▌     | 450/1000 [01:23<01:40,  5.43it/s, loss=2.31]
 *   - key=value:  step=100 loss=2.3 lr=1e-4 tokens_per_sec=12000
 * Metric names are normalised to snake_case ("lm loss" -> lm_loss, "samples/sec" ->
 * samples_per_sec, "RunningAvgSamplesPerSec" -> running_avg_samples_per_sec).
 *
 * Cost: a line that is none of these is rejected after a few memchr() calls. Pure; thread-safe.
 */
#ifndef TY_DIAG_PROGPARSE_H
#define TY_DIAG_PROGPARSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PROGPARSE_NAME_MAX   48
#define PROGPARSE_VALUES_MAX 24

enum progparse_format {
    PROGPARSE_NONE,
    PROGPARSE_HF,
    PROGPARSE_MEGATRON,
    PROGPARSE_DEEPSPEED,
    PROGPARSE_TQDM,
    PROGPARSE_KV,
};

struct progparse_value {
    char name[PROGPARSE_NAME_MAX];
    double value; /* may be NaN or infinite: that is what a NaN-loss check looks for */
};

struct progparse {
    enum progparse_format format;
    int64_t step;       /* -1: the line names none */
    int64_t total;      /* total steps, -1: unknown */
    double remaining_s; /* tqdm's own time-left estimate, -1: none */
    bool final;         /* Hugging Face end-of-training summary */
    size_t n;
    struct progparse_value v[PROGPARSE_VALUES_MAX];
};

/* Returns true and fills out when text is a progress line. */
bool progparse_line(const char *text, size_t len, struct progparse *out);
const char *progparse_format_name(enum progparse_format f);

/* Normalises a metric name into out (PROGPARSE_NAME_MAX); returns its length (0: unusable). */
size_t progparse_norm_name(const char *s, size_t n, char *out);
/* Parses a number (decimal, exponent, nan, inf) at s; sets *used. False if none. */
bool progparse_number(const char *s, size_t n, double *out, size_t *used);

#endif
