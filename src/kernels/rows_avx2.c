/* rows_avx2.c -- AVX2 + FMA + F16C twin of kernels.h kivi_axpy, with the
 * reference's bits: per row t = s * c (the group's scale), one FMA w * t
 * per accumulator element, wm = fma(w, m, wm) per group, and the min sum
 * added after the last row.
 *
 * Columns go 16 at a time (two registers of eight); group % 16 == 0, so
 * the 16 columns share one group's scale and minimum. Eight codes of b
 * bits (b = 2 or 4) are 2b bytes: every lane takes the same dword and
 * shifts it by b * lane. */
#include <immintrin.h>
#include <string.h>

#include "kernels/kernels.h"
#include "kernels/prefetch.h"

static inline __m256i codes8(const uint8_t *p, int b, __m256i shifts, __m256i mask)
{
    uint32_t x = 0;
    memcpy(&x, p, (size_t)b); /* 2 bits: 2 bytes; 4 bits: 4 bytes */
    return _mm256_and_si256(_mm256_srlv_epi32(_mm256_set1_epi32((int)x), shifts), mask);
}

static inline float half_at(const uint8_t *p, size_t k)
{
    uint16_t h;
    memcpy(&h, p + 2 * k, 2);
    return _cvtsh_ss(h);
}

/* columns [c0, c0 + 16) for weight rows j0 .. j0 + NQ - 1 (NQ 1..4) */
static inline __attribute__((always_inline)) void
kivi_axpy16(const uint8_t *rows, size_t rstride, const int BITS, size_t nt, size_t ng, size_t g, size_t c0,
            const float *w, size_t wstride, int j0, const int NQ, float *acc, size_t astride)
{
    const __m256i sh = _mm256_mullo_epi32(_mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7), _mm256_set1_epi32(BITS));
    const __m256i mask = _mm256_set1_epi32((1 << BITS) - 1);
    __m256 A[4][2];
    __m128 WM[4];
    for (int jj = 0; jj < NQ; jj++) {
        WM[jj] = _mm_setzero_ps();
        A[jj][0] = _mm256_loadu_ps(acc + (size_t)(j0 + jj) * astride + c0);
        A[jj][1] = _mm256_loadu_ps(acc + (size_t)(j0 + jj) * astride + c0 + 8);
    }
    for (size_t i = 0; i < nt; i++) {
        const uint8_t *r = rows + i * rstride;
        if (c0 == 0) /* the first column pass streams the rows */
            vq_prefetch_span(r, VQ_PF_AHEAD, rstride);
        const __m256 s = _mm256_set1_ps(half_at(r, g));
        const __m128 m = _mm_set_ss(half_at(r + 2 * ng, g));
        const uint8_t *codes = r + 4 * ng + c0 * (size_t)BITS / 8;
        const __m256 t0 = _mm256_mul_ps(s, _mm256_cvtepi32_ps(codes8(codes, BITS, sh, mask)));
        const __m256 t1 = _mm256_mul_ps(s, _mm256_cvtepi32_ps(codes8(codes + BITS, BITS, sh, mask)));
        for (int jj = 0; jj < NQ; jj++) {
            const float wi = w[(size_t)(j0 + jj) * wstride + i];
            const __m256 x = _mm256_set1_ps(wi);
            A[jj][0] = _mm256_fmadd_ps(x, t0, A[jj][0]);
            A[jj][1] = _mm256_fmadd_ps(x, t1, A[jj][1]);
            WM[jj] = _mm_fmadd_ss(_mm_set_ss(wi), m, WM[jj]);
        }
    }
    for (int jj = 0; jj < NQ; jj++) {
        const __m256 wm = _mm256_set1_ps(_mm_cvtss_f32(WM[jj]));
        _mm256_storeu_ps(acc + (size_t)(j0 + jj) * astride + c0, _mm256_add_ps(A[jj][0], wm));
        _mm256_storeu_ps(acc + (size_t)(j0 + jj) * astride + c0 + 8, _mm256_add_ps(A[jj][1], wm));
    }
}

static inline __attribute__((always_inline)) void kivi_axpy_bits(const uint8_t *rows, size_t rstride, const int BITS,
                                                                 size_t nt, size_t D, size_t group, const float *w,
                                                                 size_t wstride, int n_q, float *acc, size_t astride)
{
    const size_t ng = D / group;
    for (int j0 = 0; j0 < n_q; j0 += 4) {
        const int nq = n_q - j0 < 4 ? n_q - j0 : 4;
        for (size_t c0 = 0; c0 < D; c0 += 16) {
            const size_t g = c0 / group;
            switch (nq) {
            case 4: kivi_axpy16(rows, rstride, BITS, nt, ng, g, c0, w, wstride, j0, 4, acc, astride); break;
            case 3: kivi_axpy16(rows, rstride, BITS, nt, ng, g, c0, w, wstride, j0, 3, acc, astride); break;
            case 2: kivi_axpy16(rows, rstride, BITS, nt, ng, g, c0, w, wstride, j0, 2, acc, astride); break;
            default: kivi_axpy16(rows, rstride, BITS, nt, ng, g, c0, w, wstride, j0, 1, acc, astride); break;
            }
        }
    }
}

void vq_kivi_axpy_avx2(const uint8_t *rows, size_t rstride, int bits, size_t nt, size_t D, size_t group,
                       const float *w, size_t wstride, int n_q, float *acc, size_t astride)
{
    if ((bits != 2 && bits != 4) || D % 16 || group % 16) {
        vq_kivi_axpy_ref(rows, rstride, bits, nt, D, group, w, wstride, n_q, acc, astride);
        return;
    }
    if (bits == 2)
        kivi_axpy_bits(rows, rstride, 2, nt, D, group, w, wstride, n_q, acc, astride);
    else
        kivi_axpy_bits(rows, rstride, 4, nt, D, group, w, wstride, n_q, acc, astride);
}
