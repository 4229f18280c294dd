/* qaxpy8_avx512x.c -- AVX-512 VNNI + VBMI twin of vq_qaxpy8
 * (kernels/qaxpy.h): the reference's bits.
 *
 * Per block of 32 rows, made one block ahead of its sums: the rows' block
 * scales gathered into columns (rows in lanes), the weight rows' scales
 * from the rows' largest |d| over the column blocks (four rows' maxima in
 * one tree, one division for all), and the int8 weights of every (weight
 * row, column block) made in registers, packed into a table of 32 bytes
 * per pair (rows in order), with their sums (one tree per four pairs).
 * Then per column block and quad of rows, the quad's code bytes are
 * transposed so that 32-bit lane b holds byte b of rows 0..3: q4_0's 16
 * bytes a row by one VPERMB (rows in 128-bit lanes; rows packed tight at
 * head_dim 64, 36 bytes, by two loads and one VPERMT2B), its whole bytes
 * (low nibble + 16 times the high one) and high nibbles masked in place
 * giving values b (their difference) and 16 + b; q8_0's 32 bytes a row
 * (rows 0, 1 in one register, 2, 3 in another) by two VPERMT2B, values b
 * and 16 + b, flipped to unsigned (+128). VPDPBUSD against the quad's four
 * weights (one broadcast word) adds the exact sums, and the offset (8 or
 * 128 times the weights' sum) comes off once per block before the float
 * fold. (Session 45, against the weights made pair by pair through memory
 * and both formats' bytes by VPERMB: D 128, 4 queries, one core, from L2,
 * q4_0 7.0-7.4 -> 5.4-5.9 ns a row, q8_0 7.2-7.9 -> 6.6-7.1, alternated;
 * figures/bench/ab-session45.txt part 1 (d).) */
#include "kernels/qaxpy.h"

#include <float.h>
#include <immintrin.h>
#include <stdalign.h>

#include "kernels/kivi_qaxpy.h"
#include "kernels/rows16_avx512.h"
#include "kernels/wq_avx512x.h"

#define Q8_MAXQ 4  /* weight rows per pass */
#define Q8_MAXB 16 /* column blocks: D <= 512 */

/* one block's int8 weights for up to Q8_MAXQ weight rows */
typedef struct {
    alignas(64) int8_t q[Q8_MAXQ][Q8_MAXB][VQ_KQ_BLOCK]; /* pair (j, g): its 32 rows in order */
    int32_t off[Q8_MAXQ][Q8_MAXB];                      /* the codes' offset times sum_i q of the pair */
    float s[Q8_MAXQ];                                   /* s_j = A_j / 127 */
    const uint8_t *blk;                                 /* the block's first row */
    size_t m;                                           /* its row count */
} q8_block;

/* q8_0: the VPERMT2B index of a quad's values 0..15 from rows 0, 1 in one
 * register and rows 2, 3 in another (32 bytes each): byte 4b + r <- byte
 * b of row r (values 16..31: the index plus 16) */
static inline __m512i q8_pair_index(void)
{
    int8_t tix[64];
    for (int p = 0; p < 64; p++)
        tix[p] = (int8_t)((p % 4) * 32 + p / 4);
    return _mm512_loadu_si512(tix);
}

/* a quad's code registers against the quad's weights wq (4 bytes a
 * weight row, VQ_KQ_BLOCK * Q8_MAXB bytes apart): the NQ weight rows'
 * integer sums I[j][0] += P0 . wq_j, I[j][1] += P1 . wq_j */
static inline __attribute__((always_inline)) void quad_dots(const int NQ, __m512i P0, __m512i P1, const int8_t *wq,
                                                            __m512i I[Q8_MAXQ][2])
{
    _Pragma("GCC unroll 4") for (int j = 0; j < NQ; j++)
    {
        const __m512i Wq = vq_bcast_words(wq + (size_t)j * Q8_MAXB * VQ_KQ_BLOCK, 1);
        I[j][0] = _mm512_dpbusd_epi32(I[j][0], P0, Wq);
        I[j][1] = _mm512_dpbusd_epi32(I[j][1], P1, Wq);
    }
}

/* q4_0: from the transposed whole bytes P0 (n_lo + 16 n_hi) the high
 * nibbles in place (16 n_hi): the low nibbles' sums are the difference */
static inline __m512i q4_high_nibbles(__m512i P0) { return _mm512_and_si512(P0, _mm512_set1_epi8((char)0xf0)); }

