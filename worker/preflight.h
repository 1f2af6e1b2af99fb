/*
 * preflight: `trainyard-worker preflight`, the node check before a job spends GPU hours. Runs
 * every check of checks.c, builds one JSON report, prints it, sends it to the daemon, and turns
 * it into the exit status. Also holds the expected figures (GPU models, instance types) and the
 * rule that compares a measurement with them.
 *
 * Report: {"rank","world_size","local_rank","hostname","time","duration_ms","ok",
 *          "summary":{"pass","warn","skip","fail"},
 *          "checks":[{"name","status":"pass|warn|skip|fail","detail", "data":{...}}]}
 */
#ifndef TY_WORKER_PREFLIGHT_H
#define TY_WORKER_PREFLIGHT_H

#include <jansson.h>
#include <stdint.h>

#include "worker/rankenv.h"

enum pf_status { PF_PASS, PF_WARN, PF_SKIP, PF_FAIL };

struct preflight_opts {
    int gpus;                  /* GPUs expected on this node (0: not checked) */
    int efa;                   /* EFA devices expected (0: not checked) */
    int64_t shm_min;           /* bytes /dev/shm must hold */
    int64_t disk_min;          /* free bytes needed under ckpt_dir */
    const char *ckpt_dir;      /* NULL: not checked */
    const char *instance_type; /* for the expected NCCL figure; NULL: unknown */
    int timeout_ms;            /* for anything that waits on other ranks */
    const char *rdzv;          /* rendezvous spec, NULL: from the environment */
    const char *shm_path;      /* "/dev/shm" (tests point it elsewhere) */
};

struct preflight {
    json_t *checks; /* array, owned */
    int counts[4];  /* by pf_status */
};

void preflight_init(struct preflight *p);
void preflight_release(struct preflight *p);
/* Appends a check result. data (may be NULL) is stolen. */
void preflight_add(struct preflight *p, const char *name, enum pf_status st, json_t *data,
                   const char *fmt, ...) __attribute__((format(printf, 5, 6)));
/* The whole report; new reference. */
json_t *preflight_report(const struct preflight *p, const struct rankenv *re, int64_t duration_ns);
const char *pf_status_name(enum pf_status st);

struct gpu_expected {
    const char *model;  /* as shown */
    const char *match;  /* substring of the CUDA device name */
    double mem_gbps;    /* peak device memory bandwidth, GB/s */
    double bf16_tflops; /* dense bf16 tensor-core peak, TFLOP/s */
};
struct net_expected {
    const char *instance; /* EC2 instance type */
    int efa_devices;
    double nccl_busbw_gbps; /* all-reduce bus bandwidth across nodes, GB/s */
};
#define PF_MIN_MEM_FRACTION  0.6 /* of the peak bandwidth a healthy GPU's copy reaches */
#define PF_MIN_GEMM_FRACTION 0.5 /* of the dense bf16 peak a healthy GPU's GEMM reaches */
#define PF_MIN_NCCL_FRACTION 0.5

/* Borrowed table entry, or NULL when the model is not in the table. */
const struct gpu_expected *preflight_gpu_expected(const char *device_name);
const struct net_expected *preflight_net_expected(const char *instance_type);
/* PF_PASS when measured >= min_fraction * expected, PF_FAIL below, PF_WARN when expected <= 0
 * (no figure to compare with). */
enum pf_status preflight_judge(double measured, double expected, double min_fraction);

void preflight_opts_default(struct preflight_opts *o);
/* The subcommand; returns 0 when no check failed, 1 when one did, 2 on bad usage. */
int preflight_main(int argc, char **argv, const struct rankenv *re);

#endif
