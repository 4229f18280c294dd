/* kivi_qaxpy_avx512x.c -- AVX-512 VNNI + VBMI twin of vq_kivi_qaxpy
 * (kernels/kivi_qaxpy.h): the reference's bits.
 *
 * Per block of 32 rows the headers are gathered into float vectors (rows
 * in lanes), the int8 weights of every (j, g) made at once. Then per
 * 64-channel chunk and quad of rows, the quad's code bytes are loaded
 * into the four 128-bit lanes of a register and transposed by one VPERMB
 * so that 32-bit lane b holds byte b of rows 0..3; a mask per code
 * position k gives registers whose lane b holds the four rows' codes of
 * one channel (2 bits: 4b + k; 4 bits: 32h + 2b + k for byte half h), left
 * in place (times 4^k, or 16 for high nibbles), and VPDPBUSD against the
 * four rows' weights of that channel's group (one VPERMT2D per quad and
 * query) adds the exact integer sums. Block sums are shifted back (exact:
 * every product is a multiple of the place value) and fold into float
 * accumulators (one FMA), which are put back in channel order once at the
 * end. */
#include "kernels/kivi_qaxpy.h"

#include <immintrin.h>
#include <string.h>

#include "core/vexp.h"
#include "kernels/rows16_avx512.h"
#include "kernels/wq_avx512x.h"

#define KQ_MAXQ 4 /* weight rows per pass */
#define KQ_MAXC 8 /* 64-channel chunks: D <= 512 */

/* scales S[g][h] and mins Mn[g][h] of the block's rows 16h..16h+15 (rows
 * at or past m read as 0): header word k of 16 rows by one gather (rix:
 * the rows' offsets), then each word column split into its two halves */
static inline __attribute__((always_inline)) void block_headers(const uint8_t *rows, size_t rstride, size_t m,
                                                                size_t ng, __m512i rix, __m512 S[16][2],
                                                                __m512 Mn[16][2])
{
    for (size_t h = 0; h < 2; h++) {
        const __mmask16 live = vq_rows16_live(m > 16 * h ? m - 16 * h : 0);
        for (size_t k = 0; k < ng; k++) {
            const __m512i wv = vq_rows16_words(rows + 16 * h * rstride + 4 * k, rix, live);
            const __m512 lo = vq_low_halves16(wv), hi = vq_low_halves16(_mm512_srli_epi32(wv, 16));
            for (size_t t = 0; t < 2; t++) {
                const size_t half = 2 * k + t;
                const __m512 v = t ? hi : lo;
                if (half < ng)
                    S[half][h] = v;
                else
                    Mn[half - ng][h] = v;
            }
        }
    }
}

/* lane b's group (group = 1 << lg): channel ch0 + step*b */
static inline __m512i group_index(size_t ch0, int step, int lg)
{
    const __m512i lane = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    const __m512i ch = _mm512_add_epi32(_mm512_set1_epi32((int)ch0), _mm512_mullo_epi32(lane, _mm512_set1_epi32(step)));
    return _mm512_srli_epi32(ch, (unsigned)lg);
}

/* the same relative to group g0, times 8 (the words of a group in qw) */
static inline __m512i word_index(size_t ch0, int step, int lg, size_t g0)
{
    return _mm512_slli_epi32(_mm512_sub_epi32(group_index(ch0, step, lg), _mm512_set1_epi32((int)g0)), 3);
}

/* one 64-channel chunk c of a block of m rows: the integer sums of the
 * NQ weight rows, folded into F[j][c] with the block's scales */
