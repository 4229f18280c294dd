/* rope_avx512.c -- AVX-512 twin of rope.h's turn, the reference's bits.
 *
 * neox: 16 pairs per step, the a's and b's in two registers. Adjacent
 * pairs: 8 pairs per register, each cosine and sine duplicated into its
 * pair's two lanes, the sine negated in the even lane, and the pair's two
 * values swapped in a second register: x*C + swap(x)*S gives
 * (a*c + b*(-s), b*c + a*s), the reference's two sums (negation is exact
 * and addition commutes). */
#include <immintrin.h>

#include "kernels/rope.h"

void vq_rope_pairs_avx512(float *x, const float *cs, size_t half, int neox, float sgn)
{
    const __m512 vs = _mm512_set1_ps(sgn);
    if (neox) {
        for (size_t i = 0; i < half; i += 16) {
            const __m512 a = _mm512_loadu_ps(x + i), b = _mm512_loadu_ps(x + half + i);
            const __m512 c = _mm512_loadu_ps(cs + i), s = _mm512_mul_ps(vs, _mm512_loadu_ps(cs + half + i));
            _mm512_storeu_ps(x + i, _mm512_sub_ps(_mm512_mul_ps(a, c), _mm512_mul_ps(b, s)));
            _mm512_storeu_ps(x + half + i, _mm512_add_ps(_mm512_mul_ps(a, s), _mm512_mul_ps(b, c)));
        }
        return;
    }
    const __m512i dup = _mm512_setr_epi32(0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7);
    const __m512 alt = _mm512_setr_ps(-1, 1, -1, 1, -1, 1, -1, 1, -1, 1, -1, 1, -1, 1, -1, 1);
    for (size_t i = 0; i < half; i += 8) {
        const __m512 v = _mm512_loadu_ps(x + 2 * i);
        const __m512 c = _mm512_permutexvar_ps(dup, _mm512_castps256_ps512(_mm256_loadu_ps(cs + i)));
        const __m512 s0 = _mm512_mul_ps(vs, _mm512_castps256_ps512(_mm256_loadu_ps(cs + half + i)));
        const __m512 s = _mm512_mul_ps(alt, _mm512_permutexvar_ps(dup, s0));
        const __m512 w = _mm512_permute_ps(v, 0xB1); /* (b, a) in every pair */
        _mm512_storeu_ps(x + 2 * i, _mm512_add_ps(_mm512_mul_ps(v, c), _mm512_mul_ps(w, s)));
    }
}
