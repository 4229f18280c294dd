/* glu_avx512.c -- AVX-512 twins of glu.h's gated products (16 lanes, a
 * masked tail). Compiled with -mavx512f/bw/vl/dq. */
#include <immintrin.h>

#include "core/vexp_avx512.h"
#include "kernels/glu.h"

/* x * sigmoid(z) * u: e = exp(-|z|) <= 1, so neither branch overflows */
static inline __m512 sigmoid_mul16(__m512 x, __m512 z, __m512 u)
{
    const __m512 e = vq_exp_neg16(_mm512_sub_ps(_mm512_setzero_ps(), _mm512_abs_ps(z)));
    const __m512 num = _mm512_mask_mul_ps(x, _mm512_cmp_ps_mask(z, _mm512_setzero_ps(), _CMP_LT_OQ), x, e);
    return _mm512_mul_ps(_mm512_div_ps(num, _mm512_add_ps(e, _mm512_set1_ps(1.0f))), u);
}

/* GELU's z = 2k (x + 0.044715 x^3) */
static inline __m512 gelu_z16(__m512 x)
{
    const __m512 x3 = _mm512_mul_ps(_mm512_mul_ps(x, x), x);
    return _mm512_mul_ps(_mm512_set1_ps(2.0f * 0.7978845608028654f),
                         _mm512_fmadd_ps(_mm512_set1_ps(0.044715f), x3, x));
}

/* g[i] <- x * sigmoid(z(x)) * u[i] over 16 lanes, a masked tail */
static inline __attribute__((always_inline)) void gated(const int GELU, float *g, const float *u, size_t n)
{
    size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        const __m512 x = _mm512_loadu_ps(g + i);
        _mm512_storeu_ps(g + i, sigmoid_mul16(x, GELU ? gelu_z16(x) : x, _mm512_loadu_ps(u + i)));
    }
    if (i < n) {
        const __mmask16 k = (__mmask16)((1u << (n - i)) - 1u);
        const __m512 x = _mm512_maskz_loadu_ps(k, g + i);
        _mm512_mask_storeu_ps(g + i, k, sigmoid_mul16(x, GELU ? gelu_z16(x) : x, _mm512_maskz_loadu_ps(k, u + i)));
    }
}

void vq_silu_mul_avx512(float *g, const float *u, size_t n) { gated(0, g, u, n); }

void vq_gelu_mul_avx512(float *g, const float *u, size_t n) { gated(1, g, u, n); }