static inline __attribute__((always_inline)) void
chunk_block(const int BITS, const int NQ, const uint8_t *blk, size_t rstride, size_t coff, size_t m, size_t c,
            size_t g0, int lg, __m512i tidx, __m512i cmask, int8_t qw[KQ_MAXQ][20][VQ_KQ_BLOCK], float dd[KQ_MAXQ][16],
            int32_t sqh[KQ_MAXQ][16], __m512 F[KQ_MAXQ][KQ_MAXC][4])
{
    __m512i QA[KQ_MAXQ], QB[KQ_MAXQ], I[KQ_MAXQ][4];
    _Pragma("GCC unroll 4") for (int j = 0; j < NQ; j++)
    {
        QA[j] = _mm512_loadu_si512(&qw[j][g0][0]);
        QB[j] = _mm512_loadu_si512(&qw[j][g0 + 2][0]);
        _Pragma("GCC unroll 4") for (int r = 0; r < 4; r++) I[j][r] = _mm512_setzero_si512();
    }
    /* the weight words of each lane's group (2 bits: one map; 4 bits: one per
     * byte half) */
    const __m512i x0 = word_index(64 * c, BITS == 2 ? 4 : 2, lg, g0), x1 = word_index(64 * c + 32, 2, lg, g0);
    for (size_t u = 0; 4 * u < m; u++) {
        const uint8_t *p[4];
        vq_quad_rows(blk, rstride, coff, u, m, p);
        const __m512i uu = _mm512_set1_epi32((int)u);
        __m512i P[4];
        if (BITS == 2) { /* code k left in place: 4^k times it (undone per block) */
            const __m512i T = vq_quad_bytes(p, 16 * c, tidx);
            _Pragma("GCC unroll 4") for (int k = 0; k < 4; k++) P[k] =
                _mm512_and_si512(T, _mm512_set1_epi8((char)(3 << (2 * k))));
            const __m512i ix = _mm512_add_epi32(x0, uu);
            _Pragma("GCC unroll 4") for (int j = 0; j < NQ; j++)
            {
                const __m512i Wq = _mm512_permutex2var_epi32(QA[j], ix, QB[j]);
                _Pragma("GCC unroll 4") for (int k = 0; k < 4; k++) I[j][k] = _mm512_dpbusd_epi32(I[j][k], P[k], Wq);
            }
        } else {
            for (int h = 0; h < 2; h++) { /* high nibbles in place: 16 times them */
                const __m512i T = vq_quad_bytes(p, 32 * c + 16 * (size_t)h, tidx);
                P[2 * h] = _mm512_and_si512(T, cmask);
                P[2 * h + 1] = _mm512_and_si512(T, _mm512_set1_epi8((char)0xF0));
            }
            const __m512i ia = _mm512_add_epi32(x0, uu), ib = _mm512_add_epi32(x1, uu);
            _Pragma("GCC unroll 4") for (int j = 0; j < NQ; j++)
            {
                const __m512i Wa = _mm512_permutex2var_epi32(QA[j], ia, QB[j]);
                const __m512i Wb = _mm512_permutex2var_epi32(QA[j], ib, QB[j]);
                I[j][0] = _mm512_dpbusd_epi32(I[j][0], P[0], Wa);
                I[j][1] = _mm512_dpbusd_epi32(I[j][1], P[1], Wa);
                I[j][2] = _mm512_dpbusd_epi32(I[j][2], P[2], Wb);
                I[j][3] = _mm512_dpbusd_epi32(I[j][3], P[3], Wb);
            }
        }
    }
    const __m512i gx0 = group_index(64 * c, BITS == 2 ? 4 : 2, lg), gx1 = group_index(64 * c + 32, 2, lg);
    _Pragma("GCC unroll 4") for (int j = 0; j < NQ; j++)
    {
        const __m512 ds = _mm512_loadu_ps(dd[j]);
        const __m512 d0 = _mm512_permutexvar_ps(gx0, ds), d1 = _mm512_permutexvar_ps(gx1, ds);
        const __m512i hs = _mm512_loadu_si512(sqh[j]); /* h * sum q: the codes' centring */
        const __m512i h0 = _mm512_permutexvar_epi32(gx0, hs), h1 = _mm512_permutexvar_epi32(gx1, hs);
        _Pragma("GCC unroll 4") for (int r = 0; r < 4; r++)
        {
            const int hi = BITS == 4 && r >= 2;
            /* the codes' place values off: every product was a multiple (exact) */
            const __m512i Ir = _mm512_srai_epi32(I[j][r], (unsigned)(BITS == 2 ? 2 * r : 4 * (r & 1)));
            const __m512 If = _mm512_cvtepi32_ps(_mm512_sub_epi32(Ir, hi ? h1 : h0));
            F[j][c][r] = _mm512_fmadd_ps(hi ? d1 : d0, If, F[j][c][r]);
        }
    }
}

/* the block's weights (kivi_qaxpy.h), group by group: the int8 weights
 * of the NQ weight rows with their scales dd and centring sums sqh (h
 * times the sum; kernels/wq_avx512x.h), and the mins' float sums MW */
