/* vexp_avx2.h -- exp of 8 non-positive floats on AVX2 + FMA (vexp_poly.h's
 * reduction and polynomial, the AVX-512 twin's bits), shared by the AVX2
 * kernels that need it (core/vexp_avx2.c's softmax numerators,
 * kernels/glu_avx2.c). Include only from files compiled with -mavx2 -mfma. */
#ifndef VQ_CORE_VEXP_AVX2_H
#define VQ_CORE_VEXP_AVX2_H

#include <immintrin.h>

#include "core/vexp_poly.h"

#define VQ_EXP_ROUND_NEAREST8(x) _mm256_round_ps(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)
VQ_EXP_DEFINE(vq_exp_in_range8, 256, VQ_EXP_ROUND_NEAREST8)

/* exp(t) for t <= 0: t clamped at VQ_EXP_LO for the polynomial, and the
 * lanes below it (also -inf) zeroed */
static inline __m256 vq_exp_neg8(__m256 t)
{
    const __m256 under = _mm256_cmp_ps(t, _mm256_set1_ps(VQ_EXP_LO), _CMP_LT_OQ);
    return _mm256_andnot_ps(under, vq_exp_in_range8(_mm256_max_ps(t, _mm256_set1_ps(VQ_EXP_LO))));
}

#endif
