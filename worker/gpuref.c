/* gpuref: the CPU reference of the GPU checks. Pure functions, no state. */
#include "worker/gpuref.h"

#include <math.h>
#include <string.h>

uint16_t gpuref_to_bf16(float x)
{
    uint32_t u;
    memcpy(&u, &x, sizeof(u));
    if ((u & 0x7f800000u) == 0x7f800000u && (u & 0x007fffffu))
        return (uint16_t)((u >> 16) | 0x40); /* quiet NaN */
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

float gpuref_from_bf16(uint16_t b)
{
    uint32_t u = (uint32_t)b << 16;
    float x;
    memcpy(&x, &u, sizeof(x));
    return x;
}

void gpuref_gemm_bf16(int m, int n, int k, const uint16_t *a, const uint16_t *b, float *c)
{
    for (int j = 0; j < n; j++) {
        for (int i = 0; i < m; i++) {
            float acc = 0;
            for (int p = 0; p < k; p++)
                acc +=
                    gpuref_from_bf16(a[(size_t)p * m + i]) * gpuref_from_bf16(b[(size_t)j * k + p]);
            c[(size_t)j * m + i] = acc;
        }
    }
}

double gpuref_max_rel_err(const float *x, const float *ref, size_t n)
{
    double worst = 0;
    for (size_t i = 0; i < n; i++) {
        double e = fabs((double)x[i] - ref[i]) / (fabs(ref[i]) + 1.0);
        if (e > worst || isnan(e))
            worst = isnan(e) ? INFINITY : e;
    }
    return worst;
}

long gpuref_verify_fill(const unsigned char *p, size_t len, unsigned char value)
{
    for (size_t i = 0; i < len; i++)
        if (p[i] != value)
            return (long)i;
    return -1;
}

void gpuref_fill_bf16(uint16_t *p, size_t n, uint64_t seed)
{
    uint64_t s = seed ? seed : 1;
    for (size_t i = 0; i < n; i++) {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        p[i] = gpuref_to_bf16((float)((double)(s >> 11) / (double)(1ull << 53) * 2.0 - 1.0));
    }
}
