/* float_tables_avx512.c -- AVX-512F twins of kernels/float_tables.h's
 * table builders: one table (16 entries) per register, entry e in lane e,
 * the reference's products and sums in its order (the same bits).
 *
 * Sign tables: lane e holds +-y_k by an XOR of the sign bit where bit k of
 * e is clear (exact), the four added ((a + b) + c) + d. Level tables: the
 * level of slot j's code in lane e comes from a pattern register per slot
 * and codebook (float_tables.h vq_level_lanes), multiplied by the
 * broadcast coordinate and added to the slots before it. */
#include <immintrin.h>
#include <stdalign.h>

#include "kernels/float_tables.h"

/* the sign bit in the lanes e whose bit k is clear */
static inline __m512 clear_bit_signs(unsigned k)
{
    const __m512i e = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    const __m512i clear = _mm512_andnot_si512(_mm512_srli_epi32(e, k), _mm512_set1_epi32(1));
    return _mm512_castsi512_ps(_mm512_slli_epi32(clear, 31));
}

void vq_sign_tables_avx512(const float *y, size_t m, float *tab)
{
    const __m512 n0 = clear_bit_signs(0), n1 = clear_bit_signs(1), n2 = clear_bit_signs(2), n3 = clear_bit_signs(3);
    for (size_t p = 0; p < m / 4; p++) {
        const float *x = y + 4 * p;
        const __m512 a = _mm512_xor_ps(_mm512_set1_ps(x[0]), n0), b = _mm512_xor_ps(_mm512_set1_ps(x[1]), n1);
        const __m512 c = _mm512_xor_ps(_mm512_set1_ps(x[2]), n2), d = _mm512_xor_ps(_mm512_set1_ps(x[3]), n3);
        _mm512_storeu_ps(tab + 16 * p, _mm512_add_ps(_mm512_add_ps(_mm512_add_ps(a, b), c), d));
    }
}

void vq_level_tables_avx512(const float *y, size_t D, int b, const float *lut, const float *lut_lo, size_t n_lo,
                            float *tab)
{
    if (b != 1 && b != 2 && b != 4) {
        vq_level_tables_ref(y, D, b, lut, lut_lo, n_lo, tab);
        return;
    }
    alignas(64) float lanes[8 * 16];
    vq_level_lanes(b, lut, lut_lo, lanes);
    const size_t k = 4 / (size_t)b;
    __m512 V[4][2];
    for (size_t j = 0; j < k; j++)
        for (size_t w = 0; w < 2; w++)
            V[j][w] = _mm512_load_ps(lanes + (2 * j + w) * 16);
    for (size_t p = 0; p < D / k; p++) {
        const size_t d0 = p * k;
        __m512 t = _mm512_mul_ps(_mm512_set1_ps(y[d0]), V[0][d0 < n_lo]);
        for (size_t j = 1; j < k; j++)
            t = _mm512_add_ps(t, _mm512_mul_ps(_mm512_set1_ps(y[d0 + j]), V[j][d0 + j < n_lo]));
        _mm512_storeu_ps(tab + 16 * p, t);
    }
}
