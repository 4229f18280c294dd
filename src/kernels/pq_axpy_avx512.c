/* pq_axpy_avx512.c -- AVX-512 twin of kernels.h pq_axpy: the reference's
 * bits. Compiled with -mavx512f; reached through the kernel table.
 *
 * The row is taken 64 values (4 registers) at a time, up to four weight
 * rows per pass, their sums in registers over all nt tokens: per token the
 * register of values c0 + 16z..+15 is the centroids of its 2 (sd 8) or 4
 * (sd 4) pieces, loaded and put side by side, then one FMA per weight row:
 * per element the reference's fmaf in token order. */
#include <immintrin.h>

#include "kernels/kernels.h"

#define PQ_MAXQ 4 /* weight rows per pass */

/* the 16 values of pieces m.. of a row: centroids of `row`'s codes */
static inline __attribute__((always_inline)) __m512 pq_values16(const int SD, const float *cb, size_t K,
                                                                const uint8_t *row, size_t m)
{
    if (SD == 8)
        return _mm512_insertf32x8(_mm512_castps256_ps512(_mm256_loadu_ps(cb + (m * K + row[m]) * 8)),
                                  _mm256_loadu_ps(cb + ((m + 1) * K + row[m + 1]) * 8), 1);
    __m512 v = _mm512_castps128_ps512(_mm_loadu_ps(cb + (m * K + row[m]) * 4));
    v = _mm512_insertf32x4(v, _mm_loadu_ps(cb + ((m + 1) * K + row[m + 1]) * 4), 1);
    v = _mm512_insertf32x4(v, _mm_loadu_ps(cb + ((m + 2) * K + row[m + 2]) * 4), 2);
    return _mm512_insertf32x4(v, _mm_loadu_ps(cb + ((m + 3) * K + row[m + 3]) * 4), 3);
}

/* values [c0, c0 + 16*NZ) of NJ weight rows over all tokens */
static inline __attribute__((always_inline)) void pq_chunk(const int SD, const int NJ, const int NZ,
                                                           const uint8_t *codes, size_t stride, size_t nt, size_t c0,
                                                           const float *cb, size_t K, const float *w, size_t wstride,
                                                           float *acc, size_t astride)
{
    __m512 A[PQ_MAXQ][4];
    _Pragma("GCC unroll 4") for (int j = 0; j < NJ; j++)
        _Pragma("GCC unroll 4") for (int z = 0; z < NZ; z++)
            A[j][z] = _mm512_loadu_ps(acc + (size_t)j * astride + c0 + 16 * (size_t)z);
    const size_t m0 = c0 / (size_t)SD;
    for (size_t i = 0; i < nt; i++) {
        const uint8_t *row = codes + i * stride;
        __m512 V[4];
        _Pragma("GCC unroll 4") for (int z = 0; z < NZ; z++)
            V[z] = pq_values16(SD, cb, K, row, m0 + (size_t)z * (16 / (size_t)SD));
        _Pragma("GCC unroll 4") for (int j = 0; j < NJ; j++)
        {
            const __m512 wv = _mm512_set1_ps(w[(size_t)j * wstride + i]);
            _Pragma("GCC unroll 4") for (int z = 0; z < NZ; z++)
                A[j][z] = _mm512_fmadd_ps(wv, V[z], A[j][z]);
        }
    }
    _Pragma("GCC unroll 4") for (int j = 0; j < NJ; j++)
        _Pragma("GCC unroll 4") for (int z = 0; z < NZ; z++)
            _mm512_storeu_ps(acc + (size_t)j * astride + c0 + 16 * (size_t)z, A[j][z]);
}

#define PQ_NZ(SD, NJ, nz, ...)                                                                                         \
    switch (nz) {                                                                                                      \
    case 4: pq_chunk(SD, NJ, 4, __VA_ARGS__); break;                                                                   \
    case 3: pq_chunk(SD, NJ, 3, __VA_ARGS__); break;                                                                   \
    case 2: pq_chunk(SD, NJ, 2, __VA_ARGS__); break;                                                                   \
    default: pq_chunk(SD, NJ, 1, __VA_ARGS__); break;                                                                  \
    }

static inline __attribute__((always_inline)) void pq_rows(const int SD, const uint8_t *codes, size_t stride,
                                                          size_t nt, size_t D, const float *cb, size_t K,
                                                          const float *w, size_t wstride, int n_q, float *acc,
                                                          size_t astride)
{
    for (int j0 = 0; j0 < n_q; j0 += PQ_MAXQ) {
        const int nj = n_q - j0 < PQ_MAXQ ? n_q - j0 : PQ_MAXQ;
        const float *wj = w + (size_t)j0 * wstride;
        float *aj = acc + (size_t)j0 * astride;
        for (size_t c0 = 0; c0 < D; c0 += 64) {
            const size_t nz = (D - c0 < 64 ? D - c0 : 64) / 16;
            switch (nj) { /* constant counts: the sums stay in registers */
            case 4: PQ_NZ(SD, 4, nz, codes, stride, nt, c0, cb, K, wj, wstride, aj, astride) break;
            case 3: PQ_NZ(SD, 3, nz, codes, stride, nt, c0, cb, K, wj, wstride, aj, astride) break;
            case 2: PQ_NZ(SD, 2, nz, codes, stride, nt, c0, cb, K, wj, wstride, aj, astride) break;
            default: PQ_NZ(SD, 1, nz, codes, stride, nt, c0, cb, K, wj, wstride, aj, astride) break;
            }
        }
    }
}

void vq_pq_axpy_avx512(const uint8_t *codes, size_t stride, size_t nt, size_t M, size_t sd, const float *cb,
                       size_t K, const float *w, size_t wstride, int n_q, float *acc, size_t astride)
{
    const size_t D = M * sd;
    if ((sd != 4 && sd != 8) || D % 16) {
        vq_pq_axpy_ref(codes, stride, nt, M, sd, cb, K, w, wstride, n_q, acc, astride);
        return;
    }
    if (sd == 8)
        pq_rows(8, codes, stride, nt, D, cb, K, w, wstride, n_q, acc, astride);
    else
        pq_rows(4, codes, stride, nt, D, cb, K, w, wstride, n_q, acc, astride);
}
