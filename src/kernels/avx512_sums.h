/* avx512_sums.h -- horizontal sums shared by the AVX-512 kernels (include
 * only from files compiled with -mavx512f/dq). Every lane is reduced by the
 * same tree, so a sum does not depend on its place in the result. */
#ifndef VQ_KERNELS_AVX512_SUMS_H
#define VQ_KERNELS_AVX512_SUMS_H

#include <immintrin.h>
#include <stddef.h>

#include "kernels/store4.h"

/* the two 256-bit halves added */
static inline __m256 vq_fold512(__m512 a)
{
    return _mm256_add_ps(_mm512_castps512_ps256(a), _mm512_extractf32x8_ps(a, 1));
}

/* [sum(a0), sum(a1), sum(a2), sum(a3)] */
static inline __m128 vq_hsum4x512(__m512 a0, __m512 a1, __m512 a2, __m512 a3)
{
    __m256 t = _mm256_hadd_ps(_mm256_hadd_ps(vq_fold512(a0), vq_fold512(a1)),
                              _mm256_hadd_ps(vq_fold512(a2), vq_fold512(a3)));
    return _mm_add_ps(_mm256_castps256_ps128(t), _mm256_extractf128_ps(t, 1));
}

/* [fold(a) | fold(b)]: the two vectors' halves added in one register */
static inline __m512 vq_fold2x512(__m512 a, __m512 b)
{
    return _mm512_add_ps(_mm512_shuffle_f32x4(a, b, 0x44), _mm512_shuffle_f32x4(a, b, 0xEE));
}

/* in each 128-bit lane L: x0 + x1, x2 + x3, y0 + y1, y2 + y3 (what
 * _mm256_hadd_ps does per lane, four lanes at a time) */
static inline __m512 vq_pairadd512(__m512 x, __m512 y)
{
    return _mm512_add_ps(_mm512_shuffle_ps(x, y, 0x88), _mm512_shuffle_ps(x, y, 0xDD));
}

/* [sum(a0), ..., sum(a7)] by hsum4x512's tree for every vector (fold, then
 * pairs of neighbours, then pairs of pairs, then the two halves: the same
 * additions of the same operands, so the same bits), computed in 512-bit
 * registers: fold2x512 puts two folded vectors in one register, two rounds
 * of pairadd512 leave vector k's two quarter sums in lanes 0/1 (k even) or
 * 2/3 (k odd), element k / 2, and one add and one permute finish. */
static inline __m256 vq_hsum8x512(__m512 a0, __m512 a1, __m512 a2, __m512 a3, __m512 a4, __m512 a5, __m512 a6,
                                  __m512 a7)
{
    const __m512 h0 = vq_pairadd512(vq_fold2x512(a0, a1), vq_fold2x512(a2, a3));
    const __m512 h1 = vq_pairadd512(vq_fold2x512(a4, a5), vq_fold2x512(a6, a7));
    const __m512 k = vq_pairadd512(h0, h1);
    /* lanes 0 + 1: sums 0 2 4 6; lanes 2 + 3: sums 1 3 5 7 */
    const __m512 y = _mm512_add_ps(_mm512_shuffle_f32x4(k, k, 0x88), _mm512_shuffle_f32x4(k, k, 0xDD));
    return _mm256_permutevar8x32_ps(_mm512_castps512_ps256(y), _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
}


/* the first min(8, nt - i) lanes of r into s[i..] (a partial group as
 * two halves) */
static inline void vq_store8_upto(float *s, size_t i, size_t nt, __m256 r)
{
    if (i + 8 <= nt) {
        _mm256_storeu_ps(s + i, r);
        return;
    }
    vq_store4_upto(s, i, nt, _mm256_castps256_ps128(r));
    if (i + 4 < nt)
        vq_store4_upto(s, i + 4, nt, _mm256_extractf128_ps(r, 1));
}

#endif
