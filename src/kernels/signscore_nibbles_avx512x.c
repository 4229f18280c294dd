/* signscore_nibbles_avx512x.c -- kernels.h signscore from the queries'
 * nibble tables (kernels/nibble_tables.h: qbits <= 4), with AVX-512 VBMI
 * and VNNI: a table lookup per nibble, 64 at a time.
 *
 * A block of 64 tokens (four groups of 16: the tables are loaded and the
 * loops run once per 64 tokens; against two groups before, one core, D 128,
 * four queries: rvq-1 scoring -20%, rabitq-1 -19%,
 * figures/bench/ab-session40.txt part 3) is cut into 4-byte units:
 * register (u, g) holds unit u (bytes 4u..4u+3 of a bit set: coordinates
 * 32u..32u+31) of 16 tokens, one per 32-bit lane. The unit's 8 nibbles index the query's 8 tables of
 * those coordinates, 128 bytes: the low nibbles' 4 tables in one register,
 * the high nibbles' in another (nibble_tables.h), so that one VPERMB looks
 * up 4 nibbles of each of 16 tokens (the index: the nibble plus 16 times
 * its byte's place in the unit), low nibbles, then high ones (against one
 * VPERMI2B over both registers each before: rvq-1 scoring -12%,
 * figures/bench/ab-session35.txt part 3).
 * The two lookups are added in bytes (<= 2 * 60) and VPDPBUSD against ones
 * sums each lane's four bytes into the token's 32-bit sum: exact integers,
 * bitdot's pq; pz by VPOPCNTD on the units. The float steps are the
 * reference's, in its order, so the scores have the reference's bits. */
#include <immintrin.h>
#include <stdalign.h>
#include <string.h>

#include "kernels/kernels.h"
#include "kernels/nibble_tables.h"
#include "kernels/prefetch.h"
#include "kernels/rows16_avx512.h"
#include "kernels/signscore_avx512.h"
#include "kernels/units16_avx512.h"

#define NB_G 4               /* 16-token groups per block */
#define NB_TOK (16 * NB_G)   /* tokens per block */
#define NB_PASS 4            /* queries per lookup pass */
#define NB_MAXQ 16           /* queries whose sums a block keeps */
#define NB_MAXU 16           /* 4-byte units of a bit set: D <= 512 */

typedef struct {
    alignas(64) uint32_t u[NB_MAXU][NB_G][16]; /* unit u of group g: lane i = token 16g + i */
    alignas(64) int32_t z[NB_G][16];           /* popcounts */
} nb_units;

/* the units of a block of NB_TOK tokens (token t at blk + t*stride, its
 * set at byte off) and their popcounts, lane i of group g holding token
 * 16g + i. nbytes a multiple of 16: per group and 16 bytes, four units
 * (units16_avx512.h); nbytes 8: the 16 bytes of each token's record
 * around the set the same way where the record holds them, else two
 * gathers of 8 tokens' quadwords, split into even and odd dwords */
static inline void load_units(const uint8_t *blk, size_t stride, size_t off, size_t nbytes, nb_units *U)
{
    for (size_t g = 0; g < NB_G; g++) {
        const uint8_t *grp = blk + 16 * g * stride + off;
        __m512i z = _mm512_setzero_si512();
        if (nbytes == 8 && (off + 16 <= stride || (off >= 8 && off + 8 <= stride))) {
            /* 16 bytes of each token's record that hold the set (the set
             * first, or last where the record ends 8 bytes after it): four
             * words per token by vq_units16_chunk, the set's two of them
             * (no gather: ~20 cycles each on AMD Zen 4) */
            const size_t at = off + 16 <= stride ? off : off - 8;
            __m512i r[4];
            vq_units16_chunk(grp - off + at, stride, r);
            const __m512i u0 = r[(off - at) / 4], u1 = r[(off - at) / 4 + 1];
            _mm512_store_si512((void *)U->u[0][g], u0);
            _mm512_store_si512((void *)U->u[1][g], u1);
            z = _mm512_add_epi32(_mm512_popcnt_epi32(u0), _mm512_popcnt_epi32(u1));
        } else if (nbytes == 8) {
            const __m512i ix = _mm512_mullo_epi64(_mm512_setr_epi64(0, 1, 2, 3, 4, 5, 6, 7),
                                                  _mm512_set1_epi64((long long)stride));
            const __m512i a = _mm512_i64gather_epi64(ix, (const void *)grp, 1);
            const __m512i b = _mm512_i64gather_epi64(ix, (const void *)(grp + 8 * stride), 1);
            const __m512i ev = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
            const __m512i u0 = _mm512_permutex2var_epi32(a, ev, b);
            const __m512i u1 = _mm512_permutex2var_epi32(a, _mm512_add_epi32(ev, _mm512_set1_epi32(1)), b);
            _mm512_store_si512((void *)U->u[0][g], u0);
            _mm512_store_si512((void *)U->u[1][g], u1);
            z = _mm512_add_epi32(_mm512_popcnt_epi32(u0), _mm512_popcnt_epi32(u1));
        } else {
            for (size_t c = 0; c < nbytes / 16; c++) {
                __m512i r[4];
                vq_units16_chunk(grp + 16 * c, stride, r);
                _Pragma("GCC unroll 4") for (size_t m = 0; m < 4; m++) { /* (r stays in registers) */
                    _mm512_store_si512((void *)U->u[4 * c + m][g], r[m]);
                    z = _mm512_add_epi32(z, _mm512_popcnt_epi32(r[m]));
                }
            }
        }
        _mm512_store_si512((void *)U->z[g], z);
    }
}

