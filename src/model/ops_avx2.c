/* ops_avx2.c -- AVX2/FMA variants of ops.h's vector kernels. Compiled with
 * -mavx2 -mfma; called only after run-time dispatch (ops.c). */
#include <immintrin.h>

#include "model/ops.h"

float vq_vdot_avx2(const float *a, const float *b, size_t n)
{
    __m256 s0 = _mm256_setzero_ps(), s1 = _mm256_setzero_ps();
    size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        s0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), s0);
        s1 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 8), _mm256_loadu_ps(b + i + 8), s1);
    }
    for (; i + 8 <= n; i += 8)
        s0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), s0);
    s0 = _mm256_add_ps(s0, s1);
    __m128 h = _mm_add_ps(_mm256_castps256_ps128(s0), _mm256_extractf128_ps(s0, 1));
    h = _mm_add_ps(h, _mm_movehl_ps(h, h));
    h = _mm_add_ss(h, _mm_shuffle_ps(h, h, 1));
    float t = _mm_cvtss_f32(h);
    for (; i < n; i++)
        t += a[i] * b[i];
    return t;
}

void vq_vaxpy_avx2(float *y, float a, const float *x, size_t n)
{
    __m256 va = _mm256_set1_ps(a);
    size_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(y + i, _mm256_fmadd_ps(va, _mm256_loadu_ps(x + i), _mm256_loadu_ps(y + i)));
    for (; i < n; i++)
        y[i] += a * x[i];
}

/* Same operation order as vq_vdot_avx2 for each row. */
void vq_vdot_rows_avx2(const float *q, const float *K, size_t n, size_t d, float scale, float *out)
{
    if (d == 64) { /* the common head size: q stays in registers */
        __m256 q0 = _mm256_loadu_ps(q), q1 = _mm256_loadu_ps(q + 8);
        __m256 q2 = _mm256_loadu_ps(q + 16), q3 = _mm256_loadu_ps(q + 24);
        __m256 q4 = _mm256_loadu_ps(q + 32), q5 = _mm256_loadu_ps(q + 40);
        __m256 q6 = _mm256_loadu_ps(q + 48), q7 = _mm256_loadu_ps(q + 56);
        for (size_t j = 0; j < n; j++) {
            const float *k = K + j * 64;
            __m256 s0 = _mm256_mul_ps(q0, _mm256_loadu_ps(k));
            __m256 s1 = _mm256_mul_ps(q1, _mm256_loadu_ps(k + 8));
            s0 = _mm256_fmadd_ps(q2, _mm256_loadu_ps(k + 16), s0);
            s1 = _mm256_fmadd_ps(q3, _mm256_loadu_ps(k + 24), s1);
            s0 = _mm256_fmadd_ps(q4, _mm256_loadu_ps(k + 32), s0);
            s1 = _mm256_fmadd_ps(q5, _mm256_loadu_ps(k + 40), s1);
            s0 = _mm256_fmadd_ps(q6, _mm256_loadu_ps(k + 48), s0);
            s1 = _mm256_fmadd_ps(q7, _mm256_loadu_ps(k + 56), s1);
            s0 = _mm256_add_ps(s0, s1);
            __m128 h = _mm_add_ps(_mm256_castps256_ps128(s0), _mm256_extractf128_ps(s0, 1));
            h = _mm_add_ps(h, _mm_movehl_ps(h, h));
            h = _mm_add_ss(h, _mm_shuffle_ps(h, h, 1));
            out[j] = scale * _mm_cvtss_f32(h);
        }
        return;
    }
    for (size_t j = 0; j < n; j++)
        out[j] = scale * vq_vdot_avx2(q, K + j * d, d);
}

/* y += p[j] * V_j for j in order; per element the same fmadd sequence as
 * repeated vq_vaxpy_avx2 calls. y is processed in tiles of 64 floats held in
 * registers across all rows. */
void vq_vaxpy_rows_avx2(float *y, const float *p, const float *V, size_t n, size_t d)
{
    size_t i = 0;
    for (; i + 64 <= d; i += 64) {
        __m256 y0 = _mm256_loadu_ps(y + i), y1 = _mm256_loadu_ps(y + i + 8);
        __m256 y2 = _mm256_loadu_ps(y + i + 16), y3 = _mm256_loadu_ps(y + i + 24);
        __m256 y4 = _mm256_loadu_ps(y + i + 32), y5 = _mm256_loadu_ps(y + i + 40);
        __m256 y6 = _mm256_loadu_ps(y + i + 48), y7 = _mm256_loadu_ps(y + i + 56);
        for (size_t j = 0; j < n; j++) {
            const float *v = V + j * d + i;
            __m256 a = _mm256_set1_ps(p[j]);
            y0 = _mm256_fmadd_ps(a, _mm256_loadu_ps(v), y0);
            y1 = _mm256_fmadd_ps(a, _mm256_loadu_ps(v + 8), y1);
            y2 = _mm256_fmadd_ps(a, _mm256_loadu_ps(v + 16), y2);
            y3 = _mm256_fmadd_ps(a, _mm256_loadu_ps(v + 24), y3);
            y4 = _mm256_fmadd_ps(a, _mm256_loadu_ps(v + 32), y4);
            y5 = _mm256_fmadd_ps(a, _mm256_loadu_ps(v + 40), y5);
            y6 = _mm256_fmadd_ps(a, _mm256_loadu_ps(v + 48), y6);
            y7 = _mm256_fmadd_ps(a, _mm256_loadu_ps(v + 56), y7);
        }
        _mm256_storeu_ps(y + i, y0);
        _mm256_storeu_ps(y + i + 8, y1);
        _mm256_storeu_ps(y + i + 16, y2);
        _mm256_storeu_ps(y + i + 24, y3);
        _mm256_storeu_ps(y + i + 32, y4);
        _mm256_storeu_ps(y + i + 40, y5);
        _mm256_storeu_ps(y + i + 48, y6);
        _mm256_storeu_ps(y + i + 56, y7);
    }
    if (i < d)
        for (size_t j = 0; j < n; j++)
            vq_vaxpy_avx2(y + i, p[j], V + j * d + i, d - i);
}
