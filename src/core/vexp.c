/* vexp.c -- scalar reference of vexp.h and its dispatch. */
#include <math.h>

#include "core/cpu.h"
#include "core/vexp.h"

float vq_exp_shift_ref(float *x, size_t n, float sc, float m)
{
    float sum = 0.0f;
    for (size_t i = 0; i < n; i++) {
        const float t = x[i] * sc;
        float w = x[i] == -INFINITY ? 0.0f : expf(t - m);
        x[i] = w;
        sum += w;
    }
    return sum;
}

float vq_exp_shift(float *x, size_t n, float sc, float m)
{
    unsigned f = vq_cpu_features();
    if (f & VQ_CPU_AVX512)
        return vq_exp_shift_avx512(x, n, sc, m);
    if (f & VQ_CPU_AVX2)
        return vq_exp_shift_avx2(x, n, sc, m);
    return vq_exp_shift_ref(x, n, sc, m);
}

float vq_row_max_ref(const float *x, size_t n)
{
    float m = -INFINITY;
    for (size_t i = 0; i < n; i++)
        m = x[i] > m ? x[i] : m;
    return m;
}

float vq_row_max(const float *x, size_t n)
{
    if (vq_cpu_features() & VQ_CPU_AVX512)
        return vq_row_max_avx512(x, n);
    if (vq_cpu_features() & VQ_CPU_AVX2)
        return vq_row_max_avx2(x, n);
    return vq_row_max_ref(x, n);
}
