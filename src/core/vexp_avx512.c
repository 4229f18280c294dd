/* vexp_avx512.c -- AVX-512 twins of vexp.h (vexp_poly.h's exp, as the
 * AVX2 twin's, on 16 lanes; the same sums as the AVX2 twin, see vexp.h). Compiled with
 * -mavx512f/bw/vl/dq; reached through vq_exp_shift / vq_row_max only. */
#include <immintrin.h>
#include <math.h>

#include "core/vexp.h"
#include "core/vexp_avx512.h"

float vq_exp_shift_avx512(float *x, size_t n, float sc, float m)
{
    __m512 vm = _mm512_set1_ps(m), vs = _mm512_set1_ps(sc), acc = _mm512_setzero_ps();
    size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        __m512 y = vq_exp_neg16(_mm512_sub_ps(_mm512_mul_ps(_mm512_loadu_ps(x + i), vs), vm));
        _mm512_storeu_ps(x + i, y);
        acc = _mm512_add_ps(acc, y);
    }
    if (i < n) {
        __mmask16 k = (__mmask16)((1u << (n - i)) - 1);
        __m512 t = _mm512_mask_loadu_ps(_mm512_set1_ps(-INFINITY), k, x + i);
        __m512 y = vq_exp_neg16(_mm512_sub_ps(_mm512_mul_ps(t, vs), vm));
        _mm512_mask_storeu_ps(x + i, k, y);
        acc = _mm512_add_ps(acc, y);
    }
    float l[16];
    _mm512_storeu_ps(l, acc);
    return vq_sum16_lanes(l);
}

float vq_row_max_avx512(const float *x, size_t n)
{
    /* four running maxima (one chain of VMAXPS had bound the loop by its
     * latency; the maximum is exact in any order) */
    __m512 a0 = _mm512_set1_ps(-INFINITY), a1 = a0, a2 = a0, a3 = a0;
    size_t i = 0;
    for (; i + 64 <= n; i += 64) {
        a0 = _mm512_max_ps(_mm512_loadu_ps(x + i), a0);
        a1 = _mm512_max_ps(_mm512_loadu_ps(x + i + 16), a1);
        a2 = _mm512_max_ps(_mm512_loadu_ps(x + i + 32), a2);
        a3 = _mm512_max_ps(_mm512_loadu_ps(x + i + 48), a3);
    }
    __m512 acc = _mm512_max_ps(_mm512_max_ps(a0, a1), _mm512_max_ps(a2, a3));
    for (; i + 16 <= n; i += 16)
        acc = _mm512_max_ps(_mm512_loadu_ps(x + i), acc);
    if (i < n) {
        __mmask16 k = (__mmask16)((1u << (n - i)) - 1);
        acc = _mm512_max_ps(_mm512_mask_loadu_ps(_mm512_set1_ps(-INFINITY), k, x + i), acc);
    }
    return _mm512_reduce_max_ps(acc);
}
