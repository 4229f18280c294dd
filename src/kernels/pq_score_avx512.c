/* pq_score_avx512.c -- kernels.h pq_score with AVX-512F for K <= 16: 16
 * tokens in the lanes of a register, each piece's table (K floats) in a
 * register by a masked load and its entries fetched by one VPERMPS per
 * query, one add per piece in the reference's order, so the scores have
 * its bits. The tokens' code bytes are turned into lanes four pieces at a
 * time (units16_avx512.h vq_units16_load); piece 4u + b is byte b of unit
 * u. K > 16 goes to the AVX2 twin (its queries-in-lanes tables: a gather
 * per piece and query here read ~2 cycles a lane on AMD Zen 4,
 * figures/bench/ab-session50.txt). */
#include <immintrin.h>
#include <stdalign.h>

#include "kernels/kernels.h"
#include "kernels/prefetch.h"
#include "kernels/rows16_avx512.h"
#include "kernels/tail_rows.h"
#include "kernels/units16_avx512.h"

#define PS_MAXU 16 /* 4-byte units of a row: M <= 64 */
#define PS_PASS 4  /* queries per pass */
#define PS_AHEAD 4 /* groups fetched ahead */

/* NQ queries' scores of a group: each piece's table in a register (a
 * masked load of its K floats) and one VPERMPS */
static inline __attribute__((always_inline)) void ps_pass(const int NQ, const __m512i *U, size_t nu,
                                                          const float *tabs, size_t K, size_t tstride, float *s,
                                                          size_t sstride, __mmask16 live)
{
    const __mmask16 kmask = (__mmask16)((1u << (K < 16 ? K : 16)) - 1u);
    __m512 A[PS_PASS];
    _Pragma("GCC unroll 4") for (int j = 0; j < PS_PASS; j++) A[j] = _mm512_setzero_ps();
    for (size_t u = 0; u < nu; u++) {
        __m512i x = U[u]; /* piece 4u + b in bits 0-7 after b shifts (VPERMPS reads bits 0-3) */
        _Pragma("GCC unroll 4") for (int b = 0; b < 4; b++)
        {
            const float *t = tabs + (4 * u + (size_t)b) * K;
            _Pragma("GCC unroll 4") for (int j = 0; j < NQ; j++) A[j] =
                _mm512_add_ps(A[j], _mm512_permutexvar_ps(x, _mm512_maskz_loadu_ps(kmask, t + (size_t)j * tstride)));
            x = _mm512_srli_epi32(x, 8);
        }
    }
    _Pragma("GCC unroll 4") for (int j = 0; j < NQ; j++) _mm512_mask_storeu_ps(s + (size_t)j * sstride, live, A[j]);
}

void vq_pq_score_avx512(const uint8_t *codes, size_t stride, size_t n, size_t M, const float *tabs, size_t K,
                        size_t tstride, int n_q, float *s, size_t sstride, float *work)
{
    if (K > 16) {
        vq_pq_score_avx2(codes, stride, n, M, tabs, K, tstride, n_q, s, sstride, work);
        return;
    }
    if (M % 4 || M > 4 * PS_MAXU) {
        vq_pq_score_ref(codes, stride, n, M, tabs, K, tstride, n_q, s, sstride, work);
        return;
    }
    const size_t nu = M / 4, zero = 0;
    alignas(64) __m512i U[PS_MAXU];
    alignas(64) uint8_t tail[16 * 4 * PS_MAXU]; /* the last tokens' rows side by side, the rest 0 */
    const __m512i rix = vq_rows16_index(stride), tix = vq_rows16_index(M);
    for (size_t i = 0; i < n; i += 16) {
        const size_t have = n - i < 16 ? n - i : 16;
        const uint8_t *blk = codes + i * stride, *rows = blk;
        size_t rs = stride;
        __m512i ix = rix;
        vq_prefetch_span(blk, PS_AHEAD * 16 * stride, 16 * stride);
        if (have < 16) {
            vq_tail_rows(tail, 16, 1, blk, stride, have, &zero, 1, M);
            rows = tail, rs = M, ix = tix;
        }
        vq_units16_load(rows, rs, nu, ix, U);
        const __mmask16 live = vq_rows16_live(have);
        for (int j0 = 0; j0 < n_q; j0 += PS_PASS) {
            const float *tj = tabs + (size_t)j0 * tstride;
            float *sj = s + (size_t)j0 * sstride + i;
#define PS_CASE(N)                                                                                           \
    case N:                                                                                                  \
        ps_pass(N, U, nu, tj, K, tstride, sj, sstride, live);                                                \
        break;
            switch (n_q - j0 < PS_PASS ? n_q - j0 : PS_PASS) {
                PS_CASE(4)
                PS_CASE(3)
                PS_CASE(2)
            default:
                PS_CASE(1)
            }
#undef PS_CASE
        }
    }
}
