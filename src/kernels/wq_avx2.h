/* wq_avx2.h -- the int8 weights of one block of rows for the AVX2 twins
 * of the int8-weight sums (kivi_qaxpy_avx2.c, qaxpy8_avx2.c; contracts in
 * kernels/kivi_qaxpy.h and kernels/qaxpy.h vq_qaxpy8), with the
 * reference's rounding. Only for *_avx2.c files (AVX2 + FMA + F16C). */
#ifndef VQ_KERNELS_WQ_AVX2_H
#define VQ_KERNELS_WQ_AVX2_H

#include <float.h>
#include <immintrin.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "kernels/kivi_qaxpy.h"

/* W[j][k] = the weights of rows 8k .. 8k+7 of the block of m rows at row b
 * of weight row j0 + j, for j < nq (0 past m rows; never read past them) */
static inline void vq_wq_load(const float *w, size_t wstride, int j0, int nq, size_t b, size_t m, __m256 (*W)[4])
{
    for (int j = 0; j < nq; j++) {
        const float *wj = w + (size_t)(j0 + j) * wstride + b;
        float wb[VQ_KQ_BLOCK];
        if (m < VQ_KQ_BLOCK) {
            memset(wb, 0, sizeof wb);
            memcpy(wb, wj, sizeof(float) * m), wj = wb;
        }
        _Pragma("GCC unroll 4") for (int k = 0; k < 4; k++)
            W[j][k] = _mm256_loadu_ps(wj + 8 * k);
    }
}

/* live[k] lane l: all ones where row 8k + l of the block is below m */
static inline void vq_wq_live(size_t m, __m256i live[4])
{
    const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7), mv = _mm256_set1_epi32((int)m);
    _Pragma("GCC unroll 4") for (int k = 0; k < 4; k++)
        live[k] = _mm256_cmpgt_epi32(mv, _mm256_add_epi32(lane, _mm256_set1_epi32(8 * k)));
}

/* the largest of m8's 8 lanes (exact in any order) */
static inline float vq_wq_max8(__m256 m8)
{
    __m128 m4 = _mm_max_ps(_mm256_castps256_ps128(m8), _mm256_extractf128_ps(m8, 1));
    m4 = _mm_max_ps(m4, _mm_movehl_ps(m4, m4));
    m4 = _mm_max_ss(m4, _mm_movehdup_ps(m4));
    return _mm_cvtss_f32(m4);
}

/* The int8-weight scale of one weight row for all column groups of a
 * block (kernels/kivi_qaxpy.h, kernels/qaxpy.h): W[k] its weights of rows
 * 8k .. 8k+7, Smax[k] those rows' max_g |s_ig| (0 past the block): returns
 * A = max_i |w_i| Smax_i (= max |w_i s_ig|: rounding is monotonic); *iv =
 * 127 / A (0 when A is 0) */
static inline float vq_wq_row_scale(const __m256 W[4], const __m256 Smax[4], float *iv)
{
    const __m256 abs = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
    __m256 m8 = _mm256_setzero_ps();
    _Pragma("GCC unroll 4") for (int k = 0; k < 4; k++)
        m8 = _mm256_max_ps(m8, _mm256_mul_ps(_mm256_and_ps(W[k], abs), Smax[k]));
    const float A = vq_wq_max8(m8);
    *iv = A > 0.0f ? 127.0f / A : 0.0f;
    return A;
}

/* q[k] held to [-127, 127], then 0 past the block (lanes off in live):
 * for products that were not finite, which VCVTPS2DQ converts to INT_MIN
 * and the reference's lrintf to LONG_MIN, both held to -127 */
static inline void vq_wq_hold32(__m256i q[4], const __m256i live[4])
{
    const __m256i lo = _mm256_set1_epi32(-127), hi = _mm256_set1_epi32(127);
    _Pragma("GCC unroll 4") for (int k = 0; k < 4; k++)
        q[k] = _mm256_and_si256(_mm256_min_epi32(_mm256_max_epi32(q[k], lo), hi), live[k]);
}

