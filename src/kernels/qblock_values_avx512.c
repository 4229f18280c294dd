/* qblock_values_avx512.c -- AVX-512 twins of qblock_values.h: sixteen
 * values per register, bit-identical to the reference (one exact
 * int -> float conversion and one multiply per value). */
#include <immintrin.h>

#include "core/fp16.h"
#include "kernels/qblock_values.h"

static inline __m512 scale_of(const uint8_t *b)
{
    return _mm512_set1_ps(vq_fp16_to_fp32((vq_fp16)(b[0] | b[1] << 8)));
}

void vq_q8_0_values_avx512(const uint8_t *blk, size_t nblk, float *out)
{
    for (size_t k = 0; k < nblk; k++, blk += 34, out += 32) {
        __m512 d = scale_of(blk);
        __m128i a = _mm_loadu_si128((const __m128i *)(const void *)(blk + 2));
        __m128i b = _mm_loadu_si128((const __m128i *)(const void *)(blk + 18));
        _mm512_storeu_ps(out, _mm512_mul_ps(d, _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(a))));
        _mm512_storeu_ps(out + 16, _mm512_mul_ps(d, _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(b))));
    }
}

void vq_q4_0_values_avx512(const uint8_t *blk, size_t nblk, float *out)
{
    const __m128i m4 = _mm_set1_epi8(15), eight = _mm_set1_epi8(8);
    for (size_t k = 0; k < nblk; k++, blk += 18, out += 32) {
        __m512 d = scale_of(blk);
        __m128i x = _mm_loadu_si128((const __m128i *)(const void *)(blk + 2));
        __m128i lo = _mm_sub_epi8(_mm_and_si128(x, m4), eight);                   /* values 0..15 */
        __m128i hi = _mm_sub_epi8(_mm_and_si128(_mm_srli_epi16(x, 4), m4), eight); /* values 16..31 */
        _mm512_storeu_ps(out, _mm512_mul_ps(d, _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(lo))));
        _mm512_storeu_ps(out + 16, _mm512_mul_ps(d, _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(hi))));
    }
}
