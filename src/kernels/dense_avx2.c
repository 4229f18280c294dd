/* dense_avx2.c -- AVX2/FMA twins of dense.h's kernels on float rows (IEEE
 * half rows, or E not a multiple of 8, go to the scalar reference). Compiled with -mavx2 -mfma. Each output is
 * computed the same way whatever the tile size or the number of queries,
 * so a batch of queries gets bit-identical results to one at a time. */
#include <immintrin.h>

#include "kernels/dense.h"

/* [sum(a0), sum(a1), sum(a2), sum(a3)] */
static inline __m128 hsum4(__m256 a0, __m256 a1, __m256 a2, __m256 a3)
{
    __m256 t = _mm256_hadd_ps(_mm256_hadd_ps(a0, a1), _mm256_hadd_ps(a2, a3));
    return _mm_add_ps(_mm256_castps256_ps128(t), _mm256_extractf128_ps(t, 1));
}

/* dot over float rows, E a multiple of 8 */
static void dot8(const float *q, size_t qstride, int n_q, const float *v, size_t nt, size_t E, float *s, size_t sstride)
{
    for (int j = 0; j < n_q; j++) {
        const float *qj = q + (size_t)j * qstride;
        float *sj = s + (size_t)j * sstride;
        for (size_t i = 0; i < nt; i += 4) { /* four vectors share each load of q */
            /* past the end, repeat the last vector: every score is summed in
             * the same order wherever it sits in the tile (batch-invariant) */
            const float *v0 = v + i * E;
            const float *v1 = i + 1 < nt ? v0 + E : v0, *v2 = i + 2 < nt ? v0 + 2 * E : v1;
            const float *v3 = i + 3 < nt ? v0 + 3 * E : v2;
            __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
            for (size_t e = 0; e < E; e += 8) {
                __m256 x = _mm256_loadu_ps(qj + e);
                a0 = _mm256_fmadd_ps(x, _mm256_loadu_ps(v0 + e), a0);
                a1 = _mm256_fmadd_ps(x, _mm256_loadu_ps(v1 + e), a1);
                a2 = _mm256_fmadd_ps(x, _mm256_loadu_ps(v2 + e), a2);
                a3 = _mm256_fmadd_ps(x, _mm256_loadu_ps(v3 + e), a3);
            }
            __m128 r = hsum4(a0, a1, a2, a3);
            if (i + 4 <= nt) {
                _mm_storeu_ps(sj + i, r);
            } else {
                float t[4];
                _mm_storeu_ps(t, r);
                for (size_t k = 0; i + k < nt; k++)
                    sj[i + k] = t[k];
            }
        }
    }
}

/* axpy over float rows, E a multiple of 8 */
static void axpy8(const float *w, size_t wstride, int n_q, const float *v, size_t nt, size_t E, float *acc,
                  size_t astride)
{
    for (int j = 0; j < n_q; j++) {
        const float *wj = w + (size_t)j * wstride;
        float *a = acc + (size_t)j * astride;
        size_t e = 0;
        for (; e + 32 <= E; e += 32) { /* 32 accumulators stay in registers over the tile */
            __m256 a0 = _mm256_loadu_ps(a + e), a1 = _mm256_loadu_ps(a + e + 8);
            __m256 a2 = _mm256_loadu_ps(a + e + 16), a3 = _mm256_loadu_ps(a + e + 24);
            for (size_t i = 0; i < nt; i++) {
                __m256 x = _mm256_set1_ps(wj[i]);
                const float *vi = v + i * E + e;
                a0 = _mm256_fmadd_ps(x, _mm256_loadu_ps(vi), a0);
                a1 = _mm256_fmadd_ps(x, _mm256_loadu_ps(vi + 8), a1);
                a2 = _mm256_fmadd_ps(x, _mm256_loadu_ps(vi + 16), a2);
                a3 = _mm256_fmadd_ps(x, _mm256_loadu_ps(vi + 24), a3);
            }
            _mm256_storeu_ps(a + e, a0);
            _mm256_storeu_ps(a + e + 8, a1);
            _mm256_storeu_ps(a + e + 16, a2);
            _mm256_storeu_ps(a + e + 24, a3);
        }
        for (; e < E; e += 8) {
            __m256 a0 = _mm256_loadu_ps(a + e);
            for (size_t i = 0; i < nt; i++)
                a0 = _mm256_fmadd_ps(_mm256_set1_ps(wj[i]), _mm256_loadu_ps(v + i * E + e), a0);
            _mm256_storeu_ps(a + e, a0);
        }
    }
}

/* the exported kernel NAME: LOOPS on float rows with E a multiple of 8,
 * anything else (half rows included) the scalar reference REF */
#define DENSE_ENTRY(NAME, LOOPS, REF)                                                                           \
    void NAME(const float *x, size_t xstride, int n_q, const void *v, vq_elem elem, size_t nt, size_t E,      \
              float *out, size_t ostride)                                                                     \
    {                                                                                                         \
        if (elem == VQ_ELEM_F32 && E % 8 == 0)                                                                \
            LOOPS(x, xstride, n_q, v, nt, E, out, ostride);                                                   \
        else                                                                                                  \
            REF(x, xstride, n_q, v, elem, nt, E, out, ostride);                                               \
    }

DENSE_ENTRY(vq_dense_dot_avx2, dot8, vq_dense_dot_ref)
DENSE_ENTRY(vq_dense_axpy_avx2, axpy8, vq_dense_axpy_ref)
