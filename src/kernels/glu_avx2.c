/* glu_avx2.c -- AVX2 + FMA twins of glu.h's gated products: the AVX-512
 * twins' steps on 8 lanes (x * sigmoid(z) with e = exp(-|z|) from
 * core/vexp_avx2.h: x / (1 + e) for z >= 0, x * e / (1 + e) below, then
 * the product), so the same bits as those; the tail is padded into a
 * buffer and only its n - i lanes are stored. */
#include <immintrin.h>
#include <string.h>

#include "core/vexp_avx2.h"
#include "kernels/glu.h"

/* x * sigmoid(z) * u: e = exp(-|z|) <= 1, so neither branch overflows */
static inline __m256 sigmoid_mul8(__m256 x, __m256 z, __m256 u)
{
    const __m256 absz = _mm256_andnot_ps(_mm256_set1_ps(-0.0f), z);
    const __m256 e = vq_exp_neg8(_mm256_sub_ps(_mm256_setzero_ps(), absz));
    const __m256 num = _mm256_blendv_ps(x, _mm256_mul_ps(x, e), _mm256_cmp_ps(z, _mm256_setzero_ps(), _CMP_LT_OQ));
    return _mm256_mul_ps(_mm256_div_ps(num, _mm256_add_ps(e, _mm256_set1_ps(1.0f))), u);
}

/* GELU's z = 2k (x + 0.044715 x^3) */
static inline __m256 gelu_z8(__m256 x)
{
    const __m256 x3 = _mm256_mul_ps(_mm256_mul_ps(x, x), x);
    return _mm256_mul_ps(_mm256_set1_ps(2.0f * 0.7978845608028654f),
                         _mm256_fmadd_ps(_mm256_set1_ps(0.044715f), x3, x));
}

static inline __attribute__((always_inline)) void gated(const int GELU, float *g, const float *u, size_t n)
{
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m256 x = _mm256_loadu_ps(g + i);
        _mm256_storeu_ps(g + i, sigmoid_mul8(x, GELU ? gelu_z8(x) : x, _mm256_loadu_ps(u + i)));
    }
    if (i < n) {
        float tg[8] = { 0 }, tu[8] = { 0 };
        memcpy(tg, g + i, sizeof(float) * (n - i));
        memcpy(tu, u + i, sizeof(float) * (n - i));
        const __m256 x = _mm256_loadu_ps(tg);
        _mm256_storeu_ps(tg, sigmoid_mul8(x, GELU ? gelu_z8(x) : x, _mm256_loadu_ps(tu)));
        memcpy(g + i, tg, sizeof(float) * (n - i));
    }
}

void vq_silu_mul_avx2(float *g, const float *u, size_t n) { gated(0, g, u, n); }

void vq_gelu_mul_avx2(float *g, const float *u, size_t n) { gated(1, g, u, n); }
