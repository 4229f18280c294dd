/* units8_avx2.h -- 8 tokens' rows in the lanes of AVX2 registers, the
 * layout of the AVX2 table-lookup scorers (ftab_score_avx2.c,
 * pq_score_avx2.c): unit u of a row (its bytes 4u..4u+3) of token t in
 * lane t of one register, and the per-token pieces beside it (the lanes of
 * the first `have` tokens, an IEEE half of each row, a masked store) and
 * the 16-entry table lookup they both use (vq_lookup16_ps). The
 * 8-lane form of units16_avx512.h / rows16_avx512.h. Include only from
 * *_avx2.c files. */
#ifndef VQ_KERNELS_UNITS8_AVX2_H
#define VQ_KERNELS_UNITS8_AVX2_H

#include <immintrin.h>
#include <stddef.h>
#include <stdint.h>

/* the gather offsets k*stride, k = 0..7 (stride * 7 < 2^31) */
static inline __m256i vq_rows8_index(size_t stride)
{
    return _mm256_mullo_epi32(_mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7), _mm256_set1_epi32((int)stride));
}

/* all ones in the lanes of the first `have` rows (all 8 from 8 on), 0 in the others */
static inline __m256i vq_rows8_live(size_t have)
{
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(have < 8 ? (int)have : 8), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

/* the IEEE halves (LE) at base + hoff + k*stride for the rows in `live`
 * (vq_rows8_live; ix: vq_rows8_index(stride)), as floats (exact; 0 in the
 * other lanes): one gather of the 4 bytes at min(hoff, stride - 4), which
 * hold the half and stay inside the row's stride bytes (stride >= 4) */
static inline __m256 vq_rows8_halves(const uint8_t *base, size_t hoff, size_t stride, __m256i ix, __m256i live)
{
    const size_t at = hoff + 4 <= stride ? hoff : stride - 4;
    const __m256i x = _mm256_mask_i32gather_epi32(_mm256_setzero_si256(), (const int *)(const void *)(base + at), ix,
                                                  live, 1);
    const __m256i h = _mm256_and_si256(_mm256_srl_epi32(x, _mm_cvtsi32_si128((int)(8 * (hoff - at)))),
                                       _mm256_set1_epi32(0xFFFF));
    return _mm256_cvtph_ps(_mm_packus_epi32(_mm256_castsi256_si128(h), _mm256_extracti128_si256(h, 1)));
}

/* x into s[0..7], or (have < 8) only the lanes in live (vq_rows8_live(have)) */
static inline void vq_rows8_store(float *s, __m256 x, size_t have, __m256i live)
{
    if (have >= 8)
        _mm256_storeu_ps(s, x);
    else
        _mm256_maskstore_ps(s, live, x);
}

/* the entries of a 16-entry table (lo, hi: its entries 0-7, 8-15) at the
 * indices in the low 4 bits of x's lanes (the bits above are ignored):
 * a VPERMPS of each half by the low 3 bits, blended by bit 3 (exact) */
static inline __attribute__((always_inline)) __m256 vq_lookup16_ps(__m256 lo, __m256 hi, __m256i x)
{
    const __m256 bit3 = _mm256_castsi256_ps(_mm256_slli_epi32(x, 28)); /* index bit 3 as the sign bit */
    return _mm256_blendv_ps(_mm256_permutevar8x32_ps(lo, x), _mm256_permutevar8x32_ps(hi, x), bit3);
}

/* the 16 bytes at p (lanes 0-3) and at p + off (lanes 4-7) */
static inline __attribute__((always_inline)) __m256i vq_load2x16(const uint8_t *p, size_t off)
{
    const __m256i x = _mm256_castsi128_si256(_mm_loadu_si128((const __m128i *)(const void *)p));
    return _mm256_inserti128_si256(x, _mm_loadu_si128((const __m128i *)(const void *)(p + off)), 1);
}

/* units 4c..4c+3 of 8 tokens, token t's 16 bytes 16c.. at at + t*stride:
 * r[k] = unit 4c + k, lane t = token t. Four loads of tokens k and k + 4
 * (x_k: token k in the low 128-bit lane, k + 4 in the high one),
 * transposed within their 128-bit lanes, which leaves the tokens in order. */
static inline __attribute__((always_inline)) void vq_units8_chunk(const uint8_t *at, size_t stride, __m256i r[4])
{
    const __m256i x0 = vq_load2x16(at, 4 * stride), x1 = vq_load2x16(at + stride, 4 * stride);
    const __m256i x2 = vq_load2x16(at + 2 * stride, 4 * stride), x3 = vq_load2x16(at + 3 * stride, 4 * stride);
    const __m256i t0 = _mm256_unpacklo_epi32(x0, x1), t1 = _mm256_unpackhi_epi32(x0, x1);
    const __m256i t2 = _mm256_unpacklo_epi32(x2, x3), t3 = _mm256_unpackhi_epi32(x2, x3);
    r[0] = _mm256_unpacklo_epi64(t0, t2), r[1] = _mm256_unpackhi_epi64(t0, t2);
    r[2] = _mm256_unpacklo_epi64(t1, t3), r[3] = _mm256_unpackhi_epi64(t1, t3);
}

/* the nu units of 8 tokens' rows (token t's bytes at p + t*stride; ix:
 * vq_rows8_index(stride)): whole 16-byte chunks by vq_units8_chunk, a
 * remaining unit by one gather; reads only the rows' first 4*nu bytes */
static inline void vq_units8_load(const uint8_t *p, size_t stride, size_t nu, __m256i ix, __m256i *U)
{
    size_t u = 0;
    for (; u + 4 <= nu; u += 4)
        vq_units8_chunk(p + 4 * u, stride, U + u);
    for (; u < nu; u++)
        U[u] = _mm256_i32gather_epi32((const int *)(const void *)(p + 4 * u), ix, 1);
}

#endif
