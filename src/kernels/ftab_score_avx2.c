/* ftab_score_avx2.c -- kernels.h ftab_score with AVX2 (+F16C): the float
 * tables of kernels/float_tables.h looked up 8 tokens at a time.
 *
 * A group of 8 tokens is cut into 4-byte units (units8_avx2.h: unit u of
 * token t in lane t), so that the low 4 bits of a lane, shifted by 4q, are
 * the token's nibble 8u + q. A nibble's table (16 floats) is two registers,
 * entries 0-7 and 8-15: one VPERMPS of each by the lane (which reads its
 * low 3 bits) and a VBLENDVPS by bit 3 of the nibble (shifted to the sign
 * bit; vq_lookup16_ps) give the 8 tokens' entries, and one add per nibble
 * keeps each token's sum in the reference's order (from 0, nibble 0, 1,
 * ...). The lookup is exact and the per-token float steps are the
 * reference's (h * (w0 A0 (+ w1 A1)), each product and sum its own
 * intrinsic, rounded on its own: neither GCC under the build's -std=c11
 * nor clang contracts them into FMAs), so the scores have its bits. The
 * nibbles' shifts are shared by the queries of a pass (up to 4, both sets:
 * 8 independent sums).
 *
 * Handles m a multiple of 32 up to 1024 and one or two sets (else the
 * reference); no alignment needed; reads only the tokens' sets and the
 * 4 bytes of each row around its half factor (stride >= 4), writes only
 * s[j*sstride + i] for i < n, j < n_q. */
#include <immintrin.h>
#include <stdalign.h>

#include "kernels/kernels.h"
#include "kernels/prefetch.h"
#include "kernels/tail_rows.h"
#include "kernels/units8_avx2.h"

#define SF_MAXU 32 /* 4-byte units of a set: m <= 1024 */
#define SF_PASS 4  /* queries per lookup pass */
#define SF_AHEAD 8 /* groups fetched ahead */

/* NQ queries (tables at tab + j*tstride), one or TWO sets: the scores of
 * the group's live lanes into s + j*sstride */
static inline __attribute__((always_inline)) void lookup_pass(const int NQ, const int TWO, __m256i U[2][SF_MAXU],
                                                              size_t nu, const float *tab, size_t tstride, __m256 w0,
                                                              __m256 w1, __m256 H, float *s, size_t sstride,
                                                              size_t have, __m256i live)
{
    __m256 A[2][SF_PASS];
    _Pragma("GCC unroll 4") for (int j = 0; j < SF_PASS; j++) A[0][j] = A[1][j] = _mm256_setzero_ps();
    for (size_t u = 0; u < nu; u++) {
        __m256i x0 = U[0][u], x1 = TWO ? U[1][u] : x0;
        const float *t = tab + 128 * u;
        _Pragma("GCC unroll 8") for (int q = 0; q < 8; q++)
        {
            _Pragma("GCC unroll 4") for (int j = 0; j < NQ; j++)
            {
                const float *tq = t + 16 * q + (size_t)j * tstride;
                const __m256 lo = _mm256_loadu_ps(tq), hi = _mm256_loadu_ps(tq + 8);
                A[0][j] = _mm256_add_ps(A[0][j], vq_lookup16_ps(lo, hi, x0));
                if (TWO)
                    A[1][j] = _mm256_add_ps(A[1][j], vq_lookup16_ps(lo, hi, x1));
            }
            x0 = _mm256_srli_epi32(x0, 4);
            if (TWO)
                x1 = _mm256_srli_epi32(x1, 4);
        }
    }
    _Pragma("GCC unroll 4") for (int j = 0; j < NQ; j++)
    {
        __m256 x = _mm256_mul_ps(w0, A[0][j]);
        if (TWO)
            x = _mm256_add_ps(x, _mm256_mul_ps(w1, A[1][j]));
        vq_rows8_store(s + (size_t)j * sstride, _mm256_mul_ps(H, x), have, live);
    }
}

/* lookup_pass with the count nq (1..SF_PASS) and the sets constants */
static void lookup_any(int nq, int two, __m256i U[2][SF_MAXU], size_t nu, const float *tab, size_t tstride,
                       __m256 w0, __m256 w1, __m256 H, float *s, size_t sstride, size_t have, __m256i live)
{
#define SF_CASE(N)                                                                      \
    case N:                                                                             \
        if (two)                                                                        \
            lookup_pass(N, 1, U, nu, tab, tstride, w0, w1, H, s, sstride, have, live);  \
        else                                                                            \
            lookup_pass(N, 0, U, nu, tab, tstride, w0, w1, H, s, sstride, have, live);  \
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

void vq_ftab_score_avx2(const uint8_t *codes, size_t stride, size_t n, size_t m, const size_t *offs, const float *w,
                        int n_sets, const float *f, size_t hoff, const float *tabs, size_t tstride, int n_q, float *s,
                        size_t sstride)
{
    if (m % 32 || m > 32 * SF_MAXU || n_sets < 1 || n_sets > 2) {
        vq_ftab_score_ref(codes, stride, n, m, offs, w, n_sets, f, hoff, tabs, tstride, n_q, s, sstride);
        return;
    }
    const size_t nu = m / 32, nbytes = m / 8;
    const int two = n_sets == 2;
    alignas(32) __m256i U[2][SF_MAXU];
    alignas(32) uint8_t tail[8 * 2 * 4 * SF_MAXU]; /* the last tokens' sets side by side, the rest 0 */
    const __m256i rix = vq_rows8_index(stride), tix = vq_rows8_index(2 * nbytes);
    const __m256 w0 = _mm256_set1_ps(w[0]), w1 = _mm256_set1_ps(two ? w[1] : 0.0f);
    for (size_t i = 0; i < n; i += 8) {
        const size_t have = n - i < 8 ? n - i : 8;
        const uint8_t *blk = codes + i * stride;
        vq_prefetch_span(blk, SF_AHEAD * 8 * stride, 8 * stride);
        if (have == 8) {
            for (int k = 0; k < n_sets; k++)
                vq_units8_load(blk + offs[k], stride, nu, rix, U[k]);
        } else {
            vq_tail_rows(tail, 8, 2, blk, stride, have, offs, n_sets, nbytes);
            for (int k = 0; k < n_sets; k++)
                vq_units8_load(tail + (size_t)k * nbytes, 2 * nbytes, nu, tix, U[k]);
        }
        const __m256i live = vq_rows8_live(have);
        const __m256 H = !f          ? vq_rows8_halves(blk, hoff, stride, rix, live)
                         : have == 8 ? _mm256_loadu_ps(f + i)
                                     : _mm256_maskload_ps(f + i, live);
        for (int j0 = 0; j0 < n_q; j0 += SF_PASS)
            lookup_any(n_q - j0 < SF_PASS ? n_q - j0 : SF_PASS, two, U, nu, tabs + (size_t)j0 * tstride, tstride, w0,
                       w1, H, s + (size_t)j0 * sstride + i, sstride, have, live);
    }
}