static inline __attribute__((always_inline)) void
block_weights(const int BITS, const int NQ, const __m512 W[KQ_MAXQ][2], size_t ng, const __m512 S[16][2],
              const __m512 Mn[16][2], int8_t qw[KQ_MAXQ][20][VQ_KQ_BLOCK], float dd[KQ_MAXQ][16],
              int32_t sqh[KQ_MAXQ][16], __m512 MW[KQ_MAXQ][16])
{
    const __m512 hv = _mm512_set1_ps((float)(1 << (BITS - 1))); /* v = s (c - h) + (m + h s) */
    for (size_t g = 0; g < ng; g++) {
        const __m512 m0 = _mm512_fmadd_ps(hv, S[g][0], Mn[g][0]), m1 = _mm512_fmadd_ps(hv, S[g][1], Mn[g][1]);
        _Pragma("GCC unroll 4") for (int j = 0; j < NQ; j++)
            MW[j][g] = _mm512_fmadd_ps(W[j][1], m1, _mm512_fmadd_ps(W[j][0], m0, MW[j][g]));
        float sc[4];
        int32_t sq[4];
        vq_column_weights(NQ, W, S[g][0], S[g][1], &qw[0][g][0], sizeof qw[0], sc, sq);
        _Pragma("GCC unroll 4") for (int j = 0; j < NQ; j++)
            dd[j][g] = sc[j], sqh[j][g] = (1 << (BITS - 1)) * sq[j];
    }
}

/* NG: the group count D / group when a constant (the header work for
 * groups that do not exist compiles away), else 0 */
