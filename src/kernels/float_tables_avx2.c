/* float_tables_avx2.c -- AVX2 twins of kernels/float_tables.h's table
 * builders: one table (16 entries) per pair of registers, entries 0-7 and
 * 8-15, the reference's products and sums in its order (the same bits);
 * float_tables_avx512.c's steps on 8 lanes. */
#include <immintrin.h>
#include <stdalign.h>

#include "kernels/float_tables.h"

/* the sign bit in the lanes e (e0 .. e0 + 7) whose bit k is clear */
static inline __m256 clear_bit_signs(unsigned e0, unsigned k)
{
    const __m256i e = _mm256_add_epi32(_mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7), _mm256_set1_epi32((int)e0));
    const __m256i clear = _mm256_andnot_si256(_mm256_srli_epi32(e, (int)k), _mm256_set1_epi32(1));
    return _mm256_castsi256_ps(_mm256_slli_epi32(clear, 31));
}

void vq_sign_tables_avx2(const float *y, size_t m, float *tab)
{
    __m256 n[2][4];
    for (unsigned h = 0; h < 2; h++)
        for (unsigned k = 0; k < 4; k++)
            n[h][k] = clear_bit_signs(8 * h, k);
    for (size_t p = 0; p < m / 4; p++) {
        const float *x = y + 4 * p;
        const __m256 x0 = _mm256_set1_ps(x[0]), x1 = _mm256_set1_ps(x[1]);
        const __m256 x2 = _mm256_set1_ps(x[2]), x3 = _mm256_set1_ps(x[3]);
        for (unsigned h = 0; h < 2; h++) {
            const __m256 s = _mm256_add_ps(_mm256_xor_ps(x0, n[h][0]), _mm256_xor_ps(x1, n[h][1]));
            const __m256 t = _mm256_add_ps(_mm256_add_ps(s, _mm256_xor_ps(x2, n[h][2])), _mm256_xor_ps(x3, n[h][3]));
            _mm256_storeu_ps(tab + 16 * p + 8 * h, t);
        }
    }
}

void vq_level_tables_avx2(const float *y, size_t D, int b, const float *lut, const float *lut_lo, size_t n_lo,
                          float *tab)
{
    if (b != 1 && b != 2 && b != 4) {
        vq_level_tables_ref(y, D, b, lut, lut_lo, n_lo, tab);
        return;
    }
    alignas(32) float lanes[8 * 16];
    vq_level_lanes(b, lut, lut_lo, lanes);
    const size_t k = 4 / (size_t)b;
    for (size_t p = 0; p < D / k; p++) {
        const size_t d0 = p * k;
        for (size_t h = 0; h < 2; h++) {
            const __m256 y0 = _mm256_set1_ps(y[d0]);
            __m256 t = _mm256_mul_ps(y0, _mm256_load_ps(lanes + 16 * (d0 < n_lo) + 8 * h));
            for (size_t j = 1; j < k; j++)
                t = _mm256_add_ps(t, _mm256_mul_ps(_mm256_set1_ps(y[d0 + j]),
                                                   _mm256_load_ps(lanes + (2 * j + (d0 + j < n_lo)) * 16 + 8 * h)));
            _mm256_storeu_ps(tab + 16 * p + 8 * h, t);
        }
    }
}