/* one quad of rows (p: their column block's codes) into the NQ weight
 * rows' integer sums I (quad_dots) */
static inline __attribute__((always_inline)) void quad_sums(const int BITS, const int NQ, const uint8_t *const p[4],
                                                            __m512i tidx, const int8_t *wq, __m512i I[Q8_MAXQ][2])
{
    __m512i P0, P1;
    if (BITS == 4) {
        P0 = vq_quad_bytes(p, 0, tidx);
        P1 = q4_high_nibbles(P0);
    } else {
        /* rows 0, 1 (32 bytes each) in A, rows 2, 3 in B; one VPERMT2B per
         * run of 16 values (tidx: q8_pair_index) */
        const __m512i flip = _mm512_set1_epi8((char)0x80);
        const __m512i A =
            _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_loadu_si256((const __m256i *)(const void *)p[0])),
                               _mm256_loadu_si256((const __m256i *)(const void *)p[1]), 1);
        const __m512i B =
            _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_loadu_si256((const __m256i *)(const void *)p[2])),
                               _mm256_loadu_si256((const __m256i *)(const void *)p[3]), 1);
        P0 = _mm512_xor_si512(_mm512_permutex2var_epi8(A, tidx, B), flip);
        P1 = _mm512_xor_si512(_mm512_permutex2var_epi8(A, _mm512_add_epi8(tidx, _mm512_set1_epi8(16)), B), flip);
    }
    quad_dots(NQ, P0, P1, wq, I);
}

/* q4_0 rows at head_dim 64 packed tight (36 bytes each: a quad is 144
 * contiguous bytes): the VPERMT2B index that takes column block g's code
 * bytes of the quad, transposed as vq_quad_bytes gives them (byte 4b + r
 * <- byte b of row r's codes), from the two registers loaded at the quad's
 * byte 16 g and 16 g + 64 (both inside the quad) */
#define Q4_TIGHT_ROW 36
static inline __m512i q4_tight_index(size_t g)
{
    int8_t tix[64];
    for (int p = 0; p < 64; p++)
        tix[p] = (int8_t)(Q4_TIGHT_ROW * (p % 4) + 2 + 2 * (int)g + p / 4);
    return _mm512_loadu_si512(tix);
}

/* column block g of a block of m rows: the NQ weight rows' integer sums,
 * folded into F[j][g]. The whole quads run in a loop of their own (four
 * row pointers a base and stride apart) and a last short quad (rows
 * repeating the block's last) after it, rather than one loop choosing its
 * rows each quad: q8_0 at D 128, 4 queries, one core 8.4 -> 7.6 ns a row
 * (figures/bench/ab-session47.txt part 2). */
static inline __attribute__((always_inline)) void block_column(const int BITS, const int NQ, const uint8_t *blk,
                                                               size_t rstride, size_t m, size_t g, __m512i tidx,
                                                               const q8_block *st, __m512 F[Q8_MAXQ][Q8_MAXB][2],
                                                               vq_pf_share *pf)
{
    const size_t off = g * (BITS == 8 ? 34 : 18) + 2;
    __m512i I[Q8_MAXQ][2];
    _Pragma("GCC unroll 4") for (int j = 0; j < NQ; j++) I[j][0] = I[j][1] = _mm512_setzero_si512();
    const uint8_t *row = blk + off;
    size_t u = 0;
    if (BITS == 4 && rstride == Q4_TIGHT_ROW) { /* two loads and a VPERMT2B a quad instead of four loads
                                                 * merged and a VPERMB (one core, D 64, 3 queries -4%) */
        const __m512i tix = q4_tight_index(g);
        const uint8_t *quad = blk + 16 * g;
        for (; 4 * u + 4 <= m; u++, quad += 4 * Q4_TIGHT_ROW) {
            vq_pf_step(pf);
            const __m512i P0 = _mm512_permutex2var_epi8(_mm512_loadu_si512(quad), tix, _mm512_loadu_si512(quad + 64));
            quad_dots(NQ, P0, q4_high_nibbles(P0), &st->q[0][g][4 * u], I);
        }
        row += 4 * u * rstride;
    }
    for (; 4 * u + 4 <= m; u++, row += 4 * rstride) {
        vq_pf_step(pf);
        const uint8_t *const p[4] = {row, row + rstride, row + 2 * rstride, row + 3 * rstride};
        quad_sums(BITS, NQ, p, tidx, &st->q[0][g][4 * u], I);
    }
    if (4 * u < m) {
        vq_pf_step(pf);
        const uint8_t *p[4];
        vq_quad_rows(blk, rstride, off, u, m, p);
        quad_sums(BITS, NQ, p, tidx, &st->q[0][g][4 * u], I);
    }
    _Pragma("GCC unroll 4") for (int j = 0; j < NQ; j++)
    {
        const __m512i corr = _mm512_set1_epi32(st->off[j][g]);
        const __m512 s = _mm512_set1_ps(st->s[j]);
        /* q4_0: the low nibbles' sums I0 - I1, the high ones' I1 / 16 (exact: multiples of 16) */
        const __m512i I0 = BITS == 4 ? _mm512_sub_epi32(I[j][0], I[j][1]) : I[j][0];
        const __m512i I1 = BITS == 4 ? _mm512_srai_epi32(I[j][1], 4) : I[j][1];
        F[j][g][0] = _mm512_fmadd_ps(s, _mm512_cvtepi32_ps(_mm512_sub_epi32(I0, corr)), F[j][g][0]);
        F[j][g][1] = _mm512_fmadd_ps(s, _mm512_cvtepi32_ps(_mm512_sub_epi32(I1, corr)), F[j][g][1]);
    }
}