static inline __attribute__((always_inline)) void qaxpy_bits(const uint8_t *rows, size_t rstride, const int BITS,
                                                             const size_t NG, size_t nt, size_t D, size_t group,
                                                             const float *w, size_t wstride, int n_q, float *acc,
                                                             size_t astride)
{
    const size_t ng = NG ? NG : D / group, nc = D / 64, coff = 4 * ng;
    const int lg = __builtin_ctzll(group);
    int8_t tix[64];
    for (int p = 0; p < 64; p++)
        tix[p] = (int8_t)((p % 4) * 16 + p / 4);
    const __m512i tidx = _mm512_loadu_si512(tix), cmask = _mm512_set1_epi8((char)((1 << BITS) - 1));
    const __m512i rix = vq_rows16_index(rstride);
    for (int j0 = 0; j0 < n_q; j0 += KQ_MAXQ) {
        const int nq = n_q - j0 < KQ_MAXQ ? n_q - j0 : KQ_MAXQ;
        __m512 F[KQ_MAXQ][KQ_MAXC][4], MW[KQ_MAXQ][16];
        int8_t qw[KQ_MAXQ][20][VQ_KQ_BLOCK]; /* int8 weights [j][g][row]; 4 groups
                                                past ng padded */
        float dd[KQ_MAXQ][16];
        int32_t sqh[KQ_MAXQ][16];
        memset(qw, 0, sizeof qw);
        memset(dd, 0, sizeof dd);
        memset(sqh, 0, sizeof sqh);
        for (int j = 0; j < nq; j++) {
            for (size_t c = 0; c < nc; c++)
                for (int r = 0; r < 4; r++)
                    F[j][c][r] = _mm512_setzero_ps();
            for (size_t g = 0; g < ng; g++)
                MW[j][g] = _mm512_setzero_ps();
        }
        for (size_t b = 0; b < nt; b += VQ_KQ_BLOCK) {
            __mmask16 vm[2];
            const size_t m = vq_block_start(rows, rstride, b, nt, vm);
            const uint8_t *blk = rows + b * rstride;
            __m512 S[16][2], Mn[16][2];
            block_headers(blk, rstride, m, ng, rix, S, Mn);
            __m512 W[KQ_MAXQ][2];
            for (int j = 0; j < nq; j++) {
                const float *wj = w + (size_t)(j0 + j) * wstride + b;
                W[j][0] = _mm512_maskz_loadu_ps(vm[0], wj), W[j][1] = _mm512_maskz_loadu_ps(vm[1], wj + 16);
            }
            switch (nq) {
            case 4: block_weights(BITS, 4, W, ng, S, Mn, qw, dd, sqh, MW); break;
            case 3: block_weights(BITS, 3, W, ng, S, Mn, qw, dd, sqh, MW); break;
            case 2: block_weights(BITS, 2, W, ng, S, Mn, qw, dd, sqh, MW); break;
            default: block_weights(BITS, 1, W, ng, S, Mn, qw, dd, sqh, MW); break;
            }
            for (size_t c = 0; c < nc; c++) {
                const size_t g0 = 64 * c / group;
                switch (nq) { /* a constant count: the sums stay in registers */
                case 4: chunk_block(BITS, 4, blk, rstride, coff, m, c, g0, lg, tidx, cmask, qw, dd, sqh, F); break;
                case 3: chunk_block(BITS, 3, blk, rstride, coff, m, c, g0, lg, tidx, cmask, qw, dd, sqh, F); break;
                case 2: chunk_block(BITS, 2, blk, rstride, coff, m, c, g0, lg, tidx, cmask, qw, dd, sqh, F); break;
                default: chunk_block(BITS, 1, blk, rstride, coff, m, c, g0, lg, tidx, cmask, qw, dd, sqh, F); break;
                }
            }
        }
        /* back in channel order, plus the mins' sums */
        __m512i OX[4];
        for (int mo = 0; mo < 4; mo++) {
            int32_t ix[16];
            for (int l = 0; l < 16; l++)
                ix[l] = BITS == 2 ? (l % 4 & 1) * 16 + 4 * mo + l / 4 : (l % 2) * 16 + 8 * (mo % 2) + l / 2;
            OX[mo] = _mm512_loadu_si512(ix);
        }
        for (int j = 0; j < nq; j++) {
            float Mg[16] = {0};
            for (size_t g = 0; g < ng; g++) {
                float lanes[16];
                _mm512_storeu_ps(lanes, MW[j][g]);
                Mg[g] = vq_sum16_lanes(lanes);
            }
            const __m512 Mv = _mm512_loadu_ps(Mg);
            float *a = acc + (size_t)(j0 + j) * astride;
            for (size_t c = 0; c < nc; c++)
                for (size_t mo = 0; mo < 4; mo++) {
                    __m512 out;
                    if (BITS == 2) /* lane l: register l % 4, lane 4mo + l / 4 */
                        out = _mm512_mask_blend_ps(0xCCCC, _mm512_permutex2var_ps(F[j][c][0], OX[mo], F[j][c][1]),
                                                   _mm512_permutex2var_ps(F[j][c][2], OX[mo], F[j][c][3]));
                    else /* lane l: register 2(mo / 2) + l % 2, lane 8(mo % 2) + l / 2 */
                        out = _mm512_permutex2var_ps(F[j][c][2 * (mo / 2)], OX[mo], F[j][c][2 * (mo / 2) + 1]);
                    const size_t e = 64 * c + 16 * mo;
                    const __m512 Me = _mm512_permutexvar_ps(group_index(e, 1, lg), Mv);
                    _mm512_storeu_ps(a + e, _mm512_add_ps(_mm512_loadu_ps(a + e), _mm512_add_ps(out, Me)));
                }
        }
    }
}

void vq_kivi_qaxpy_avx512x(const uint8_t *rows, size_t rstride, int bits, size_t nt, size_t D, size_t group,
                           const float *w, size_t wstride, int n_q, float *acc, size_t astride)
{
    if ((bits != 2 && bits != 4) || D % 64 || D > 64 * KQ_MAXC || group < 16 || (group & (group - 1)) || D % group ||
        D / group > 16 || rstride > (1u << 26)) { /* (group a power of two here) */
        vq_kivi_qaxpy_ref(rows, rstride, bits, nt, D, group, w, wstride, n_q, acc, astride);
        return;
    }
    const size_t ng = D / group;
    if (bits == 2 && ng == 2) /* head_dim 64, group 32 */
        qaxpy_bits(rows, rstride, 2, 2, nt, D, group, w, wstride, n_q, acc, astride);
    else if (bits == 2 && ng == 4) /* head_dim 128, group 32 */
        qaxpy_bits(rows, rstride, 2, 4, nt, D, group, w, wstride, n_q, acc, astride);
    else if (bits == 2)
        qaxpy_bits(rows, rstride, 2, 0, nt, D, group, w, wstride, n_q, acc, astride);
    else
        qaxpy_bits(rows, rstride, 4, 0, nt, D, group, w, wstride, n_q, acc, astride);
}
