/* vexp_avx2.c -- AVX2/FMA twin of vq_exp_shift_ref (see vexp.h).
 * exp(t) = 2^k * exp(r), k = round(t / ln 2), r = t - k ln 2 (ln 2 split in
 * two parts so r is exact enough), exp(r) by the minimax polynomial used
 * by Cephes' expf on |r| <= ln(2)/2. */
#include <immintrin.h>
#include <math.h>
#include <string.h>

#include "core/vexp.h"

static inline __m256 exp_neg(__m256 t) /* t <= 0 */
{
    const __m256 lo = _mm256_set1_ps(-87.3f);
    __m256 under = _mm256_cmp_ps(t, lo, _CMP_LT_OQ); /* also -inf */
    t = _mm256_max_ps(t, lo);
    __m256 k = _mm256_round_ps(_mm256_mul_ps(t, _mm256_set1_ps(1.44269504088896341f)),
                               _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m256 r = _mm256_fnmadd_ps(k, _mm256_set1_ps(0.693359375f), t);
    r = _mm256_fnmadd_ps(k, _mm256_set1_ps(-2.12194440e-4f), r);
    __m256 p = _mm256_set1_ps(1.9875691500e-4f);
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.3981999507e-3f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(8.3334519073e-3f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.1665795894e-2f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.6666665459e-1f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(5.0000001201e-1f));
    __m256 r2 = _mm256_mul_ps(r, r);
    p = _mm256_fmadd_ps(p, r2, _mm256_add_ps(r, _mm256_set1_ps(1.0f)));
    __m256i e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(k), _mm256_set1_epi32(127)), 23);
    p = _mm256_mul_ps(p, _mm256_castsi256_ps(e));
    return _mm256_andnot_ps(under, p);
}

/* Each x[i] gets the same polynomial wherever it sits (the tail is padded,
 * not sent to expf); the sum runs in 16 lanes as the AVX-512 twin's (two
 * registers of 8), so both return the same bits. */
float vq_exp_shift_avx2(float *x, size_t n, float m)
{
    __m256 vm = _mm256_set1_ps(m), acc[2] = { _mm256_setzero_ps(), _mm256_setzero_ps() };
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256 y = exp_neg(_mm256_sub_ps(_mm256_loadu_ps(x + i), vm));
        _mm256_storeu_ps(x + i, y);
        acc[(i / 8) % 2] = _mm256_add_ps(acc[(i / 8) % 2], y);
    }
    if (i < n) {
        float t[8];
        for (size_t k = 0; k < 8; k++)
            t[k] = i + k < n ? x[i + k] : -INFINITY;
        __m256 y = exp_neg(_mm256_sub_ps(_mm256_loadu_ps(t), vm));
        _mm256_storeu_ps(t, y);
        memcpy(x + i, t, sizeof(float) * (n - i));
        acc[(i / 8) % 2] = _mm256_add_ps(acc[(i / 8) % 2], y);
    }
    float l[16];
    _mm256_storeu_ps(l, acc[0]);
    _mm256_storeu_ps(l + 8, acc[1]);
    return vq_sum16_lanes(l);
}