/* N (2 or 4) pairs (j, g0 + t) of weight row j (W its weights, VI its
 * inv in every lane; pairs at or past nb zeros): their int8 weights
 * stored by twos into st->q[j][g0 + 2u] (rows in order), their q's
 * summed by halves into Q[t] (vq_wq_pair) */
static inline __attribute__((always_inline)) void row_pairs(const int N, const __m512 W[2], __m512 VI,
                                                            const __m512 Dv[Q8_MAXB][2], size_t g0, size_t nb,
                                                            int held, const __mmask16 live[2], __m512i ox,
                                                            int8_t (*dst)[VQ_KQ_BLOCK], __m512i Q[])
{
    __m512i P[4];
    _Pragma("GCC unroll 4") for (int t = 0; t < N; t++)
    {
        if (g0 + (size_t)t < nb)
            vq_wq_pair(W, Dv[g0 + t], VI, held, live, &P[t], &Q[t]);
        else
            P[t] = Q[t] = _mm512_setzero_si512();
    }
    _Pragma("GCC unroll 2") for (int u = 0; u < N / 2; u++)
        _mm512_store_si512((void *)dst[g0 + 2 * (size_t)u],
                           _mm512_permutexvar_epi8(ox, _mm512_packs_epi16(P[2 * u], P[2 * u + 1])));
}

/* The int8 weights of a block of rows for NQ weight rows (qaxpy.h: A_j =
 * max_i |w_ji| max_g |d_ig|, q = (w_ji d_ig) inv_j rounded): W[j][h] the
 * block's w_j of rows 16h..16h+15 (0 past it), Dv[g][h] the rows' scales
 * of column block g, nb column blocks; into st. Each sum tree takes four
 * pairs: with one or two column blocks those of two weight rows, else
 * four column blocks of one (pairs past nb: zeros, inside the table:
 * Q8_MAXB is a multiple of 4). */
static inline __attribute__((always_inline)) void block_weights(const int BITS, const int NQ, const __m512 W[Q8_MAXQ][2],
                                                                const __m512 Dv[Q8_MAXB][2], size_t nb,
                                                                const __mmask16 live[2], q8_block *st)
{
    __m128 sc, inv;
    const int held = vq_wq_row_scales(W, NQ, Dv, nb, &sc, &inv);
    _mm_storeu_ps(st->s, sc);
    const __m512i ox = vq_pair_order();
    const int shift = BITS == 8 ? 7 : 3;
    __m512 VI[Q8_MAXQ];
    _Pragma("GCC unroll 4") for (int j = 0; j < NQ; j++)
        VI[j] = _mm512_permutexvar_ps(_mm512_set1_epi32(j), _mm512_zextps128_ps512(inv));
    if (nb <= 2) {
        __m512i Q[2 * Q8_MAXQ + 2];
        _Pragma("GCC unroll 4") for (int j = 0; j < NQ; j++)
            row_pairs(2, W[j], VI[j], Dv, 0, nb, held, live, ox, st->q[j], &Q[2 * j]);
        Q[2 * NQ] = Q[2 * NQ + 1] = _mm512_setzero_si512(); /* a last odd row's partner */
        _Pragma("GCC unroll 2") for (int j = 0; j < NQ; j += 2)
        {
            const __m128i s4 = _mm_slli_epi32(vq_sum4x16_epi32(Q[2 * j], Q[2 * j + 1], Q[2 * j + 2], Q[2 * j + 3]), shift);
            _mm_storel_epi64((__m128i *)(void *)&st->off[j][0], s4);
            if (j + 1 < NQ)
                _mm_storel_epi64((__m128i *)(void *)&st->off[j + 1][0], _mm_unpackhi_epi64(s4, s4));
        }
        return;
    }
    _Pragma("GCC unroll 4") for (int j = 0; j < NQ; j++)
        for (size_t g = 0; g < nb; g += 4) {
            __m512i Q[4];
            row_pairs(4, W[j], VI[j], Dv, g, nb, held, live, ox, st->q[j], Q);
            const __m128i s4 = vq_sum4x16_epi32(Q[0], Q[1], Q[2], Q[3]);
            _mm_storeu_si128((__m128i *)(void *)&st->off[j][g], _mm_slli_epi32(s4, shift));
        }
}

