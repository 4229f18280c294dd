/* pq_score_avx2.c -- kernels.h pq_score with AVX2.
 *
 * K <= 16: 8 tokens in the lanes of a register, each piece's entries
 * fetched per query from that piece's table: K <= 8, the table in a
 * register (a masked load of its K floats) and one VPERMPS; K <= 16, two
 * registers, two VPERMPS and a blend (units8_avx2.h vq_lookup16_ps). The
 * tokens' code bytes are turned into lanes four pieces at a time
 * (units8_avx2.h vq_units8_load); piece 4u + b is byte b of unit u.
 *
 * K > 16 (with work, calls of at least K/4 tokens): four queries in the
 * lanes. Each pass of up to four queries first interleaves their tables
 * into work (entry k of piece m of the pass's query j at work[4*(m*K +
 * k) + j]), then per token adds one 4-float entry per piece, four tokens
 * at a time, and stores each query's sums after a 4 x 4 transpose. A
 * gather per piece and query (the earlier form) fetched about one lane in
 * two cycles on AMD Zen 4; these loads are plain 16-byte ones
 * (figures/bench/ab-session50.txt).
 *
 * Either way one add per piece in the reference's order from 0.0f (the
 * lookups are exact), so the scores have its bits. Handles M a multiple
 * of 4 up to 64 for K <= 16, any M for K > 16 (as above), K <= 256 (else
 * the reference); codes must be below K (kernels.h). No alignment needed;
 * reads only the rows' M code bytes and the K floats of each table,
 * writes only s[j*sstride + i] for i < n, j < n_q and work. */
#include <immintrin.h>
#include <stdalign.h>

#include "kernels/kernels.h"
#include "kernels/prefetch.h"
#include "kernels/tail_rows.h"
#include "kernels/units8_avx2.h"

#define PS_MAXU 16 /* 4-byte units of a row: M <= 64 */
#define PS_PASS 4  /* queries per pass */
#define PS_AHEAD 8 /* groups fetched ahead */

enum { PS_PERM8, PS_PERM16 }; /* how a piece's entries are fetched: K <= 8, K <= 16 */

/* NQ queries' scores of a group, each piece's entries fetched as HOW says
 * (k8: the lanes below K, PS_PERM8, or below K - 8, PS_PERM16) */
