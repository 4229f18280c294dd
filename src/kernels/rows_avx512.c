/* rows_avx512.c -- AVX-512 twins of the row decoders (kernels.h):
 * bit-identical to rows_ref.c (the same multiply and add per element).
 *
 * Sixteen codes of b bits (b <= 4) fill 2b bytes, read with a masked load
 * (nothing past them is touched); lanes 0-7 take their codes from the low
 * 32 bits, lanes 8-15 from the 32 bits that start at bit 8b, each shifted
 * by b*(lane mod 8). The level of a code is picked from a register by a
 * permute (2^b <= 16 levels). */
#include <immintrin.h>

#include "kernels/kernels.h"

static inline __m512i codes16(const uint8_t *p, int b, __m512i shifts, __m512i mask)
{
    __m128i raw = _mm_maskz_loadu_epi8((__mmask16)((1u << (2 * b)) - 1u), p);
    unsigned long long x = (unsigned long long)_mm_cvtsi128_si64(raw);
    __m512i v = _mm512_mask_set1_epi32(_mm512_set1_epi32((int)(unsigned)x), 0xFF00, (int)(unsigned)(x >> (8 * b)));
    return _mm512_and_si512(_mm512_srlv_epi32(v, shifts), mask);
}

static inline __m512i lane_shifts(int b)
{
    return _mm512_mullo_epi32(_mm512_set_epi32(7, 6, 5, 4, 3, 2, 1, 0, 7, 6, 5, 4, 3, 2, 1, 0), _mm512_set1_epi32(b));
}

void vq_lut_row_avx512(const uint8_t *codes, int bits, size_t n, const float *lut, float scale, int add, float *out)
{
    const __m512i sh = lane_shifts(bits), mask = _mm512_set1_epi32((1 << bits) - 1);
    float tab[16] = { 0 };
    for (int k = 0; k < (1 << bits); k++)
        tab[k] = scale * lut[k];
    const __m512 levels = _mm512_loadu_ps(tab);
    for (size_t i = 0; i < n; i += 16) {
        __m512 x = _mm512_permutexvar_ps(codes16(codes + i / 8 * (size_t)bits, bits, sh, mask), levels);
        if (add)
            x = _mm512_add_ps(_mm512_loadu_ps(out + i), x);
        _mm512_storeu_ps(out + i, x);
    }
}

void vq_kivi_row_avx512(const uint8_t *row, int bits, size_t n, const float *s, const float *m, float *out)
{
    const __m512i sh = lane_shifts(bits), mask = _mm512_set1_epi32((1 << bits) - 1);
    for (size_t i = 0; i < n; i += 16) {
        __m512 c = _mm512_cvtepi32_ps(codes16(row + i / 8 * (size_t)bits, bits, sh, mask));
        __m512 t = _mm512_mul_ps(_mm512_loadu_ps(s + i), c);
        _mm512_storeu_ps(out + i, _mm512_add_ps(t, _mm512_loadu_ps(m + i)));
    }
}

void vq_kivi_group_row_avx512(const uint8_t *row, int bits, size_t n, size_t group, const float *gs, const float *gm,
                              float *out)
{
    const __m512i sh = lane_shifts(bits), mask = _mm512_set1_epi32((1 << bits) - 1);
    for (size_t i = 0; i < n; i += 16) {
        __m512 c = _mm512_cvtepi32_ps(codes16(row + i / 8 * (size_t)bits, bits, sh, mask));
        __m512 t = _mm512_mul_ps(_mm512_set1_ps(gs[i / group]), c);
        _mm512_storeu_ps(out + i, _mm512_add_ps(t, _mm512_set1_ps(gm[i / group])));
    }
}

void vq_fp16_row_avx512(const uint8_t *src, float *dst, size_t n)
{
    size_t i = 0;
    for (; i + 16 <= n; i += 16)
        _mm512_storeu_ps(dst + i, _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(const void *)(src + 2 * i))));
    if (i < n) {
        __mmask16 k = (__mmask16)((1u << (n - i)) - 1u);
        __m256i h = _mm256_maskz_loadu_epi16(k, src + 2 * i);
        _mm512_mask_storeu_ps(dst + i, k, _mm512_cvtph_ps(h));
    }
}
