/*
 * gpuref: plain CPU versions of what the GPU checks run on the device, so that the device's
 * answers can be checked (as llm.c does): bf16 conversion, a bf16 GEMM with float accumulation,
 * and the fill pattern of the memory test. No CUDA here; unit-tested on any machine.
 */
#ifndef TY_WORKER_GPUREF_H
#define TY_WORKER_GPUREF_H

#include <stddef.h>
#include <stdint.h>

/* float -> bf16 bits, round to nearest even (NaN stays NaN). */
uint16_t gpuref_to_bf16(float x);
float gpuref_from_bf16(uint16_t b);

/* C (m x n, float) = A (m x k) * B (k x n), all column-major like cuBLAS, A and B in bf16. */
void gpuref_gemm_bf16(int m, int n, int k, const uint16_t *a, const uint16_t *b, float *c);
/* Largest |x - ref| / (|ref| + 1) over n elements. */
double gpuref_max_rel_err(const float *x, const float *ref, size_t n);

/* The memory test's pattern: byte i of a buffer filled by cudaMemset(value) is value; the check
 * reads back a sample and returns the offset of the first wrong byte, or -1. */
long gpuref_verify_fill(const unsigned char *p, size_t len, unsigned char value);

/* Deterministic inputs in [-1, 1) for the GEMM check. */
void gpuref_fill_bf16(uint16_t *p, size_t n, uint64_t seed);

#endif