static inline __attribute__((always_inline)) void ps_pass(const int NQ, const int HOW, const __m256i *U, size_t nu,
                                                          const float *tabs, size_t K, __m256i k8, size_t tstride,
                                                          float *s, size_t sstride, size_t have, __m256i live)
{
    __m256 A[PS_PASS];
    _Pragma("GCC unroll 4") for (int j = 0; j < PS_PASS; j++) A[j] = _mm256_setzero_ps();
    for (size_t u = 0; u < nu; u++) {
        __m256i x = U[u]; /* piece 4u + b in bits 0-7 after b shifts (VPERMPS reads bits 0-2) */
        _Pragma("GCC unroll 4") for (int b = 0; b < 4; b++)
        {
            const float *t = tabs + (4 * u + (size_t)b) * K;
            _Pragma("GCC unroll 4") for (int j = 0; j < NQ; j++)
            {
                const float *tj = t + (size_t)j * tstride;
                __m256 e;
                if (HOW == PS_PERM8)
                    e = _mm256_permutevar8x32_ps(_mm256_maskload_ps(tj, k8), x);
                else
                    e = vq_lookup16_ps(_mm256_loadu_ps(tj), _mm256_maskload_ps(tj + 8, k8), x);
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
        default:                                                                                      \
            PS_HOW(N, PS_PERM16)                                                                      \
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

/* work[4*e + j] = the entry e of query j's tables (tab + j*tstride), for
 * e < len and j < 4; queries past nq repeat the last one (their lanes
 * are never stored) */
static void ps_interleave(const float *tab, size_t tstride, int nq, size_t len, float *work)
{
    const float *r[4];
    for (int j = 0; j < 4; j++)
        r[j] = tab + (size_t)(j < nq ? j : nq - 1) * tstride;
    size_t e = 0;
    for (; e + 8 <= len; e += 8) { /* a 4 x 8 block turned by unpacks within the halves, then across them */
        const __m256 a = _mm256_loadu_ps(r[0] + e), b = _mm256_loadu_ps(r[1] + e);
        const __m256 c = _mm256_loadu_ps(r[2] + e), d = _mm256_loadu_ps(r[3] + e);
        const __m256d ab0 = _mm256_castps_pd(_mm256_unpacklo_ps(a, b)), ab1 = _mm256_castps_pd(_mm256_unpackhi_ps(a, b));
        const __m256d cd0 = _mm256_castps_pd(_mm256_unpacklo_ps(c, d)), cd1 = _mm256_castps_pd(_mm256_unpackhi_ps(c, d));
        const __m256 x0 = _mm256_castpd_ps(_mm256_unpacklo_pd(ab0, cd0)); /* entries e, e + 4 */
        const __m256 x1 = _mm256_castpd_ps(_mm256_unpackhi_pd(ab0, cd0)); /* e + 1, e + 5 */
        const __m256 x2 = _mm256_castpd_ps(_mm256_unpacklo_pd(ab1, cd1)); /* e + 2, e + 6 */
        const __m256 x3 = _mm256_castpd_ps(_mm256_unpackhi_pd(ab1, cd1)); /* e + 3, e + 7 */
        float *o = work + 4 * e;
        _mm256_storeu_ps(o, _mm256_permute2f128_ps(x0, x1, 0x20));
        _mm256_storeu_ps(o + 8, _mm256_permute2f128_ps(x2, x3, 0x20));
        _mm256_storeu_ps(o + 16, _mm256_permute2f128_ps(x0, x1, 0x31));
        _mm256_storeu_ps(o + 24, _mm256_permute2f128_ps(x2, x3, 0x31));
    }
    for (; e < len; e++)
        for (int j = 0; j < 4; j++)
            work[4 * e + (size_t)j] = r[j][e];
}

/* one pass of nq <= 4 queries from the interleaved tables (ps_interleave) */
static void ps_lanes(const uint8_t *codes, size_t stride, size_t n, size_t M, size_t K, const float *work, int nq,
                     float *s, size_t sstride)
{
    const size_t tk = 4 * K; /* floats of a piece's interleaved table */
    size_t i = 0;
    for (; i + 4 <= n; i += 4) {
        const uint8_t *r = codes + i * stride;
        if ((i & 15) == 0)
            vq_prefetch_span(r, PS_AHEAD * 8 * stride, 16 * stride);
        __m128 a0 = _mm_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
        const float *t = work;
        for (size_t m = 0; m < M; m++, t += tk) {
            a0 = _mm_add_ps(a0, _mm_loadu_ps(t + 4 * (size_t)r[m]));
            a1 = _mm_add_ps(a1, _mm_loadu_ps(t + 4 * (size_t)r[stride + m]));
            a2 = _mm_add_ps(a2, _mm_loadu_ps(t + 4 * (size_t)r[2 * stride + m]));
            a3 = _mm_add_ps(a3, _mm_loadu_ps(t + 4 * (size_t)r[3 * stride + m]));
        }
        _MM_TRANSPOSE4_PS(a0, a1, a2, a3); /* a_j: query j's sums of the four tokens */
        const __m128 a[4] = { a0, a1, a2, a3 };
        for (int j = 0; j < nq; j++)
            _mm_storeu_ps(s + (size_t)j * sstride + i, a[j]);
    }
    for (; i < n; i++) {
        const uint8_t *r = codes + i * stride;
        __m128 a = _mm_setzero_ps();
        const float *t = work;
        for (size_t m = 0; m < M; m++, t += tk)
            a = _mm_add_ps(a, _mm_loadu_ps(t + 4 * (size_t)r[m]));
        alignas(16) float o[4];
        _mm_store_ps(o, a);
        for (int j = 0; j < nq; j++)
            s[(size_t)j * sstride + i] = o[j];
    }
}

void vq_pq_score_avx2(const uint8_t *codes, size_t stride, size_t n, size_t M, const float *tabs, size_t K,
                      size_t tstride, int n_q, float *s, size_t sstride, float *work)
{
    /* a short call (fewer than K/4 tokens: a page's last few) costs less
     * in the reference than the tables' layout (~0.07 ns a float on Zen 4
     * against ~1.5 ns saved a piece and token) */
    if (K > 16 && K <= 256 && work && 4 * n >= K) {
        for (int j0 = 0; j0 < n_q; j0 += PS_PASS) {
            const int nq = n_q - j0 < PS_PASS ? n_q - j0 : PS_PASS;
            ps_interleave(tabs + (size_t)j0 * tstride, tstride, nq, M * K, work);
            ps_lanes(codes, stride, n, M, K, work, nq, s + (size_t)j0 * sstride, sstride);
        }
        return;
    }
    if (M % 4 || M > 4 * PS_MAXU || K > 16) {
        vq_pq_score_ref(codes, stride, n, M, tabs, K, tstride, n_q, s, sstride, work);
        return;
    }
    const size_t nu = M / 4, zero = 0;
    const int how = K <= 8 ? PS_PERM8 : PS_PERM16;
    const __m256i k8 = vq_rows8_live(K <= 8 ? K : K - 8); /* the lanes of the masked table load */
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
