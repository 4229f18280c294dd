/* lut8_tables_avx512.c -- the AVX-512 twin of vq_lut8_tables
 * (kernels/lut8_tables.h): the reference's bytes. Each table's minimum and
 * maximum by VMINPS / VMAXPS with the new entries first (v < m ? v : m: the
 * reference's comparison, so a NaN entry is passed over and a NaN first
 * entry kept) in four registers started from entry 0, then reduced across
 * them and the lanes (the same order-free extremes); the rounding as the
 * reference's three operations, held by VMAXPS against 0 (NaN to 0) and
 * VMINPS against 255, truncated, and narrowed to bytes by VPMOVDB. */
#include <immintrin.h>
#include <string.h>

#include "kernels/lut8_tables.h"

void vq_lut8_tables_avx512(const float *lut, int M, uint8_t *qbuf)
{
    float bias = 0.0f, range = 0.0f, lo[256];
    for (int m = 0; m < M; m++) {
        const float *l = lut + (size_t)m * 256;
        __m512 mn[4], mx[4];
        for (int u = 0; u < 4; u++)
            mn[u] = mx[u] = _mm512_set1_ps(l[0]);
        for (int k = 0; k < 256; k += 64)
            for (int u = 0; u < 4; u++) {
                const __m512 v = _mm512_loadu_ps(l + k + 16 * u);
                mn[u] = _mm512_min_ps(v, mn[u]);
                mx[u] = _mm512_max_ps(v, mx[u]);
            }
        const float a = _mm512_reduce_min_ps(_mm512_min_ps(_mm512_min_ps(mn[0], mn[1]), _mm512_min_ps(mn[2], mn[3])));
        const float b = _mm512_reduce_max_ps(_mm512_max_ps(_mm512_max_ps(mx[0], mx[1]), _mm512_max_ps(mx[2], mx[3])));
        lo[m] = a;
        bias += a;
        range = b - a > range ? b - a : range;
    }
    const float delta = range / 255.0f, inv = range > 0.0f ? 255.0f / range : 0.0f;
    const __m512 vinv = _mm512_set1_ps(inv), half = _mm512_set1_ps(0.5f), top = _mm512_set1_ps(255.0f);
    uint8_t *T = qbuf + VQ_L8_HEAD;
    for (int m = 0; m < M; m++) {
        const float *l = lut + (size_t)m * 256;
        const __m512 lom = _mm512_set1_ps(lo[m]);
        for (int k = 0; k < 256; k += 16) {
            __m512 v = _mm512_add_ps(_mm512_mul_ps(_mm512_sub_ps(_mm512_loadu_ps(l + k), lom), vinv), half);
            v = _mm512_min_ps(_mm512_max_ps(v, _mm512_setzero_ps()), top);
            _mm_storeu_si128((__m128i *)(void *)(T + (size_t)m * 256 + (size_t)k),
                             _mm512_cvtepi32_epi8(_mm512_cvttps_epi32(v)));
        }
    }
    memcpy(qbuf, &bias, sizeof bias);
    memcpy(qbuf + sizeof bias, &delta, sizeof delta);
}
