/* vexp_avx2.c -- AVX2/FMA twin of vq_exp_shift_ref (see vexp.h); the exp
 * itself is vexp_avx2.h's (vexp_poly.h's, shared with the AVX-512 twin). */
#include <immintrin.h>
#include <math.h>
#include <string.h>

#include "core/vexp.h"
#include "core/vexp_avx2.h"

/* Each x[i] gets the same polynomial wherever it sits (the tail is padded,
 * not sent to expf); the sum runs in 16 lanes as the AVX-512 twin's (two
 * registers of 8), so both return the same bits. */
float vq_exp_shift_avx2(float *x, size_t n, float sc, float m)
{
    __m256 vm = _mm256_set1_ps(m), vs = _mm256_set1_ps(sc), acc[2] = { _mm256_setzero_ps(), _mm256_setzero_ps() };
    size_t i = 0;
    /* four registers per step: their long dependency chains (the reduction,
     * the polynomial) overlap, where one at a time fills the FP scheduler */
    for (; i + 32 <= n; i += 32) {
        __m256 y[4];
        _Pragma("GCC unroll 4") for (int k = 0; k < 4; k++)
            y[k] = vq_exp_neg8(_mm256_sub_ps(_mm256_mul_ps(_mm256_loadu_ps(x + i + 8 * k), vs), vm));
        _Pragma("GCC unroll 4") for (int k = 0; k < 4; k++) {
            _mm256_storeu_ps(x + i + 8 * k, y[k]);
            acc[k % 2] = _mm256_add_ps(acc[k % 2], y[k]);
        }
    }
    for (; i + 8 <= n; i += 8) {
        __m256 y = vq_exp_neg8(_mm256_sub_ps(_mm256_mul_ps(_mm256_loadu_ps(x + i), vs), vm));
        _mm256_storeu_ps(x + i, y);
        acc[(i / 8) % 2] = _mm256_add_ps(acc[(i / 8) % 2], y);
    }
    if (i < n) {
        float t[8];
        for (size_t k = 0; k < 8; k++)
            t[k] = i + k < n ? x[i + k] : -INFINITY;
        __m256 y = vq_exp_neg8(_mm256_sub_ps(_mm256_mul_ps(_mm256_loadu_ps(t), vs), vm));
        _mm256_storeu_ps(t, y);
        memcpy(x + i, t, sizeof(float) * (n - i));
        acc[(i / 8) % 2] = _mm256_add_ps(acc[(i / 8) % 2], y);
    }
    float l[16];
    _mm256_storeu_ps(l, acc[0]);
    _mm256_storeu_ps(l + 8, acc[1]);
    return vq_sum16_lanes(l);
}

float vq_row_max_avx2(const float *x, size_t n)
{
    __m256 acc = _mm256_set1_ps(-INFINITY);
    size_t i = 0;
    for (; i + 8 <= n; i += 8)
        acc = _mm256_max_ps(_mm256_loadu_ps(x + i), acc); /* a NaN of x yields acc */
    float l[8];
    _mm256_storeu_ps(l, acc);
    float m = l[0];
    for (int k = 1; k < 8; k++)
        m = l[k] > m ? l[k] : m;
    for (; i < n; i++)
        m = x[i] > m ? x[i] : m;
    return m;
}
