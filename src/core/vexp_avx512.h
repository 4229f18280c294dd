/* vexp_avx512.h -- exp of 16 non-positive floats on AVX-512 (vexp_poly.h's
 * reduction and polynomial), shared by the AVX-512 kernels that need it
 * (core/vexp_avx512.c's softmax numerators, kernels/glu_avx512.c). Include
 * only from files compiled with -mavx512f/dq. */
#ifndef VQ_CORE_VEXP_AVX512_H
#define VQ_CORE_VEXP_AVX512_H

#include <immintrin.h>

#include "core/vexp_poly.h"

/* vexp_poly.h's steps, with 2^k applied by VSCALEFPS (exact, as the AVX2
 * twin's multiply by the built power of two: k >= -126 wherever t >=
 * VQ_EXP_LO) and no clamp of t: lanes below VQ_EXP_LO (also -inf, whose
 * reduction is NaN) are zeroed by the mask, as in the AVX2 twin */
static inline __m512 vq_exp_neg16(__m512 t) /* t <= 0 */
{
    const __mmask16 live = _mm512_cmp_ps_mask(t, _mm512_set1_ps(VQ_EXP_LO), _CMP_GE_OQ);
    const __m512 k = _mm512_roundscale_ps(_mm512_mul_ps(t, _mm512_set1_ps(VQ_EXP_LOG2E)),
                                          _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    const __m512 r = VQ_EXP_REDUCE(512, k, t);
    return _mm512_maskz_scalef_ps(live, VQ_EXP_POLY(512, r), k);
}

#endif
