/*
 * ckpt: the reference trainer's checkpoints. One file per saved step, DIR/ckpt-<step>.bin,
 * written atomically (temporary file, fsync, rename, fsync of the directory), so a crash leaves
 * either the old set or the new file complete. A SHA-256 trailer catches torn or corrupt files;
 * loading takes the newest file that verifies. Native byte order (the header records it).
 */
#ifndef TY_WORKER_CKPT_H
#define TY_WORKER_CKPT_H

#include <stddef.h>
#include <stdint.h>

#include "core/err.h"
#include "worker/model.h"

struct ckpt_meta {
    int64_t step; /* optimizer steps done */
    uint64_t seed;
    struct model_config cfg;
    int32_t batch;
    int32_t world_size;
    unsigned char vocab[256];     /* byte of class i */
    unsigned char corpus_sha[32]; /* of the training text */
    double window_loss;           /* sum of the losses since the last logged step */
    double total_loss;            /* sum of all the losses so far (for train_loss) */
    int32_t window_n;
    int32_t reserved;
};

/* Saves params, Adam moments and meta; then deletes all but the newest `keep` checkpoints. */
int ckpt_save(const char *dir, const struct ckpt_meta *meta, const struct model *m, int keep,
              struct err *err);

/* Loads the newest valid checkpoint of dir. Returns 1 and fills meta, *state (3 * *nparams
 * floats: params, m, v; caller frees) and *path (caller frees); 0 when dir holds none; -1 on an
 * I/O error. Files that fail verification are skipped; *skipped counts them. */
int ckpt_load_latest(const char *dir, struct ckpt_meta *meta, float **state, size_t *nparams,
                     char **path, int *skipped, struct err *err);

#endif