/* What the block of rows at row b needs besides its codes, for NQ weight
 * rows: the rows' block scales as columns (rows past the block 0): with
 * one or two column blocks and rows close together from each half's span
 * (rows16_avx512.h vq_rows16_span_halves), else one gather of 16 rows'
 * words per column block and half; then the int8 weights (block_weights) */
static inline __attribute__((always_inline)) void block_prep(const int BITS, const int NQ, const uint8_t *codes,
                                                             size_t rstride, size_t b, size_t nt, size_t nb,
                                                             __m512i rix, const vq_rows16_span *sp, const float *w,
                                                             size_t wstride, q8_block *st)
{
    const size_t bb = BITS == 8 ? 34 : 18;
    __mmask16 live[2];
    st->m = vq_block_start(b, nt, live);
    st->blk = codes + b * rstride;
    __m512 W[Q8_MAXQ][2], Dv[Q8_MAXB][2];
    if (sp->nreg) /* nb <= 2 */
        _Pragma("GCC unroll 2") for (int h = 0; h < 2; h++)
        {
            const size_t have = st->m <= 16 * (size_t)h ? 0 : st->m - 16 * (size_t)h;
            const __m512i hw = vq_rows16_span_halves(sp, st->blk + 16 * (size_t)h * rstride, have < 16 ? have : 16);
            Dv[0][h] = vq_span_floats(hw, 0);
            if (nb == 2)
                Dv[1][h] = vq_span_floats(hw, 1);
        }
    else
        for (size_t g = 0; g < nb; g++)
            _Pragma("GCC unroll 2") for (int h = 0; h < 2; h++)
                Dv[g][h] = vq_low_halves16(vq_rows16_words(st->blk + 16 * (size_t)h * rstride + g * bb, rix, live[h]));
    _Pragma("GCC unroll 4") for (int j = 0; j < NQ; j++)
    {
        const float *wj = w + (size_t)j * wstride + b;
        W[j][0] = _mm512_maskz_loadu_ps(live[0], wj), W[j][1] = _mm512_maskz_loadu_ps(live[1], wj + 16);
    }
    block_weights(BITS, NQ, W, Dv, nb, live, st);
}

/* the integer sums of every block of nt rows for NQ weight rows, each
 * block's weights made one block ahead (st[0], st[1] in turn), so that
 * their chain of dependent steps overlaps the previous block's sums */
static inline __attribute__((always_inline)) void blocks_all(const int BITS, const int NQ, const uint8_t *codes,
                                                             size_t rstride, size_t nt, size_t nb, __m512i rix,
                                                             const vq_rows16_span *sp, __m512i tidx, const float *w,
                                                             size_t wstride,
                                                             __m512 F[Q8_MAXQ][Q8_MAXB][2], vq_pf_share *pf,
                                                             q8_block st[2])
{
    if (nt)
        block_prep(BITS, NQ, codes, rstride, 0, nt, nb, rix, sp, w, wstride, &st[0]);
    for (size_t b = 0; b < nt; b += VQ_KQ_BLOCK) {
        if (b + VQ_KQ_BLOCK < nt)
            block_prep(BITS, NQ, codes, rstride, b + VQ_KQ_BLOCK, nt, nb, rix, sp, w, wstride,
                       &st[(b / VQ_KQ_BLOCK + 1) & 1]);
        const q8_block *cur = &st[(b / VQ_KQ_BLOCK) & 1];
        for (size_t g = 0; g < nb; g++)
            block_column(BITS, NQ, cur->blk, rstride, cur->m, g, tidx, cur, F, pf);
    }
}