/* the integer dots of NQ queries (query j's tables at tab + j*qstride)
 * with the block's nu units: P[j][t] */
static inline __attribute__((always_inline)) void lookup_pass(const int NQ, const nb_units *U, size_t nu,
                                                              const uint8_t *tab, size_t qstride, int32_t P[][NB_TOK],
                                                              vq_pf_share *pf)
{
    const __m512i m4 = _mm512_set1_epi8(0x0F), ones = _mm512_set1_epi8(1);
    /* byte k of a lane: its nibbles' places 2k (low) and 2k + 1 (high),
     * table k of each half of the unit's tables (nibble_tables.h) */
    const __m512i kx = _mm512_set1_epi32(0x30201000);
    __m512i A[NB_PASS][NB_G];
    _Pragma("GCC unroll 4") for (int j = 0; j < NB_PASS; j++)
        _Pragma("GCC unroll 4") for (int g = 0; g < NB_G; g++) A[j][g] = _mm512_setzero_si512();
    for (size_t u = 0; u < nu; u++) {
        vq_pf_step(pf);
        __m512i TL[NB_PASS], TH[NB_PASS];
        _Pragma("GCC unroll 4") for (int j = 0; j < NQ; j++)
        {
            const uint8_t *t = tab + (size_t)j * qstride + 128 * u;
            TL[j] = _mm512_loadu_si512((const void *)t), TH[j] = _mm512_loadu_si512((const void *)(t + 64));
        }
        _Pragma("GCC unroll 4") for (int g = 0; g < NB_G; g++)
        {
            const __m512i R = _mm512_load_si512((const void *)U->u[u][g]);
            const __m512i ilo = _mm512_ternarylogic_epi32(R, m4, kx, 0xEA); /* (R & m4) | kx */
            const __m512i ihi = _mm512_ternarylogic_epi32(_mm512_srli_epi16(R, 4), m4, kx, 0xEA);
            _Pragma("GCC unroll 4") for (int j = 0; j < NQ; j++)
            {
                const __m512i l =
                    _mm512_add_epi8(_mm512_permutexvar_epi8(ilo, TL[j]), _mm512_permutexvar_epi8(ihi, TH[j]));
                A[j][g] = _mm512_dpbusd_epi32(A[j][g], l, ones);
            }
        }
    }
    _Pragma("GCC unroll 4") for (int j = 0; j < NQ; j++)
        _Pragma("GCC unroll 4") for (int g = 0; g < NB_G; g++)
            _mm512_store_si512((void *)(P[j] + 16 * g), A[j][g]);
}

/* lookup_pass with the count nq (1..NB_PASS) a constant */
static void lookup_any(int nq, const nb_units *U, size_t nu, const uint8_t *tab, size_t qstride, int32_t P[][NB_TOK],
                       vq_pf_share *pf)
{
    switch (nq) {
    case 4: lookup_pass(4, U, nu, tab, qstride, P, pf); break;
    case 3: lookup_pass(3, U, nu, tab, qstride, P, pf); break;
    case 2: lookup_pass(2, U, nu, tab, qstride, P, pf); break;
    default: lookup_pass(1, U, nu, tab, qstride, P, pf); break;
    }
}

