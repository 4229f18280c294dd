/* qblock_values_avx2.c -- AVX2 twins of qblock_values.h (compiled with
 * -mavx2 -mf16c; called only after run-time dispatch). */
#include <immintrin.h>

#include "kernels/qblock_values.h"
#include "core/fp16.h"

static inline __m256 scale_of(const uint8_t *b)
{
    return _mm256_set1_ps(vq_fp16_to_fp32((vq_fp16)(b[0] | b[1] << 8)));
}

/* 8 int32 -> floats times d, stored */
static inline void put8(float *o, __m256i q, __m256 d)
{
    _mm256_storeu_ps(o, _mm256_mul_ps(d, _mm256_cvtepi32_ps(q)));
}

void vq_q8_0_values_avx2(const uint8_t *blk, size_t nblk, float *out)
{
    for (size_t k = 0; k < nblk; k++, blk += 34, out += 32) {
        __m256 d = scale_of(blk);
        __m128i a = _mm_loadu_si128((const __m128i *)(const void *)(blk + 2));
        __m128i b = _mm_loadu_si128((const __m128i *)(const void *)(blk + 18));
        put8(out, _mm256_cvtepi8_epi32(a), d);
        put8(out + 8, _mm256_cvtepi8_epi32(_mm_srli_si128(a, 8)), d);
        put8(out + 16, _mm256_cvtepi8_epi32(b), d);
        put8(out + 24, _mm256_cvtepi8_epi32(_mm_srli_si128(b, 8)), d);
    }
}

void vq_q4_0_values_avx2(const uint8_t *blk, size_t nblk, float *out)
{
    const __m128i m4 = _mm_set1_epi8(15), eight = _mm_set1_epi8(8);
    for (size_t k = 0; k < nblk; k++, blk += 18, out += 32) {
        __m256 d = scale_of(blk);
        __m128i x = _mm_loadu_si128((const __m128i *)(const void *)(blk + 2));
        __m128i lo = _mm_sub_epi8(_mm_and_si128(x, m4), eight);                   /* values 0..15 */
        __m128i hi = _mm_sub_epi8(_mm_and_si128(_mm_srli_epi16(x, 4), m4), eight); /* values 16..31 */
        put8(out, _mm256_cvtepi8_epi32(lo), d);
        put8(out + 8, _mm256_cvtepi8_epi32(_mm_srli_si128(lo, 8)), d);
        put8(out + 16, _mm256_cvtepi8_epi32(hi), d);
        put8(out + 24, _mm256_cvtepi8_epi32(_mm_srli_si128(hi, 8)), d);
    }
}
