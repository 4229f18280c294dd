/* pq_score_avx2.c -- kernels.h pq_score with AVX2: 8 tokens in the lanes
 * of a register, each piece's entries fetched per query from that piece's
 * table (K floats): K <= 8, the table in a register (a masked load of its
 * K floats) and one VPERMPS; K <= 16, two registers, two VPERMPS and a
 * blend (units8_avx2.h vq_lookup16_ps); else one gather. One add per piece
 * in the reference's order from 0.0f (the lookups are exact), so the
 * scores have its bits. The tokens' code bytes are turned into lanes four
 * pieces at a time (units8_avx2.h vq_units8_load); piece 4u + b is byte b
 * of unit u.
 *
 * Handles M a multiple of 4 up to 64 and K <= 256 (else the reference);
 * codes must be below K (kernels.h). No alignment needed; reads only the
 * rows' M code bytes and the K floats of each table, writes only
 * s[j*sstride + i] for i < n, j < n_q. */
#include <immintrin.h>
#include <stdalign.h>

#include "kernels/kernels.h"
#include "kernels/prefetch.h"
#include "kernels/tail_rows.h"
#include "kernels/units8_avx2.h"

#define PS_MAXU 16 /* 4-byte units of a row: M <= 64 */
#define PS_PASS 4  /* queries per pass */
#define PS_AHEAD 8 /* groups fetched ahead */

enum { PS_GATHER, PS_PERM8, PS_PERM16 }; /* how a piece's entries are fetched: K > 16, K <= 8, K <= 16 */

/* NQ queries' scores of a group, each piece's entries fetched as HOW says
 * (k8: the lanes below K, PS_PERM8, or below K - 8, PS_PERM16) */
static inline __attribute__((always_inline)) void ps_pass(const int NQ, const int HOW, const __m256i *U, size_t nu,
                                                          const float *tabs, size_t K, __m256i k8, size_t tstride,
                                                          float *s, size_t sstride, size_t have, __m256i live)
{
    __m256 A[PS_PASS];
    _Pragma("GCC unroll 4") for (int j = 0; j < PS_PASS; j++) A[j] = _mm256_setzero_ps();
    const __m256i low = _mm256_set1_epi32(0xFF);
    for (size_t u = 0; u < nu; u++) {
        __m256i x = U[u]; /* piece 4u + b in bits 0-7 after b shifts */
        _Pragma("GCC unroll 4") for (int b = 0; b < 4; b++)
        {
            const float *t = tabs + (4 * u + (size_t)b) * K;
            _Pragma("GCC unroll 4") for (int j = 0; j < NQ; j++)
            {
                const float *tj = t + (size_t)j * tstride;
                __m256 e;
                if (HOW == PS_PERM8)
                    e = _mm256_permutevar8x32_ps(_mm256_maskload_ps(tj, k8), x);
                else if (HOW == PS_PERM16)
                    e = vq_lookup16_ps(_mm256_loadu_ps(tj), _mm256_maskload_ps(tj + 8, k8), x);
                else
                    e = _mm256_i32gather_ps(tj, _mm256_and_si256(x, low), 4);
                A[j] = _mm256_add_ps(A[j], e);
            }
            x = _mm256_srli_epi32(x, 8);
        }
    }
    _Pragma("GCC unroll 4") for (int j = 0; j < NQ; j++) vq_rows8_store(s + (size_t)j * sstride, A[j], have, live);
}

/* ps_pass with the count nq (1..PS_PASS) and HOW constants */
static void ps_any(int nq, int how, const __m256i *U, size_t nu, const float *tabs, size_t K, __m256i k8,
                   size_t tstride, float *s, size_t sstride, size_t have, __m256i live)
{
#define PS_HOW(N, H)                                                                                  \
    case H:                                                                                           \
        ps_pass(N, H, U, nu, tabs, K, k8, tstride, s, sstride, have, live);                           \
        break;
#define PS_CASE(N)                                                                                    \
    case N:                                                                                           \
        switch (how) {                                                                                \
            PS_HOW(N, PS_PERM8)                                                                       \
            PS_HOW(N, PS_PERM16)                                                                      \
        default:                                                                                      \
            PS_HOW(N, PS_GATHER)                                                                      \
        }                                                                                             \
        break;
    switch (nq) {
        PS_CASE(4)
        PS_CASE(3)
        PS_CASE(2)
    default:
        PS_CASE(1)
    }
#undef PS_CASE
#undef PS_HOW
}

void vq_pq_score_avx2(const uint8_t *codes, size_t stride, size_t n, size_t M, const float *tabs, size_t K,
                      size_t tstride, int n_q, float *s, size_t sstride)
{
    if (M % 4 || M > 4 * PS_MAXU || K > 256) {
        vq_pq_score_ref(codes, stride, n, M, tabs, K, tstride, n_q, s, sstride);
        return;
    }
    const size_t nu = M / 4, zero = 0;
    const int how = K <= 8 ? PS_PERM8 : K <= 16 ? PS_PERM16 : PS_GATHER;
    const __m256i k8 = vq_rows8_live(K <= 8 ? K : K <= 16 ? K - 8 : 0); /* the lanes of the masked table load */
    alignas(32) __m256i U[PS_MAXU];
    alignas(32) uint8_t tail[8 * 4 * PS_MAXU]; /* the last tokens' rows side by side, the rest 0 */
    const __m256i rix = vq_rows8_index(stride), tix = vq_rows8_index(M);
    for (size_t i = 0; i < n; i += 8) {
        const size_t have = n - i < 8 ? n - i : 8;
        const uint8_t *blk = codes + i * stride, *rows = blk;
        size_t rs = stride;
        __m256i ix = rix;
        vq_prefetch_span(blk, PS_AHEAD * 8 * stride, 8 * stride);
        if (have < 8) {
            vq_tail_rows(tail, 8, 1, blk, stride, have, &zero, 1, M);
            rows = tail, rs = M, ix = tix;
        }
        vq_units8_load(rows, rs, nu, ix, U);
        const __m256i live = vq_rows8_live(have);
        for (int j0 = 0; j0 < n_q; j0 += PS_PASS)
            ps_any(n_q - j0 < PS_PASS ? n_q - j0 : PS_PASS, how, U, nu, tabs + (size_t)j0 * tstride, K, k8, tstride,
                   s + (size_t)j0 * sstride + i, sstride, have, live);
    }
}
