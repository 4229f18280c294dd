/* lut8_tables_avx2.c -- the AVX2 twin of vq_lut8_tables
 * (kernels/lut8_tables.h): the reference's bytes, by the AVX-512 twin's
 * steps on 8 lanes (lut8_tables_avx512.c); 32 truncated values a step
 * narrowed to bytes by two packs (their values are 0..255) and one dword
 * permute back to index order. */
#include <immintrin.h>
#include <string.h>

#include "kernels/lut8_tables.h"

void vq_lut8_tables_avx2(const float *lut, int M, uint8_t *qbuf)
{
    float bias = 0.0f, range = 0.0f, lo[256];
    for (int m = 0; m < M; m++) {
        const float *l = lut + (size_t)m * 256;
        __m256 mn[4], mx[4];
        for (int u = 0; u < 4; u++)
            mn[u] = mx[u] = _mm256_set1_ps(l[0]);
        for (int k = 0; k < 256; k += 32)
            for (int u = 0; u < 4; u++) {
                const __m256 v = _mm256_loadu_ps(l + k + 8 * u);
                mn[u] = _mm256_min_ps(v, mn[u]);
                mx[u] = _mm256_max_ps(v, mx[u]);
            }
        __m256 a8 = _mm256_min_ps(_mm256_min_ps(mn[0], mn[1]), _mm256_min_ps(mn[2], mn[3]));
        __m256 b8 = _mm256_max_ps(_mm256_max_ps(mx[0], mx[1]), _mm256_max_ps(mx[2], mx[3]));
        __m128 a4 = _mm_min_ps(_mm256_castps256_ps128(a8), _mm256_extractf128_ps(a8, 1));
        __m128 b4 = _mm_max_ps(_mm256_castps256_ps128(b8), _mm256_extractf128_ps(b8, 1));
        a4 = _mm_min_ps(a4, _mm_movehl_ps(a4, a4));
        b4 = _mm_max_ps(b4, _mm_movehl_ps(b4, b4));
        const float a = _mm_cvtss_f32(_mm_min_ss(a4, _mm_shuffle_ps(a4, a4, 1)));
        const float b = _mm_cvtss_f32(_mm_max_ss(b4, _mm_shuffle_ps(b4, b4, 1)));
        lo[m] = a;
        bias += a;
        range = b - a > range ? b - a : range;
    }
    const float delta = range / 255.0f, inv = range > 0.0f ? 255.0f / range : 0.0f;
    const __m256 vinv = _mm256_set1_ps(inv), half = _mm256_set1_ps(0.5f), top = _mm256_set1_ps(255.0f);
    const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
    uint8_t *T = qbuf + VQ_L8_HEAD;
    for (int m = 0; m < M; m++) {
        const float *l = lut + (size_t)m * 256;
        const __m256 lom = _mm256_set1_ps(lo[m]);
        for (int k = 0; k < 256; k += 32) {
            __m256i r[4];
            for (int u = 0; u < 4; u++) {
                __m256 v = _mm256_add_ps(_mm256_mul_ps(_mm256_sub_ps(_mm256_loadu_ps(l + k + 8 * u), lom), vinv), half);
                v = _mm256_min_ps(_mm256_max_ps(v, _mm256_setzero_ps()), top);
                r[u] = _mm256_cvttps_epi32(v);
            }
            const __m256i b = _mm256_packus_epi16(_mm256_packs_epi32(r[0], r[1]), _mm256_packs_epi32(r[2], r[3]));
            _mm256_storeu_si256((__m256i *)(void *)(T + (size_t)m * 256 + (size_t)k), _mm256_permutevar8x32_epi32(b, order));
        }
    }
    memcpy(qbuf, &bias, sizeof bias);
    memcpy(qbuf + sizeof bias, &delta, sizeof delta);
}
