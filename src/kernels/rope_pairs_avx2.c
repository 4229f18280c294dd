/* rope_pairs_avx2.c -- AVX2 twin of kernels/rope.h rope_pairs, with the
 * reference's bits: s = sgn * sin (one multiply), then per pair the four
 * products a*c, b*s, a*s, b*c and one subtraction or addition (no FMA:
 * the file is compiled with -mfma, but the intrinsics keep every product
 * rounded).
 *
 * neox: the pairs' halves are 8 lanes of x[i..] and x[half + i..].
 * Adjacent pairs: 8 floats are 4 pairs (a0 b0 a1 b1 ...); with c, s
 * duplicated per pair, x*c and swap(x)*s give a*c, b*c and b*s, a*s in
 * place, and VADDSUBPS takes a*c - b*s (even lanes), b*c + a*s (odd lanes;
 * an addition is the same bits in either order). */
#include <immintrin.h>

#include "kernels/codes_avx2.h"
#include "kernels/rope.h"

void vq_rope_pairs_avx2(float *x, const float *cs, size_t half, int neox, float sgn)
{
    const __m256 vs = _mm256_set1_ps(sgn);
    if (neox) {
        for (size_t i = 0; i < half; i += 8) {
            const __m256 a = _mm256_loadu_ps(x + i), b = _mm256_loadu_ps(x + half + i);
            const __m256 c = _mm256_loadu_ps(cs + i), s = _mm256_mul_ps(vs, _mm256_loadu_ps(cs + half + i));
            const __m256 ac = _mm256_mul_ps(a, c), bs = _mm256_mul_ps(b, s);
            const __m256 as = _mm256_mul_ps(a, s), bc = _mm256_mul_ps(b, c);
            _mm256_storeu_ps(x + i, _mm256_sub_ps(ac, bs));
            _mm256_storeu_ps(x + half + i, _mm256_add_ps(as, bc));
        }
        return;
    }
    for (size_t i = 0; i < half; i += 4) {
        const __m256 v = _mm256_loadu_ps(x + 2 * i);
        const __m256 c = vq_dup4(cs + i), s = _mm256_mul_ps(vs, vq_dup4(cs + half + i));
        const __m256 swapped = _mm256_permute_ps(v, 0xB1); /* b0 a0 b1 a1 ... */
        _mm256_storeu_ps(x + 2 * i, _mm256_addsub_ps(_mm256_mul_ps(v, c), _mm256_mul_ps(swapped, s)));
    }
}