void vq_signscore_nibbles_avx512x(const uint8_t *codes, size_t stride, size_t n, size_t D, const size_t *offs,
                                  const float *w, int n_sets, const float *f, size_t hoff, const uint8_t *planes,
                                  size_t qstride, const float *qc, int n_q, int qbits, float *s, size_t sstride)
{
    if (qbits < 1 || qbits > VQ_NIBBLE_QBITS || (D != 64 && D % 128) || D > 32 * NB_MAXU || n_sets < 1 ||
        n_sets > 2) {
        vq_signscore_avx512x(codes, stride, n, D, offs, w, n_sets, f, hoff, planes, qstride, qc, n_q, qbits, s,
                             sstride);
        return;
    }
    const size_t nbytes = D / 8, nu = D / 32;
    const uint8_t *tab0 = planes + (size_t)qbits * nbytes; /* each query's tables follow its planes */
    nb_units U[2];
    alignas(64) int32_t PQ[2][NB_MAXQ][NB_TOK];
    alignas(64) uint8_t tail[NB_TOK * 2 * NB_MAXU * 4];
    const __m512i rix = vq_rows16_index(stride);
    const int two = n_sets == 2;
    const __m512 w0 = _mm512_set1_ps(w[0]), w1 = _mm512_set1_ps(two ? w[1] : 0.0f);
    /* the rows VQ_PF_SPREAD ahead, a share per unit of each lookup pass
     * (of the first 16 queries: the steps past them find nothing left) */
    const size_t passes = (size_t)n_sets * (size_t)(((n_q < NB_MAXQ ? n_q : NB_MAXQ) + NB_PASS - 1) / NB_PASS);
    vq_pf_share pf = vq_pf_share_init(codes, NB_TOK * stride + VQ_PF_SPREAD, n * stride, (n + NB_TOK - 1) / NB_TOK * passes * nu);
    for (size_t i = 0; i < n; i += NB_TOK) {
        const size_t have = n - i < NB_TOK ? n - i : NB_TOK;
        const uint8_t *blk = codes + i * stride;
        if (have == NB_TOK) {
            for (int k = 0; k < n_sets; k++)
                load_units(blk, stride, offs[k], nbytes, &U[k]);
        } else { /* the last tokens' sets copied apart, the rest 0 */
            memset(tail, 0, sizeof tail);
            for (size_t t = 0; t < have; t++)
                for (int k = 0; k < n_sets; k++)
                    memcpy(tail + (t * 2 + (size_t)k) * nbytes, blk + t * stride + offs[k], nbytes);
            for (int k = 0; k < n_sets; k++)
                load_units(tail, 2 * nbytes, (size_t)k * nbytes, nbytes, &U[k]);
        }
        for (int j0 = 0; j0 < n_q; j0 += NB_MAXQ) {
            const int nj = n_q - j0 < NB_MAXQ ? n_q - j0 : NB_MAXQ;
            for (int k = 0; k < n_sets; k++)
                for (int jj = 0; jj < nj; jj += NB_PASS)
                    lookup_any(nj - jj < NB_PASS ? nj - jj : NB_PASS, &U[k], nu, tab0 + (size_t)(j0 + jj) * qstride,
                               qstride, PQ[k] + jj, &pf);
            /* the reference's float steps, 16 tokens at a time */
            for (size_t g = 0; 16 * g < have; g++) {
                const size_t left = have - 16 * g;
                const __mmask16 out = vq_rows16_live(left);
#define NB_INTS(p) _mm512_load_si512((const void *)(p)) /* set 1's read only with two sets (two = 1) */
                const __m512 Z = vq_signscore_sets16(w0, w1, two, NB_INTS(U[0].z[g]), NB_INTS(U[two].z[g]));
                const __m512 F = f ? _mm512_maskz_loadu_ps(out, f + i + 16 * g)
                                   : vq_rows16_halves(blk + 16 * g * stride, hoff, stride, rix, left);
                for (int j = 0; j < nj; j++) {
                    const __m512 P =
                        vq_signscore_sets16(w0, w1, two, NB_INTS(PQ[0][j] + 16 * g), NB_INTS(PQ[two][j] + 16 * g));
                    _mm512_mask_storeu_ps(s + (size_t)(j0 + j) * sstride + i + 16 * g, out,
                                          vq_signscore_combine16(Z, P, F, qc + 3 * (size_t)(j0 + j)));
                }
#undef NB_INTS
            }
        }
    }
}
