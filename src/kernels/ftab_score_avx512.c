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
 * (up to 4), and each table register by SF_G groups of 16 tokens (half
 * as many with two sets): 16 independent sums in flight against 4 (8)
 * with one group (rvq-1 keys, one core, D 128: 9.2-9.8 -> 7.8-8.2 ns a
 * token; figures/bench/ab-session40.txt part 5). */
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
#define SF_G 4     /* groups of 16 tokens a lookup pass takes (two sets: half as many) */

/* NQ queries (tables at tab + j*tstride), one or TWO sets, G groups of
 * 16 tokens at once (each table register loaded once for all of them, and
 * G times as many independent sums to hide the adds' latency): the scores
 * of group g's live lanes (live[g]) into s + 16 g + j*sstride */
static inline __attribute__((always_inline)) void lookup_pass(const int NQ, const int TWO, const int G,
                                                              __m512i U[][2][SF_MAXU], size_t nu, const float *tab,
                                                              size_t tstride, __m512 w0, __m512 w1, const __m512 *H,
                                                              float *s, size_t sstride, const __mmask16 *live)
{
    __m512 A[SF_G][2][SF_PASS];
    _Pragma("GCC unroll 4") for (int g = 0; g < G; g++)
        _Pragma("GCC unroll 4") for (int j = 0; j < SF_PASS; j++) A[g][0][j] = A[g][1][j] = _mm512_setzero_ps();
    for (size_t u = 0; u < nu; u++) {
        __m512i x0[SF_G], x1[SF_G];
        _Pragma("GCC unroll 4") for (int g = 0; g < G; g++)
        {
            x0[g] = U[g][0][u];
            x1[g] = TWO ? U[g][1][u] : x0[g];
        }
        const float *t = tab + 128 * u;
        _Pragma("GCC unroll 8") for (int q = 0; q < 8; q++)
        {
            _Pragma("GCC unroll 4") for (int j = 0; j < NQ; j++)
            {
                const __m512 T = _mm512_loadu_ps(t + 16 * q + (size_t)j * tstride);
                _Pragma("GCC unroll 4") for (int g = 0; g < G; g++)
                {
                    A[g][0][j] = _mm512_add_ps(A[g][0][j], _mm512_permutexvar_ps(x0[g], T));
                    if (TWO)
                        A[g][1][j] = _mm512_add_ps(A[g][1][j], _mm512_permutexvar_ps(x1[g], T));
                }
            }
            _Pragma("GCC unroll 4") for (int g = 0; g < G; g++)
            {
                x0[g] = _mm512_srli_epi32(x0[g], 4);
                if (TWO)
                    x1[g] = _mm512_srli_epi32(x1[g], 4);
            }
        }
    }
    _Pragma("GCC unroll 4") for (int g = 0; g < G; g++)
        _Pragma("GCC unroll 4") for (int j = 0; j < NQ; j++)
        {
            __m512 x = _mm512_mul_ps(w0, A[g][0][j]);
            if (TWO)
                x = _mm512_add_ps(x, _mm512_mul_ps(w1, A[g][1][j]));
            _mm512_mask_storeu_ps(s + 16 * (size_t)g + (size_t)j * sstride, live[g], _mm512_mul_ps(H[g], x));
        }
}

/* lookup_pass with the count nq (1..SF_PASS), the sets and the groups
 * constants: SF_G (one set) or SF_G / 2 (two) groups when `full`, else 1 */
static void lookup_any(int nq, int two, int full, __m512i U[][2][SF_MAXU], size_t nu, const float *tab,
                       size_t tstride, __m512 w0, __m512 w1, const __m512 *H, float *s, size_t sstride,
                       const __mmask16 *live)
{
#define SF_CASE(N)                                                                                  \
    case N:                                                                                         \
        if (two && full)                                                                            \
            lookup_pass(N, 1, SF_G / 2, U, nu, tab, tstride, w0, w1, H, s, sstride, live);          \
        else if (full)                                                                              \
            lookup_pass(N, 0, SF_G, U, nu, tab, tstride, w0, w1, H, s, sstride, live);              \
        else if (two)                                                                               \
            lookup_pass(N, 1, 1, U, nu, tab, tstride, w0, w1, H, s, sstride, live);                 \
        else                                                                                        \
            lookup_pass(N, 0, 1, U, nu, tab, tstride, w0, w1, H, s, sstride, live);                 \
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
    const size_t G = two ? SF_G / 2 : SF_G; /* groups of a full block */
    alignas(64) __m512i U[SF_G][2][SF_MAXU];
    alignas(64) uint8_t tail[16 * 2 * 4 * SF_MAXU]; /* the last tokens' sets side by side, the rest 0 */
    const __m512i rix = vq_rows16_index(stride), tix = vq_rows16_index(2 * nbytes);
    const __m512 w0 = _mm512_set1_ps(w[0]), w1 = _mm512_set1_ps(two ? w[1] : 0.0f);
    __m512 H[SF_G];
    __mmask16 live[SF_G];
    size_t i = 0;
    for (; i + 16 * G <= n; i += 16 * G) { /* full blocks of G groups */
        const uint8_t *blk = codes + i * stride;
        vq_prefetch_span(blk, SF_AHEAD * 16 * stride, 16 * G * stride);
        for (size_t g = 0; g < G; g++) {
            const uint8_t *grp = blk + 16 * g * stride;
            for (int k = 0; k < n_sets; k++)
                vq_units16_load(grp + offs[k], stride, nu, rix, U[g][k]);
            live[g] = 0xFFFF;
            H[g] = f ? _mm512_loadu_ps(f + i + 16 * g) : vq_rows16_halves(grp, hoff, stride, rix, 16);
        }
        for (int j0 = 0; j0 < n_q; j0 += SF_PASS)
            lookup_any(n_q - j0 < SF_PASS ? n_q - j0 : SF_PASS, two, 1, U, nu, tabs + (size_t)j0 * tstride, tstride,
                       w0, w1, H, s + (size_t)j0 * sstride + i, sstride, live);
    }
    for (; i < n; i += 16) { /* the rest, a group at a time */
        const size_t have = n - i < 16 ? n - i : 16;
        const uint8_t *blk = codes + i * stride;
        vq_prefetch_span(blk, SF_AHEAD * 16 * stride, 16 * stride);
        if (have == 16) {
            for (int k = 0; k < n_sets; k++)
                vq_units16_load(blk + offs[k], stride, nu, rix, U[0][k]);
        } else {
            vq_tail_rows(tail, 16, 2, blk, stride, have, offs, n_sets, nbytes);
            for (int k = 0; k < n_sets; k++)
                vq_units16_load(tail + (size_t)k * nbytes, 2 * nbytes, nu, tix, U[0][k]);
        }
        live[0] = vq_rows16_live(have);
        H[0] = f ? _mm512_maskz_loadu_ps(live[0], f + i) : vq_rows16_halves(blk, hoff, stride, rix, have);
        for (int j0 = 0; j0 < n_q; j0 += SF_PASS)
            lookup_any(n_q - j0 < SF_PASS ? n_q - j0 : SF_PASS, two, 0, U, nu, tabs + (size_t)j0 * tstride, tstride,
                       w0, w1, H, s + (size_t)j0 * sstride + i, sstride, live);
    }
}
