/*
 * logmix: a realistic mix of training-job log lines for the benchmarks (bench_diag,
 * bench_ingest): mostly NCCL INFO chatter and ordinary framework logging, ~12% progress lines
 * of every supported format, torchrun-prefixed lines, and rare warnings and errors; plus two
 * adversarial mixes. Deterministic (a fixed xorshift seed). Header-only: each benchmark is one
 * program.
 */
#ifndef TY_BENCH_LOGMIX_H
#define TY_BENCH_LOGMIX_H

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "core/xalloc.h"

#define NRANKS 8

struct corpus {
    char *arena;
    size_t used, cap;
    size_t *off, *len;
    int *rank;
    size_t n;
};

static unsigned long long rng = 88172645463325252ull;

static unsigned rnd(unsigned n)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (unsigned)(rng % n);
}

static void add(struct corpus *c, int rank, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void add(struct corpus *c, int rank, const char *fmt, ...)
{
    if (c->used + 1024 > c->cap) {
        c->cap = c->cap ? c->cap * 2 : 1 << 20;
        c->arena = xrealloc(c->arena, c->cap);
    }
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(c->arena + c->used, 1024, fmt, ap);
    va_end(ap);
    if (k > 1023)
        k = 1023;
    c->off[c->n] = c->used;
    c->len[c->n] = (size_t)k;
    c->rank[c->n] = rank;
    c->used += (size_t)k;
    c->n++;
}

static void nccl_info(struct corpus *c, int r, unsigned i)
{
    switch (rnd(6)) {
    case 0:
        add(c, r,
            "ip-10-0-1-%d:%d:%d [%d] NCCL INFO Channel %02u/0 : %d[%d] -> %d[%d] via "
            "P2P/CUMEM/read",
            6 + r / 4, 3100 + r, 3300 + r, r % 4, i % 32, r, r % 4, (r + 1) % 8, (r + 1) % 4);
        break;
    case 1:
        add(c, r,
            "ip-10-0-1-%d:%d:%d [%d] NCCL INFO Channel %02u/0 : %d[%d] -> %d[%d] [send] "
            "via NET/AWS Libfabric/%u/GDRDMA",
            6 + r / 4, 3100 + r, 3300 + r, r % 4, i % 32, r, r % 4, (r + 4) % 8, r % 4, i % 4);
        break;
    case 2:
        add(c, r,
            "ip-10-0-1-%d:%d:%d [%d] NCCL INFO comm 0x55%06x rank %d nRanks 8 nNodes 2 "
            "localRanks 4 localRank %d MNNVL 0",
            6 + r / 4, 3100 + r, 3300 + r, r % 4, i & 0xffffff, r, r % 4);
        break;
    case 3:
        add(c, r, "ip-10-0-1-%d:%d:%d [%d] NCCL INFO Connected all rings, use ring PXN 0 GDR 1",
            6 + r / 4, 3100 + r, 3300 + r, r % 4);
        break;
    case 4:
        add(c, r,
            "ip-10-0-1-%d:%d:%d [%d] NCCL INFO threadThresholds 8/8/64 | 64/8/64 | 512 | "
            "512",
            6 + r / 4, 3100 + r, 3300 + r, r % 4);
        break;
    default:
        add(c, r,
            "ip-10-0-1-%d:%d:%d [%d] NCCL INFO ncclCommInitRank comm 0x55%06x rank %d "
            "nranks 8 cudaDev %d nvmlDev %d busId %d0000 commId 0x%08x%08x - Init COMPLETE",
            6 + r / 4, 3100 + r, 3300 + r, r % 4, i & 0xffffff, r, r % 4, r % 4, r + 1, i, i * 7u);
        break;
    }
}

static void progress_line(struct corpus *c, int r, unsigned i)
{
    switch (rnd(5)) {
    case 0:
        add(c, r, "{'loss': %.4f, 'grad_norm': %.3f, 'learning_rate': %.2e, 'epoch': %.2f}",
            3.0 - i * 1e-6, 1.0 + rnd(100) / 100.0, 5e-5, i * 1e-6);
        break;
    case 1:
        add(c, r, " %u%%|██▌       | %u/100000 [%02u:%02u<%02u:%02u,  %u.%02uit/s]", i % 100,
            i % 100000, i % 60, i % 60, (i / 7) % 60, i % 60, 5, i % 100);
        break;
    case 2:
        add(c, r, "step=%u loss=%.3f lr=1e-4 tokens_per_sec=%u step_time=0.%03u", i,
            2.0 + rnd(1000) / 1000.0, 12000 + rnd(1000), rnd(1000));
        break;
    case 3:
        add(c, r,
            " [2024-05-01 12:00:00] iteration %8u/  500000 | consumed samples: %12u | "
            "elapsed time per iteration (ms): %u.%u | learning rate: 1.500000E-04 | global "
            "batch size:   512 | lm loss: 7.%06uE+00 | loss scale: 1.0 | grad norm: 1.%03u "
            "| number of skipped iterations:   0 | number of nan iterations:   0 |",
            i, i * 512, 1200 + rnd(100), rnd(10), rnd(1000000), rnd(1000));
        break;
    default:
        add(c, r,
            "[2024-05-01 12:00:00,123] [INFO] [logging.py:96:log_dist] [Rank 0] step=%u, "
            "skipped=0, lr=[0.0001, 0.0001], mom=[(0.9, 0.999), (0.9, 0.999)]",
            i);
        break;
    }
}

static void ordinary(struct corpus *c, int r, unsigned i)
{
    switch (rnd(6)) {
    case 0:
        add(c, r,
            "[2024-05-01 12:%02u:%02u,%03u] [INFO] [engine.py:%u:_configure_optimizer] "
            "Using client Optimizer as basic optimizer",
            i % 60, (i / 60) % 60, i % 1000, 1000 + i % 300);
        break;
    case 1:
        add(c, r, "INFO:root:processed %u samples from shard %u of /data/tokenized/train-%05u.bin",
            i * 64, i % 512, i % 4096);
        break;
    case 2:
        add(c, r,
            "/opt/venv/lib/python3.11/site-packages/torch/utils/checkpoint.py:464: "
            "UserWarning: torch.utils.checkpoint: the use_reentrant parameter should be "
            "passed explicitly.");
        break;
    case 3:
        add(c, r,
            "[rank%d]:[W501 12:00:%02u.%06u %d ProcessGroupNCCL.cpp:4115] [PG 0 Rank %d]  "
            "using GPU %d to perform barrier as devices used by this process are currently "
            "unknown.",
            r, i % 60, i % 1000000, 3100 + r, r, r % 4);
        break;
    case 4:
        add(c, r, "batch %u: tokens=%u padding=%.2f%% max_len=%u min_len=%u shards=[%u, %u, %u]", i,
            4096 * 8, rnd(1000) / 100.0, 4096, 100 + rnd(900), i % 7, i % 11, i % 13);
        break;
    default:
        add(c, r, "Saving model checkpoint to /checkpoints/run-42/step_%u", i);
        break;
    }
}

static void rare(struct corpus *c, int r)
{
    switch (rnd(4)) {
    case 0:
        add(c, r,
            "ip-10-0-1-7:3205:3300 [0] NCCL WARN NET/Plugin: Failed to find "
            "ncclNetPlugin_v8 symbol.");
        break;
    case 1:
        add(c, r, "Traceback (most recent call last):");
        add(c, r, "  File \"/workspace/eval.py\", line 12, in <module>");
        add(c, r, "    score = metric(x)");
        add(c, r, "ValueError: could not convert string to float: 'n/a'");
        break;
    case 2:
        add(c, r,
            "W0501 12:00:02.200000 140211 torch/distributed/elastic/multiprocessing/"
            "api.py:851] Sending process 4321 closing signal SIGTERM");
        break;
    default:
        add(c, r, "RuntimeError: DataLoader worker (pid 5125) is killed by signal: Killed.");
        break;
    }
}

static void build(struct corpus *c, size_t n, int mix)
{
    memset(c, 0, sizeof(*c));
    c->off = xmalloc((n + 8) * sizeof(size_t));
    c->len = xmalloc((n + 8) * sizeof(size_t));
    c->rank = xmalloc((n + 8) * sizeof(int));
    for (unsigned i = 0; c->n < n; i++) {
        int r = (int)rnd(NRANKS);
        unsigned p = rnd(10000);
        if (mix == 1) {
            nccl_info(c, r, i);
        } else if (mix == 2) {
            add(c, r,
                "ip-10-0-1-%d:%d:%d [%d] NCCL WARN NET/OFI Request 0x7f%04x completed with "
                "error. RC: 103. Error: 4353 (Connection closed by remote peer)",
                6 + r / 4, 3100 + r, 3300 + r, r % 4, i & 0xffff);
        } else if (p < 5500) {
            nccl_info(c, r, i);
        } else if (p < 6700) {
            progress_line(c, r, i);
        } else if (p < 9995) {
            ordinary(c, r, i);
        } else if (c->n + 4 < n) {
            rare(c, r);
        }
    }
}

static void corpus_free(struct corpus *c)
{
    free(c->arena);
    free(c->off);
    free(c->len);
    free(c->rank);
}

#endif
