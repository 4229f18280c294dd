/* signscore_avx512.h -- the float steps of kernels.h signscore on 16
 * tokens, shared by its AVX-512 variants (bits_avx512x.c,
 * signscore_nibbles_avx512x.c): every product and sum rounded on its own,
 * in the reference's order, so both have the reference's bits. Only for
 * files compiled with -mavx512f. */
#ifndef VQ_KERNELS_SIGNSCORE_AVX512_H
#define VQ_KERNELS_SIGNSCORE_AVX512_H

#include <immintrin.h>

/* w0 k0 (+ w1 k1 with two sets): Z from the pz counts, P from the pq ones */
static inline __m512 vq_signscore_sets16(__m512 w0, __m512 w1, int two, __m512i k0, __m512i k1)
{
    const __m512 x = _mm512_mul_ps(w0, _mm512_cvtepi32_ps(k0));
    return two ? _mm512_add_ps(x, _mm512_mul_ps(w1, _mm512_cvtepi32_ps(k1))) : x;
}

/* F ((c[0] Z + c[1] P) - c[2]): the scores of one query (constants c) */
static inline __m512 vq_signscore_combine16(__m512 Z, __m512 P, __m512 F, const float *c)
{
    const __m512 t = _mm512_add_ps(_mm512_mul_ps(_mm512_set1_ps(c[0]), Z), _mm512_mul_ps(_mm512_set1_ps(c[1]), P));
    return _mm512_mul_ps(F, _mm512_sub_ps(t, _mm512_set1_ps(c[2])));
}

#endif
