/* ftab_score_avx512.c -- kernels.h ftab_score with AVX-512F:
 * the float tables of kernels/float_tables.h looked up 16 tokens at a time.
 *
 * A group of 16 tokens is cut into 4-byte units (units16_avx512.h: unit u
 * of token t in lane t), so that the low 4 bits of a lane, shifted by 4q,
 * are the token's nibble 8u + q: one VPERMPS against that nibble's table
 * (16 floats, one register) gives the 16 tokens' entries, and one add per
 * nibble keeps each token's sum in the reference's order (from 0, nibble
 * 0, 1, ...). The per-token float steps are the reference's, so the scores
 * have its bits. The nibbles' shifts are shared by the queries of a pass
 * (up to 4, both sets: 8 independent sums). */
#include <immintrin.h>
#include <stdalign.h>

#include "kernels/kernels.h"
#include "kernels/prefetch.h"
#include "kernels/rows16_avx512.h"
#include "kernels/tail_rows.h"
#include "kernels/units16_avx512.h"

#define SF_MAXU 32 /* 4-byte units of a set: m <= 1024 */
#define SF_PASS 4  /* queries per lookup pass */
#define SF_AHEAD 4 /* groups fetched ahead */

/* NQ queries (tables at tab + j*tstride), one or TWO sets: the scores of
 * the group's live lanes into s + j*sstride */
static inline __attribute__((always_inline)) void lookup_pass(const int NQ, const int TWO, __m512i U[2][SF_MAXU],
                                                              size_t nu, const float *tab, size_t tstride, __m512 w0,
                                                              __m512 w1, __m512 H, float *s, size_t sstride,
                                                              __mmask16 live)
{
    __m512 A[2][SF_PASS];
    _Pragma("GCC unroll 4") for (int j = 0; j < SF_PASS; j++) A[0][j] = A[1][j] = _mm512_setzero_ps();
    for (size_t u = 0; u < nu; u++) {
        __m512i x0 = U[0][u], x1 = TWO ? U[1][u] : x0;
        const float *t = tab + 128 * u;
        _Pragma("GCC unroll 8") for (int q = 0; q < 8; q++)
        {
            _Pragma("GCC unroll 4") for (int j = 0; j < NQ; j++)
            {
                const __m512 T = _mm512_loadu_ps(t + 16 * q + (size_t)j * tstride);
                A[0][j] = _mm512_add_ps(A[0][j], _mm512_permutexvar_ps(x0, T));
                if (TWO)
                    A[1][j] = _mm512_add_ps(A[1][j], _mm512_permutexvar_ps(x1, T));
            }
            x0 = _mm512_srli_epi32(x0, 4);
            if (TWO)
                x1 = _mm512_srli_epi32(x1, 4);
        }
    }
    _Pragma("GCC unroll 4") for (int j = 0; j < NQ; j++)
    {
        __m512 x = _mm512_mul_ps(w0, A[0][j]);
        if (TWO)
            x = _mm512_add_ps(x, _mm512_mul_ps(w1, A[1][j]));
        _mm512_mask_storeu_ps(s + (size_t)j * sstride, live, _mm512_mul_ps(H, x));
    }
}

/* lookup_pass with the count nq (1..SF_PASS) and the sets constants */
static void lookup_any(int nq, int two, __m512i U[2][SF_MAXU], size_t nu, const float *tab, size_t tstride,
                       __m512 w0, __m512 w1, __m512 H, float *s, size_t sstride, __mmask16 live)
{
#define SF_CASE(N)                                                                      \
    case N:                                                                             \
        if (two)                                                                        \
            lookup_pass(N, 1, U, nu, tab, tstride, w0, w1, H, s, sstride, live);        \
        else                                                                            \
            lookup_pass(N, 0, U, nu, tab, tstride, w0, w1, H, s, sstride, live);        \
        break;
    switch (nq) {
        SF_CASE(4)
        SF_CASE(3)
        SF_CASE(2)
    default:
        SF_CASE(1)
    }
#undef SF_CASE
}

void vq_ftab_score_avx512(const uint8_t *codes, size_t stride, size_t n, size_t m, const size_t *offs,
                          const float *w, int n_sets, const float *f, size_t hoff, const float *tabs, size_t tstride,
                          int n_q, float *s, size_t sstride)
{
    if (m % 32 || m > 32 * SF_MAXU || n_sets < 1 || n_sets > 2) {
        vq_ftab_score_ref(codes, stride, n, m, offs, w, n_sets, f, hoff, tabs, tstride, n_q, s, sstride);
        return;
    }
    const size_t nu = m / 32, nbytes = m / 8;
    const int two = n_sets == 2;
    alignas(64) __m512i U[2][SF_MAXU];
    alignas(64) uint8_t tail[16 * 2 * 4 * SF_MAXU]; /* the last tokens' sets side by side, the rest 0 */
    const __m512i rix = vq_rows16_index(stride), tix = vq_rows16_index(2 * nbytes);
    const __m512 w0 = _mm512_set1_ps(w[0]), w1 = _mm512_set1_ps(two ? w[1] : 0.0f);
    for (size_t i = 0; i < n; i += 16) {
        const size_t have = n - i < 16 ? n - i : 16;
        const uint8_t *blk = codes + i * stride;
        vq_prefetch_span(blk, SF_AHEAD * 16 * stride, 16 * stride);
        if (have == 16) {
            for (int k = 0; k < n_sets; k++)
                vq_units16_load(blk + offs[k], stride, nu, rix, U[k]);
        } else {
            vq_tail_rows(tail, 16, 2, blk, stride, have, offs, n_sets, nbytes);
            for (int k = 0; k < n_sets; k++)
                vq_units16_load(tail + (size_t)k * nbytes, 2 * nbytes, nu, tix, U[k]);
        }
        const __mmask16 live = vq_rows16_live(have);
        const __m512 H = f ? _mm512_maskz_loadu_ps(live, f + i) : vq_rows16_halves(blk, hoff, stride, rix, have);
        for (int j0 = 0; j0 < n_q; j0 += SF_PASS)
            lookup_any(n_q - j0 < SF_PASS ? n_q - j0 : SF_PASS, two, U, nu, tabs + (size_t)j0 * tstride, tstride,
                       w0, w1, H, s + (size_t)j0 * sstride + i, sstride, live);
    }
}
