/* units16_avx512.h -- 16 tokens' bit sets turned into 32-bit lanes, the
 * layout of the table-lookup scorers (signscore_nibbles_avx512x.c,
 * ftab_score_avx512.c, pq_score_avx512.c): unit u of a set (its bytes
 * 4u..4u+3) of token t in lane t of one register. Only for files compiled
 * with -mavx512f. */
#ifndef VQ_KERNELS_UNITS16_AVX512_H
#define VQ_KERNELS_UNITS16_AVX512_H

#include <immintrin.h>
#include <stddef.h>
#include <stdint.h>

/* the 16 bytes at p + k*stride, k = 0..3, row k in 128-bit lane k */
static inline __attribute__((always_inline)) __m512i vq_load4x16(const uint8_t *p, size_t stride)
{
    __m512i x = _mm512_castsi128_si512(_mm_loadu_si128((const __m128i *)(const void *)p));
    x = _mm512_inserti32x4(x, _mm_loadu_si128((const __m128i *)(const void *)(p + stride)), 1);
    x = _mm512_inserti32x4(x, _mm_loadu_si128((const __m128i *)(const void *)(p + 2 * stride)), 2);
    return _mm512_inserti32x4(x, _mm_loadu_si128((const __m128i *)(const void *)(p + 3 * stride)), 3);
}

/* units 4c..4c+3 of 16 tokens, token t's 16 bytes 16c.. at at + t*stride:
 * r[k] = unit 4c + k, lane t = token t. Four loads of tokens k, k + 4,
 * k + 8, k + 12 (x_k lane L: token 4L + k), transposed within their
 * 128-bit lanes, which leaves the tokens in order. */
static inline __attribute__((always_inline)) void vq_units16_chunk(const uint8_t *at, size_t stride, __m512i r[4])
{
    const __m512i x0 = vq_load4x16(at, 4 * stride), x1 = vq_load4x16(at + stride, 4 * stride);
    const __m512i x2 = vq_load4x16(at + 2 * stride, 4 * stride), x3 = vq_load4x16(at + 3 * stride, 4 * stride);
    const __m512i t0 = _mm512_unpacklo_epi32(x0, x1), t1 = _mm512_unpackhi_epi32(x0, x1);
    const __m512i t2 = _mm512_unpacklo_epi32(x2, x3), t3 = _mm512_unpackhi_epi32(x2, x3);
    r[0] = _mm512_unpacklo_epi64(t0, t2), r[1] = _mm512_unpackhi_epi64(t0, t2);
    r[2] = _mm512_unpacklo_epi64(t1, t3), r[3] = _mm512_unpackhi_epi64(t1, t3);
}

/* the nu units of 16 tokens' rows (token t's bytes at p + t*stride; ix:
 * vq_rows16_index(stride) of rows16_avx512.h): whole 16-byte chunks by
 * vq_units16_chunk, a remaining unit by one gather */
static inline void vq_units16_load(const uint8_t *p, size_t stride, size_t nu, __m512i ix, __m512i *U)
{
    size_t u = 0;
    for (; u + 4 <= nu; u += 4)
        vq_units16_chunk(p + 4 * u, stride, U + u);
    for (; u < nu; u++)
        U[u] = _mm512_i32gather_epi32(ix, (const void *)(p + 4 * u), 1);
}

#endif
