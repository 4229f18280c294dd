/* wq_avx512x.h -- helpers of the int8-weight sums (kernels/kivi_qaxpy.h,
 * kernels/qaxpy.h vq_qaxpy8): a four-row byte transpose for VPDPBUSD and
 * four horizontal maxima at once. Only for *_avx512x.c files (AVX-512
 * with VNNI and VBMI). */
#ifndef VQ_KERNELS_WQ_AVX512X_H
#define VQ_KERNELS_WQ_AVX512X_H

#include <immintrin.h>
#include <stddef.h>
#include <stdint.h>

/* the VPERMB index of vq_quad_bytes: byte 4b + r <- byte 16r + b */
static inline __m512i vq_quad_index(void)
{
    int8_t tix[64];
    for (int p = 0; p < 64; p++)
        tix[p] = (int8_t)((p % 4) * 16 + p / 4);
    return _mm512_loadu_si512(tix);
}

/* four rows' 16 bytes at p[t] + off into the register's four lanes,
 * transposed: 32-bit lane b = byte b of rows 0..3 */
static inline __m512i vq_quad_bytes(const uint8_t *const p[4], size_t off, __m512i tidx)
{
    __m512i x = _mm512_castsi128_si512(_mm_loadu_si128((const __m128i *)(const void *)(p[0] + off)));
    x = _mm512_inserti32x4(x, _mm_loadu_si128((const __m128i *)(const void *)(p[1] + off)), 1);
    x = _mm512_inserti32x4(x, _mm_loadu_si128((const __m128i *)(const void *)(p[2] + off)), 2);
    x = _mm512_inserti32x4(x, _mm_loadu_si128((const __m128i *)(const void *)(p[3] + off)), 3);
    return _mm512_permutexvar_epi8(tidx, x);
}

/* the maxima of the lanes of a, b, c, d: [max a, max b, max c, max d] */
static inline __m128 vq_max4x16(__m512 a, __m512 b, __m512 c, __m512 d)
{
    const __m512 ab = _mm512_max_ps(_mm512_shuffle_f32x4(a, b, 0x44), _mm512_shuffle_f32x4(a, b, 0xEE));
    const __m512 cd = _mm512_max_ps(_mm512_shuffle_f32x4(c, d, 0x44), _mm512_shuffle_f32x4(c, d, 0xEE));
    __m512 x = _mm512_max_ps(_mm512_shuffle_f32x4(ab, cd, 0x88), _mm512_shuffle_f32x4(ab, cd, 0xDD));
    x = _mm512_max_ps(x, _mm512_permute_ps(x, 0x4E));
    x = _mm512_max_ps(x, _mm512_permute_ps(x, 0xB1));
    return _mm512_castps512_ps128(
        _mm512_permutexvar_ps(_mm512_setr_epi32(0, 4, 8, 12, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0), x));
}

#endif