/* blocks_all with the weight-row count nq as a constant (the sums stay in
 * registers), and nb as the caller's constant where it is one */
static inline __attribute__((always_inline)) void blocks_nq(const int BITS, int nq, const size_t nb,
                                                            const uint8_t *codes, size_t rstride, size_t nt,
                                                            __m512i rix, const vq_rows16_span *sp, __m512i tidx,
                                                            const float *w, size_t wstride,
                                                            __m512 F[Q8_MAXQ][Q8_MAXB][2], vq_pf_share *pf,
                                                            q8_block st[2])
{
    switch (nq) {
    case 4: blocks_all(BITS, 4, codes, rstride, nt, nb, rix, sp, tidx, w, wstride, F, pf, st); break;
    case 3: blocks_all(BITS, 3, codes, rstride, nt, nb, rix, sp, tidx, w, wstride, F, pf, st); break;
    case 2: blocks_all(BITS, 2, codes, rstride, nt, nb, rix, sp, tidx, w, wstride, F, pf, st); break;
    default: blocks_all(BITS, 1, codes, rstride, nt, nb, rix, sp, tidx, w, wstride, F, pf, st); break;
    }
}

static inline __attribute__((always_inline)) void qaxpy8_bits(const int BITS, const uint8_t *codes, size_t rstride,
                                                              size_t nt, size_t D, const float *w, size_t wstride,
                                                              int n_q, float *acc, size_t astride, q8_block st[2])
{
    const size_t nb = D / 32;
    const __m512i tidx = BITS == 8 ? q8_pair_index() : vq_quad_index();
    const __m512i rix = vq_rows16_index(rstride); /* row r's offset in a half block (gathers) */
    vq_rows16_span sp; /* or the halves' span loads (block_prep) */
    vq_rows16_span_init(&sp, rstride, 0, BITS == 8 ? 34 : 18, nb);
    for (int j0 = 0; j0 < n_q; j0 += Q8_MAXQ) {
        const int nq = n_q - j0 < Q8_MAXQ ? n_q - j0 : Q8_MAXQ;
        __m512 F[Q8_MAXQ][Q8_MAXB][2];
        for (int j = 0; j < nq; j++)
            for (size_t g = 0; g < nb; g++)
                F[j][g][0] = F[j][g][1] = _mm512_setzero_ps();
        vq_pf_share pf = vq_block_fetch(codes, rstride, nt, nb, j0 == 0); /* the first pass streams the rows */
        const float *wj = w + (size_t)j0 * wstride;
        if (nb == 2) /* head_dim 64 with nb a constant: F stays in registers (one core, 3 queries -7..12%) */
            blocks_nq(BITS, nq, 2, codes, rstride, nt, rix, &sp, tidx, wj, wstride, F, &pf, st);
        else
            blocks_nq(BITS, nq, nb, codes, rstride, nt, rix, &sp, tidx, wj, wstride, F, &pf, st);
        for (int j = 0; j < nq; j++) {
            float *a = acc + (size_t)(j0 + j) * astride;
            for (size_t g = 0; g < nb; g++)
                for (int h = 0; h < 2; h++) {
                    float *e = a + 32 * g + 16 * (size_t)h;
                    _mm512_storeu_ps(e, _mm512_add_ps(_mm512_loadu_ps(e), F[j][g][h]));
                }
        }
    }
}

void vq_qaxpy8_avx512x(int bits, const uint8_t *codes, size_t rstride, size_t nt, size_t D, const float *w,
                       size_t wstride, int n_q, float *acc, size_t astride)
{
    if ((bits != 4 && bits != 8) || D % 32 || D > 32 * Q8_MAXB || rstride > (1u << 26)) {
        vq_qaxpy8_ref(bits, codes, rstride, nt, D, w, wstride, n_q, acc, astride);
        return;
    }
    q8_block st[2];
    if (bits == 4)
        qaxpy8_bits(4, codes, rstride, nt, D, w, wstride, n_q, acc, astride, st);
    else
        qaxpy8_bits(8, codes, rstride, nt, D, w, wstride, n_q, acc, astride, st);
}
