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

/* 8 adjacent pairs, x = channels 2i..2i+15, turned by pairs i..i+7 of the
 * row cs (vs: sgn in every lane) */
static inline __m512 rope_adj8(__m512 x, const float *cs, size_t half, size_t i, __m512 vs)
{
    const __m512i dup = _mm512_setr_epi32(0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7);
    const __m512 alt = _mm512_setr_ps(-1, 1, -1, 1, -1, 1, -1, 1, -1, 1, -1, 1, -1, 1, -1, 1);
    const __m512 c = _mm512_permutexvar_ps(dup, _mm512_castps256_ps512(_mm256_loadu_ps(cs + i)));
    const __m512 s0 = _mm512_mul_ps(vs, _mm512_castps256_ps512(_mm256_loadu_ps(cs + half + i)));
    const __m512 s = _mm512_mul_ps(alt, _mm512_permutexvar_ps(dup, s0));
    const __m512 w = _mm512_permute_ps(x, 0xB1); /* (b, a) in every pair */
    return _mm512_add_ps(_mm512_mul_ps(x, c), _mm512_mul_ps(w, s));
}

/* 16 NEOX pairs (a = channels i..i+15, b = the same + half) turned by
 * pairs i..i+15 of the row cs */
static inline void rope_neox16(__m512 *a, __m512 *b, const float *cs, size_t half, size_t i, __m512 vs)
{
    const __m512 c = _mm512_loadu_ps(cs + i), s = _mm512_mul_ps(vs, _mm512_loadu_ps(cs + half + i));
    const __m512 a2 = _mm512_sub_ps(_mm512_mul_ps(*a, c), _mm512_mul_ps(*b, s));
    *b = _mm512_add_ps(_mm512_mul_ps(*a, s), _mm512_mul_ps(*b, c));
    *a = a2;
}

void vq_rope_pairs_avx512(float *x, const float *cs, size_t half, int neox, float sgn)
{
    const __m512 vs = _mm512_set1_ps(sgn);
    if (neox) {
        for (size_t i = 0; i < half; i += 16) {
            __m512 a = _mm512_loadu_ps(x + i), b = _mm512_loadu_ps(x + half + i);
            rope_neox16(&a, &b, cs, half, i, vs);
            _mm512_storeu_ps(x + i, a);
            _mm512_storeu_ps(x + half + i, b);
        }
        return;
    }
    for (size_t i = 0; i < half; i += 8)
        _mm512_storeu_ps(x + 2 * i, rope_adj8(_mm512_loadu_ps(x + 2 * i), cs, half, i, vs));
}
