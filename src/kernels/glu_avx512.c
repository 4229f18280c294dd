/* glu_avx512.c -- AVX-512 twin of glu.h's SwiGLU product (16 lanes, a
 * masked tail). Compiled with -mavx512f/bw/vl/dq. */
#include <immintrin.h>

#include "core/vexp_avx512.h"
#include "kernels/glu.h"

/* silu(x) * u: e = exp(-|x|) <= 1, so neither branch overflows */
static inline __m512 silu_mul16(__m512 x, __m512 u)
{
    const __m512 e = vq_exp_neg16(_mm512_sub_ps(_mm512_setzero_ps(), _mm512_abs_ps(x)));
    const __m512 num = _mm512_mask_mul_ps(x, _mm512_cmp_ps_mask(x, _mm512_setzero_ps(), _CMP_LT_OQ), x, e);
    return _mm512_mul_ps(_mm512_div_ps(num, _mm512_add_ps(e, _mm512_set1_ps(1.0f))), u);
}

void vq_silu_mul_avx512(float *g, const float *u, size_t n)
{
    size_t i = 0;
    for (; i + 16 <= n; i += 16)
        _mm512_storeu_ps(g + i, silu_mul16(_mm512_loadu_ps(g + i), _mm512_loadu_ps(u + i)));
    if (i < n) {
        const __mmask16 k = (__mmask16)((1u << (n - i)) - 1u);
        _mm512_mask_storeu_ps(g + i, k, silu_mul16(_mm512_maskz_loadu_ps(k, g + i), _mm512_maskz_loadu_ps(k, u + i)));
    }
}
