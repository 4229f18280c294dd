/* rows16_avx512.h -- one 32-bit word from each of 16 rows of a strided
 * array by one gather (row k at base + k*stride), for the kernels that take
 * per-row scales or factors as columns (include only from files compiled
 * with -mavx512f). Rows at or past `have` are not read and give 0. */
#ifndef VQ_KERNELS_ROWS16_AVX512_H
#define VQ_KERNELS_ROWS16_AVX512_H

#include <immintrin.h>
#include <stddef.h>
#include <stdint.h>

/* the gather offsets k*stride, k = 0..15 (stride * 15 < 2^31) */
static inline __m512i vq_rows16_index(size_t stride)
{
    return _mm512_mullo_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                              _mm512_set1_epi32((int)stride));
}

/* the lanes of the first `have` rows (all 16 from 16 on) */
static inline __mmask16 vq_rows16_live(size_t have)
{
    return have >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << have) - 1u);
}

/* the 4 bytes at at + k*stride of the rows in `live` (ix: vq_rows16_index),
 * 0 in the other lanes */
static inline __m512i vq_rows16_words(const uint8_t *at, __m512i ix, __mmask16 live)
{
    return _mm512_mask_i32gather_epi32(_mm512_setzero_si512(), live, ix, at, 1);
}

/* the low IEEE halves of 16 words as floats (exact) */
static inline __m512 vq_low_halves16(__m512i words) { return _mm512_cvtph_ps(_mm512_cvtepi32_epi16(words)); }

/* the IEEE halves at base + hoff + k*stride, k < have (<= 16), as floats
 * 0 .. have-1 (0 past them): one gather of the 4 bytes that hold the half
 * and stay inside the row's stride bytes (stride >= 4), VCVTPH2PS (exact) */
static inline __m512 vq_rows16_halves(const uint8_t *base, size_t hoff, size_t stride, __m512i ix, size_t have)
{
    const int high = hoff + 4 > stride; /* the half is the word's upper one */
    const __m512i x = vq_rows16_words(base + hoff - (high ? 2 : 0), ix, vq_rows16_live(have));
    return vq_low_halves16(high ? _mm512_srli_epi32(x, 16) : x);
}

#endif
