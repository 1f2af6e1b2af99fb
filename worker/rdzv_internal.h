/* rdzv_internal: the backend interface behind rdzv.h. Only rdzv*.c include it. */
#ifndef TY_WORKER_RDZV_INTERNAL_H
#define TY_WORKER_RDZV_INTERNAL_H

#include "worker/rdzv.h"

struct rdzv_ops {
    int (*set)(struct rdzv *r, const char *key, const char *value, struct err *err);
    char *(*get)(struct rdzv *r, const char *key, int wait_ms, struct err *err);
    int (*barrier)(struct rdzv *r, const char *name, int rank, int world, int timeout_ms,
                   struct err *err);
    void (*close)(struct rdzv *r); /* frees the backend, not r->desc */
};

/* Every backend's struct starts with this. */
struct rdzv {
    const struct rdzv_ops *ops;
    char *desc;
};

struct rdzv *rdzv_http_open(const char *base_url, const char *token, const char *job_id,
                            struct err *err);

/* Appends "[2, 3]" for the ranks in [0, world) whose flag in arrived[] is 0. */
void rdzv_format_missing(struct buf *out, const unsigned char *arrived, int world);

#endif
