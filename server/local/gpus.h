/*
 * gpus: the local machine's NVIDIA GPUs, the local executor's unit of capacity beside rank
 * slots. Found through NVML (libnvidia-ml.so.1, the library nvidia-smi uses), loaded with
 * dlopen() at start so that the daemon builds and runs on machines without a driver: there it
 * finds no GPUs and CPU jobs run as before. --local-gpus restricts the set (or says "none"); a
 * JSON file given with --test-gpus stands in for NVML in tests.
 *
 * A rank is given its GPUs by UUID in CUDA_VISIBLE_DEVICES: NVML counts GPUs in PCI bus order,
 * CUDA by default fastest first, and a UUID means the same device to both.
 *
 * gpus_discover runs once at start; the list is read-only afterwards.
 */
#ifndef TY_GPUS_H
#define TY_GPUS_H

#include <stddef.h>
#include <stdint.h>

#include "core/err.h"

#define GPUS_MAX 64

struct gpu {
    int index; /* NVML's (PCI bus order), as nvidia-smi numbers them */
    char uuid[96];
    char name[96];
    int64_t memory_bytes;
};

struct gpus {
    struct gpu gpu[GPUS_MAX];
    size_t n;
    char source[64]; /* "nvml", "none", "nvml unavailable: ...", "test file" */
};

/* Fills g. restrict_to: NULL or "" or "auto" (every GPU NVML finds), "none", or a comma list of
 * NVML indices or UUIDs to use. test_file: NULL, or a JSON array of
 * {"index","uuid","name","memory_bytes"} read instead of NVML. -1 with err for a restriction
 * naming a GPU that is not there, or an unreadable test file; no GPUs and no driver is not an
 * error. */
int gpus_discover(struct gpus *g, const char *restrict_to, const char *test_file, struct err *err);

#endif