/* sum q_i of the block's 32 rounded weights q[k] */
static inline int32_t vq_wq_sum32(const __m256i q[4])
{
    const __m256i s = _mm256_add_epi32(_mm256_add_epi32(q[0], q[1]), _mm256_add_epi32(q[2], q[3]));
    __m128i s4 = _mm_add_epi32(_mm256_castsi256_si128(s), _mm256_extracti128_si256(s, 1));
    s4 = _mm_add_epi32(s4, _mm_shuffle_epi32(s4, 0x4E));
    s4 = _mm_add_epi32(s4, _mm_shuffle_epi32(s4, 0xB1));
    return _mm_cvtsi128_si32(s4);
}

/* the block's 32 rounded weights q[k] (rows 8k .. 8k+7, |q| <= 127) in row
 * order to q8 and, where q16 is not NULL, as int16 to q16 */
static inline void vq_wq_store32(const __m256i q[4], int8_t q8[VQ_KQ_BLOCK], int16_t *q16)
{
    /* |q| <= 127: the packs never clip. packs_epi32 leaves the rows as
     * qwords [0-3][8-11][4-7][12-15] (and 16.. likewise), packs_epi16 as
     * dwords [0-3][8-11][16-19][24-27][4-7][12-15][20-23][28-31] */
    const __m256i p01 = _mm256_packs_epi32(q[0], q[1]), p23 = _mm256_packs_epi32(q[2], q[3]);
    if (q16) {
        _mm256_storeu_si256((__m256i *)(void *)q16, _mm256_permute4x64_epi64(p01, 0xD8));
        _mm256_storeu_si256((__m256i *)(void *)(q16 + 16), _mm256_permute4x64_epi64(p23, 0xD8));
    }
    const __m256i b = _mm256_packs_epi16(p01, p23);
    _mm256_storeu_si256((__m256i *)(void *)q8,
                        _mm256_permutevar8x32_epi32(b, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7)));
}

/* The block's products a[k] (rows 8k .. 8k+7; 0 past the block) times iv
 * (127 / A, or 0 when A is 0) rounded by VCVTPS2DQ (nearest even, the
 * MXCSR default, as the references' lrintf), held to [-127, 127], then 0
 * past the block (lanes off in live), where iv is not finite: 127 / A
 * overflows for A below 3.7e-37, and a product that is not finite converts
 * to INT_MIN, held to -127 as lrintf's LONG_MIN is in the references (else
 * |a_i| <= A keeps |q| <= 127 and rows past the block at 0). Writes q in
 * row order to q8 and, where q16 is not NULL, as int16 to q16; returns sum
 * q_i. */
static inline int32_t vq_wq_quantize32(const __m256 a[4], float iv, const __m256i live[4], int8_t q8[VQ_KQ_BLOCK],
                                       int16_t *q16)
{
    const __m256 inv = _mm256_set1_ps(iv);
    __m256i q[4];
    _Pragma("GCC unroll 4") for (int k = 0; k < 4; k++)
        q[k] = _mm256_cvtps_epi32(_mm256_mul_ps(a[k], inv));
    if (!(iv <= FLT_MAX))
        vq_wq_hold32(q, live);
    vq_wq_store32(q, q8, q16);
    return vq_wq_sum32(q);
}

/* The block's w_i * s_i in a[k] (rows 8k .. 8k+7; 0 past the block):
 * A = max |a_i|, then vq_wq_quantize32 with iv = 127 / A (0 when A is 0);
 * *sum = sum q_i; returns A / 127. */
static inline float vq_wq_round32(const __m256 a[4], const __m256i live[4], int8_t q8[VQ_KQ_BLOCK], int16_t *q16,
                                  int32_t *sum)
{
    const __m256 abs = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
    const __m256 m8 = _mm256_max_ps(_mm256_max_ps(_mm256_and_ps(a[0], abs), _mm256_and_ps(a[1], abs)),
                                    _mm256_max_ps(_mm256_and_ps(a[2], abs), _mm256_and_ps(a[3], abs)));
    const float A = vq_wq_max8(m8);
    *sum = vq_wq_quantize32(a, A > 0.0f ? 127.0f / A : 0.0f, live, q8, q16);
    return A / 127.0f;
}

#endif
