/* kivi_qaxpy_avx512x.c -- AVX-512 VNNI + VBMI twin of vq_kivi_qaxpy
 * (kernels/kivi_qaxpy.h): the reference's bits.
 *
 * Per block of 32 rows the headers are gathered into float vectors (rows
 * in lanes) and the weight rows' scales taken from the rows' largest |s|
 * (four rows' maxima in one tree, one division for all). Per 64-channel
 * chunk the int8 weights of its (j, g) pairs are made at once and kept in registers (stores then wider loads of them
 * stalled on store forwarding). Then per quad of rows, the quad's code
 * bytes are loaded into the four 128-bit lanes of a register and
 * transposed by one VPERMB so that each 32-bit lane holds one byte of rows
 * 0..3 (2 and 4 bits: lane b of a unit of 16 code bytes -- the chunk at 2
 * bits, a byte half of it at 4 -- holds byte (b % n) * 16 / n + b / n, the
 * lanes taking the unit's n groups in turn); a mask per code position k
 * leaves each channel's four codes in place (times 4^k, or 16 for high
 * nibbles); 3-bit codes straddle bytes, so each row's 64 are unpacked to
 * bytes first and four rows interleaved per lane by unpacks (register k,
 * lane 4L + i: channel 16L + 4k + i). VPDPBUSD against the four rows'
 * weights of that lane's group adds the exact integer sums: at 2 and 4
 * bits one broadcast load per quad, unit and query from a table of the
 * chunk's weights stored quad by quad once per chunk (against one VPERMT2D
 * each before: at D 128, group 32, 4 queries 8.6 -> 7.6 ns a row at 2 bits,
 * 9.4 -> 8.5 at 4; figures/bench/ab-session35.txt part 1), at 3 bits one VPERMT2D
 * from the weight registers. Block sums are shifted back (exact:
 * every product is a multiple of the place value) and fold into float
 * accumulators (one FMA), which are put back in channel order once at the
 * end. */
#include "kernels/kivi_qaxpy.h"

#include <float.h>
#include <immintrin.h>
#include <stdalign.h>

#include "core/vexp.h"
#include "kernels/rows16_avx512.h"
#include "kernels/units16_avx512.h"
#include "kernels/unpack_avx512x.h"
#include "kernels/wq_avx512x.h"

#define KQ_MAXQ 4 /* weight rows per pass */
#define KQ_MAXC 8 /* 64-channel chunks: D <= 512 */

/* scales S[g][h] and mins Mn[g][h] of the block's rows 16h..16h+15 (rows
 * at or past m read as 0): header word k of 16 rows (lane i: row i), each
 * word column split into its two halves. Whole halves of 16 rows take
 * their words 16 bytes at a time (units16_avx512.h vq_units16_chunk: 16
 * loads and a 4x4 word transpose, against one gather per word, ~20 cycles
 * each on AMD Zen 4; the rows hold at least 16 bytes: a header and 64 or
 * more codes), a short half one gather per word (rix: the rows' offsets;
 * nothing read past m) */
static inline __attribute__((always_inline)) void block_headers(const uint8_t *rows, size_t rstride, size_t m,
                                                                size_t ng, __m512i rix, __m512 S[16][2],
                                                                __m512 Mn[16][2])
{
    for (size_t h = 0; h < 2; h++) {
        const uint8_t *r0 = rows + 16 * h * rstride;
        const int whole = m >= 16 * (h + 1);
        const __mmask16 live = vq_rows16_live(m > 16 * h ? m - 16 * h : 0);
        for (size_t k0 = 0; k0 < ng; k0 += 4) {
            __m512i W[4];
            if (whole)
                vq_units16_chunk(r0 + 4 * k0, rstride, W);
            for (size_t k = k0; k < ng && k < k0 + 4; k++) {
                const __m512i wv = whole ? W[k - k0] : vq_rows16_words(r0 + 4 * k, rix, live);
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
}

/* lane b's group (group = 1 << lg): channel ch0 + step*b */
static inline __m512i group_index(size_t ch0, int step, int lg)
{
    const __m512i lane = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    const __m512i ch = _mm512_add_epi32(_mm512_set1_epi32((int)ch0), _mm512_mullo_epi32(lane, _mm512_set1_epi32(step)));
    return _mm512_srli_epi32(ch, (unsigned)lg);
}

/* the same relative to group g0, times 8 (the words of a group in QA, QB) */
static inline __m512i word_index(size_t ch0, int step, int lg, size_t g0)
{
    return _mm512_slli_epi32(_mm512_sub_epi32(group_index(ch0, step, lg), _mm512_set1_epi32((int)g0)), 3);
}

/* 2 and 4 bits: the VPERMB index of a quad's unit of 16 code bytes (row
 * r's in 128-bit lane r): 32-bit lane b <- byte (b % ngc) * (16 / ngc) + b
 * / ngc of rows 0..3, so that the lanes take the unit's ngc groups in turn
 * and a quad's weights are one broadcast of ngc words (vq_bcast_words) */
static inline __m512i bc_quad_index(int ngc)
{
    int8_t tix[64];
    for (int p = 0; p < 64; p++) {
        const int b = p / 4, r = p % 4;
        tix[p] = (int8_t)(16 * r + (b % ngc) * (16 / ngc) + b / ngc);
    }
    return _mm512_loadu_si512(tix);
}

/* the 32-bit lane of code byte x of a unit under bc_quad_index(ngc) */
static inline int bc_lane_of(int x, int ngc) { return x % (16 / ngc) * ngc + x / (16 / ngc); }

/* 2 and 4 bits: the groups a unit of 16 code bytes spans (the chunk of 64
 * channels at 2 bits, a byte half of it at 4), out of the chunk's NGC */
static inline int bc_unit_groups(int bits, int ngc) { return bits == 4 && ngc > 1 ? ngc / 2 : ngc; }

/* 2 and 4 bits: the chunk's weights (chunk_weights' QA, QB: word 8gg + u
 * the quad u of group gg) stored quad by quad for vq_bcast_words: tab[j][4 (NGC
 * u + gg) + r] = q of row 4u + r in the chunk's group gg (one VPERMD or two
 * VPERMT2D and one or two stores per weight row) */
static inline __attribute__((always_inline)) void bc_table(const int NQ, const int NGC, const __m512i QA[KQ_MAXQ],
                                                           const __m512i QB[KQ_MAXQ], int8_t tab[KQ_MAXQ][128])
{
    _Pragma("GCC unroll 4") for (int j = 0; j < NQ; j++)
    {
        if (NGC == 1) {
            _mm512_store_si512((void *)tab[j], QA[j]);
        } else if (NGC == 2) {
            const __m512i ix = _mm512_setr_epi32(0, 8, 1, 9, 2, 10, 3, 11, 4, 12, 5, 13, 6, 14, 7, 15);
            _mm512_store_si512((void *)tab[j], _mm512_permutexvar_epi32(ix, QA[j]));
        } else { /* QB's words at index 16 + */
            const __m512i i0 = _mm512_setr_epi32(0, 8, 16, 24, 1, 9, 17, 25, 2, 10, 18, 26, 3, 11, 19, 27);
            const __m512i i1 = _mm512_add_epi32(i0, _mm512_set1_epi32(4));
            _mm512_store_si512((void *)tab[j], _mm512_permutex2var_epi32(QA[j], i0, QB[j]));
            _mm512_store_si512((void *)(tab[j] + 64), _mm512_permutex2var_epi32(QA[j], i1, QB[j]));
        }
    }
}

/* The int8 weights of one 64-channel chunk (groups g0 .. g0+NGC-1 of it,
 * NGC = 64 / group, or 1 for groups of 64 and more) for NQ weight rows,
 * kept in registers (kivi_qaxpy.h: q = (w_ji s_ig) inv_j rounded; W[j][h]
 * the block's w_j of rows 16h..16h+15, VI[j] inv_j in every lane): pair
 * (j, gg) is k = NGC*j + gg; QA[j] bytes 32gg + r (gg = 0, 1) and QB[j]
 * (gg = 2, 3) its q of row r; lane k of SQH h * sum_r q (the codes'
 * centring). held: some inv_j is not finite (vq_hold_weights) */
static inline __attribute__((always_inline)) void chunk_weights(const int NQ, const int NGC, const __m512 W[KQ_MAXQ][2],
                                                                const __m512 VI[KQ_MAXQ],
                                                                const __m512 S[16][2], const __mmask16 live[2],
                                                                int held, size_t g0, const int BITS,
                                                                __m512i QA[KQ_MAXQ], __m512i QB[KQ_MAXQ],
                                                                __m512i *SQH)
{
    const int NP = NQ * NGC, NT = (NP + 3) / 4;
    __m512i P[16], Q[16];
    _Pragma("GCC unroll 16") for (int k = NP; k < 4 * NT; k++) Q[k] = _mm512_setzero_si512();
    _Pragma("GCC unroll 16") for (int k = 0; k < NP; k++)
    {
        const int j = k / NGC, gg = k % NGC;
        vq_wq_pair(W[j], S[g0 + gg], VI[j], held, live, &P[k], &Q[k]);
    }
    __m128i s4[4];
    _Pragma("GCC unroll 4") for (int t = 0; t < 4; t++)
        s4[t] = t < NT ? vq_sum4x16_epi32(Q[4 * t], Q[4 * t + 1], Q[4 * t + 2], Q[4 * t + 3]) : _mm_setzero_si128();
    const __m512i sq = _mm512_inserti32x4(
        _mm512_inserti32x4(_mm512_inserti32x4(_mm512_castsi128_si512(s4[0]), s4[1], 1), s4[2], 2), s4[3], 3);
    *SQH = _mm512_slli_epi32(sq, BITS - 1);
    const __m512i ox = vq_pair_order(); /* byte 32gg + r: row r of pair gg */
    _Pragma("GCC unroll 4") for (int j = 0; j < NQ; j++)
    {
        const int k = NGC * j;
        QA[j] = _mm512_permutexvar_epi8(ox, _mm512_packs_epi16(P[k], NGC > 1 ? P[k + 1] : P[k]));
        QB[j] = NGC > 2 ? _mm512_permutexvar_epi8(ox, _mm512_packs_epi16(P[k + 2], P[k + 3])) : QA[j];
    }
}

/* one 64-channel chunk c of a block of m rows: the integer sums of the
 * NQ weight rows (the chunk's int8 weights from chunk_weights), folded
 * into F[j][c] with the pairs' scales */
static inline __attribute__((always_inline)) void
chunk_block(const int BITS, const int NQ, const int NGC, const uint8_t *blk, size_t rstride, size_t coff, size_t m,
            size_t c, size_t g0, int lg, __m512i tidx, __m512i cmask, const vq_unpack64_ctl *u3,
            const __m512i QA[KQ_MAXQ], const __m512i QB[KQ_MAXQ], const int8_t tab[KQ_MAXQ][128], __m512 SC,
            __m512i SQH, __m512 F[KQ_MAXQ][KQ_MAXC][4], vq_pf_share *pf)
{
    __m512i I[KQ_MAXQ][4];
    _Pragma("GCC unroll 4") for (int j = 0; j < NQ; j++)
        _Pragma("GCC unroll 4") for (int r = 0; r < 4; r++) I[j][r] = _mm512_setzero_si512();
    /* each lane's group less g0, times 8 (3 bits: the group of channel 64c
     * + 4b; 2 and 4 bits: that of lane b of a unit of 16 code bytes under
     * bc_quad_index, NGH groups to a unit, at 4 bits one map per byte half) */
    const int NGH = bc_unit_groups(BITS, NGC), HO1 = BITS == 4 && NGC > 1 ? NGH : 0;
    const __m512i lane = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    const __m512i bx = _mm512_slli_epi32(_mm512_and_si512(lane, _mm512_set1_epi32(NGH - 1)), 3);
    const __m512i x0 = BITS == 3 ? word_index(64 * c, 4, lg, g0) : bx,
                  x1 = _mm512_add_epi32(bx, _mm512_set1_epi32(8 * HO1));
    for (size_t u = 0; 4 * u < m; u++) {
        vq_pf_step(pf);
        const uint8_t *p[4];
        vq_quad_rows(blk, rstride, coff, u, m, p);
        __m512i P[4];
        if (BITS == 2) { /* code k left in place: 4^k times it (undone per block) */
            const __m512i T = vq_quad_bytes(p, 16 * c, tidx);
            _Pragma("GCC unroll 4") for (int k = 0; k < 4; k++) P[k] =
                _mm512_and_si512(T, _mm512_set1_epi8((char)(3 << (2 * k))));
            _Pragma("GCC unroll 4") for (int j = 0; j < NQ; j++)
            {
                const __m512i Wq = vq_bcast_words(tab[j] + 4 * NGC * u, NGC);
                _Pragma("GCC unroll 4") for (int k = 0; k < 4; k++) I[j][k] = _mm512_dpbusd_epi32(I[j][k], P[k], Wq);
            }
        } else if (BITS == 3) { /* codes unpacked to bytes (channel = byte), then four rows per 32-bit lane: register k
                                 * lane 4L + i = channel 16L + 4k + i, the group of lane 4L (group >= 16) */
            __m512i R[4];
            _Pragma("GCC unroll 4") for (int t = 0; t < 4; t++) R[t] = vq_unpack64(p[t] + 24 * c, u3->ld, u3);
            const __m512i a01 = _mm512_unpacklo_epi8(R[0], R[1]), b01 = _mm512_unpackhi_epi8(R[0], R[1]);
            const __m512i a23 = _mm512_unpacklo_epi8(R[2], R[3]), b23 = _mm512_unpackhi_epi8(R[2], R[3]);
            P[0] = _mm512_unpacklo_epi16(a01, a23), P[1] = _mm512_unpackhi_epi16(a01, a23);
            P[2] = _mm512_unpacklo_epi16(b01, b23), P[3] = _mm512_unpackhi_epi16(b01, b23);
            const __m512i ix = _mm512_add_epi32(x0, _mm512_set1_epi32((int)u));
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
            _Pragma("GCC unroll 4") for (int j = 0; j < NQ; j++)
            {
                const __m512i Wa = vq_bcast_words(tab[j] + 4 * NGC * u, NGH);
                const __m512i Wb = vq_bcast_words(tab[j] + 4 * (NGC * u + (size_t)HO1), NGH);
                I[j][0] = _mm512_dpbusd_epi32(I[j][0], P[0], Wa);
                I[j][1] = _mm512_dpbusd_epi32(I[j][1], P[1], Wa);
                I[j][2] = _mm512_dpbusd_epi32(I[j][2], P[2], Wb);
                I[j][3] = _mm512_dpbusd_epi32(I[j][3], P[3], Wb);
            }
        }
    }
    /* each lane's pair: NGC*j + its group - g0 */
    const __m512i gx0 = _mm512_srli_epi32(x0, 3), gx1 = _mm512_srli_epi32(x1, 3);
    _Pragma("GCC unroll 4") for (int j = 0; j < NQ; j++)
    {
        const __m512 d = _mm512_permutexvar_ps(_mm512_set1_epi32(j), SC); /* d_j, every group's */
        const __m512i k0 = _mm512_add_epi32(gx0, _mm512_set1_epi32(NGC * j));
        const __m512i k1 = _mm512_add_epi32(gx1, _mm512_set1_epi32(NGC * j));
        const __m512i h0 = _mm512_permutexvar_epi32(k0, SQH), h1 = _mm512_permutexvar_epi32(k1, SQH);
        _Pragma("GCC unroll 4") for (int r = 0; r < 4; r++)
        {
            const int hi = BITS == 4 && r >= 2;
            /* the codes' place values off: every product was a multiple (exact) */
            const __m512i Ir = _mm512_srai_epi32(I[j][r], (unsigned)(BITS == 2 ? 2 * r : BITS == 4 ? 4 * (r & 1) : 0));
            F[j][c][r] = _mm512_fmadd_ps(d, _mm512_cvtepi32_ps(_mm512_sub_epi32(Ir, hi ? h1 : h0)), F[j][c][r]);
        }
    }
}

/* What a block of m rows needs besides its codes, for a constant weight-row
 * count NQ and groups per chunk NGC: the weight rows' scales d_j (SC lane
 * j), chunk by chunk the int8 weights (made again only where the chunk's
 * first group changes: groups of 128 and more span chunks; slot[c] names
 * the chunk whose weights chunk c reads) with their centring sums, and
 * the mins' float sums MW of every group (v = s (c - h) + (m + h s))
 * added. Made ahead of the block's integer sums where that pays
 * (blocks_all), so that the weights' long chain of dependent steps
 * overlaps the previous block's sums instead of stalling them (the same
 * operations per block in the same order: the same bits). */
typedef struct {
    union {
        int8_t tab[KQ_MAXC][KQ_MAXQ][128]; /* 2 and 4 bits: bc_table's */
        __m512i qab[KQ_MAXC][2][KQ_MAXQ];  /* 3 bits: chunk_weights' QA, QB */
    } wt;
    __m512 SC;            /* lane j: d_j */
    __m512i SQH[KQ_MAXC]; /* chunk_weights' */
    unsigned char slot[KQ_MAXC];
    const uint8_t *blk;
    size_t m;
} kq_block;

/* a call's blocks in turn, and block_prep's header floats (one of each for
 * every shape and weight-row count: inlined into each, their own arrays
 * had tripled the call's stack frame) */
typedef struct {
    kq_block B[2];
    __m512 S[16][2], Mn[16][2];
} kq_work;

static inline __attribute__((always_inline)) void
block_prep(const int BITS, const int NQ, const int NGC, const size_t NC, const uint8_t *rows, size_t rstride,
           size_t b, size_t nt, size_t ng, size_t nc, int lg, __m512i rix, const float *w, size_t wstride,
           __m512 MW[KQ_MAXQ][16], kq_block *B, __m512 S[16][2], __m512 Mn[16][2])
{
    __mmask16 live[2];
    const size_t m = vq_block_start(b, nt, live);
    B->blk = rows + b * rstride, B->m = m;
    block_headers(B->blk, rstride, m, ng, rix, S, Mn);
    __m512 W[KQ_MAXQ][2];
    _Pragma("GCC unroll 4") for (int j = 0; j < NQ; j++)
    {
        const float *wj = w + (size_t)j * wstride + b;
        W[j][0] = _mm512_maskz_loadu_ps(live[0], wj), W[j][1] = _mm512_maskz_loadu_ps(live[1], wj + 16);
    }
    /* A_j = max_i |w_ji| max_g |s_ig|, d_j = A_j / 127, inv_j = 127 / A_j */
    __m128 sc, inv;
    const int held = vq_wq_row_scales(W, NQ, S, ng, &sc, &inv);
    B->SC = _mm512_zextps128_ps512(sc);
    __m512 VI[KQ_MAXQ];
    _Pragma("GCC unroll 4") for (int j = 0; j < NQ; j++)
        VI[j] = _mm512_permutexvar_ps(_mm512_set1_epi32(j), _mm512_zextps128_ps512(inv));
    size_t gw = (size_t)-1, slot = 0; /* the first group of the weights made, and their chunk */
    for (size_t c = 0; c < (NC ? NC : nc); c++) {
        const size_t g0 = 64 * c >> lg;
        if (g0 != gw) {
            __m512i QA[KQ_MAXQ], QB[KQ_MAXQ];
            chunk_weights(NQ, NGC, W, VI, S, live, held, g0, BITS, QA, QB, &B->SQH[c]);
            if (BITS != 3)
                bc_table(NQ, NGC, QA, QB, B->wt.tab[c]);
            else
                _Pragma("GCC unroll 4") for (int j = 0; j < NQ; j++) B->wt.qab[c][0][j] = QA[j], B->wt.qab[c][1][j] = QB[j];
            gw = g0, slot = c;
        }
        B->slot[c] = (unsigned char)slot;
    }
    /* after the weights: the sums MW stored between the reads of S made
     * every block slower by a few percent at D 64 */
    const __m512 hv = _mm512_set1_ps((float)(1 << (BITS - 1)));
    for (size_t g = 0; g < ng; g++) {
        const __m512 m0 = _mm512_fmadd_ps(hv, S[g][0], Mn[g][0]), m1 = _mm512_fmadd_ps(hv, S[g][1], Mn[g][1]);
        _Pragma("GCC unroll 4") for (int j = 0; j < NQ; j++)
            MW[j][g] = _mm512_fmadd_ps(W[j][1], m1, _mm512_fmadd_ps(W[j][0], m0, MW[j][g]));
    }
}

/* the integer sums of every block of nt rows for NQ weight rows. Where a
 * block's sums are long enough to hide the next block's weights (NQ
 * times the chunk count at least 4: measured faster at D 128 with 2-4
 * weight rows and at D 64 with 4, slower with fewer), the weights are made
 * one block ahead; else just before their block. */
static inline __attribute__((always_inline)) void
blocks_all(const int BITS, const int NQ, const int NGC, const size_t NC, const uint8_t *rows, size_t rstride,
           size_t coff, size_t nt, size_t ng, size_t nc, int lg, __m512i rix, __m512i tidx, __m512i cmask,
           const vq_unpack64_ctl *u3, const float *w, size_t wstride, __m512 MW[KQ_MAXQ][16],
           __m512 F[KQ_MAXQ][KQ_MAXC][4], vq_pf_share *pf, kq_work *K)
{
    kq_block *B = K->B;
    const size_t ahead = (size_t)NQ * (NC ? NC : nc) >= 4 ? VQ_KQ_BLOCK : 0;
    size_t next = 0; /* the next block to prepare */
    for (size_t b = 0; b < nt; b += VQ_KQ_BLOCK) {
        for (; next < nt && next <= b + ahead; next += VQ_KQ_BLOCK)
            block_prep(BITS, NQ, NGC, NC, rows, rstride, next, nt, ng, nc, lg, rix, w, wstride, MW,
                       &B[next / VQ_KQ_BLOCK & 1], K->S, K->Mn);
        const kq_block *cur = &B[b / VQ_KQ_BLOCK & 1];
        for (size_t c = 0; c < (NC ? NC : nc); c++) {
            const size_t s = cur->slot[c];
            chunk_block(BITS, NQ, NGC, cur->blk, rstride, coff, cur->m, c, 64 * c >> lg, lg, tidx, cmask, u3,
                        cur->wt.qab[s][0], cur->wt.qab[s][1], cur->wt.tab[s], cur->SC, cur->SQH[s], F, pf);
        }
    }
}

/* NG: the group count D / group when a constant (the header work for
 * groups that do not exist compiles away), else 0; NGC the groups per
 * 64-channel chunk (1, 2 or 4); NC the chunk count when a constant, else 0 */
static inline __attribute__((always_inline)) void qaxpy_bits(const uint8_t *rows, size_t rstride, const int BITS,
                                                             const size_t NG, const int NGC, const size_t NC,
                                                             size_t nt, size_t D, size_t group, const float *w,
                                                             size_t wstride, int n_q, float *acc, size_t astride,
                                                             kq_work *K)
{
    const size_t ng = NG ? NG : D / group, nc = NC ? NC : D / 64, coff = 4 * ng;
    const int lg = __builtin_ctzll(group);
    const __m512i tidx = BITS == 3 ? vq_quad_index() : bc_quad_index(bc_unit_groups(BITS, NGC));
    const __m512i cmask = _mm512_set1_epi8((char)((1 << BITS) - 1));
    const __m512i rix = vq_rows16_index(rstride);
    const vq_unpack64_ctl u3 = vq_unpack64_init(3); /* (3 bits only) */
    for (int j0 = 0; j0 < n_q; j0 += KQ_MAXQ) {
        const int nq = n_q - j0 < KQ_MAXQ ? n_q - j0 : KQ_MAXQ;
        __m512 F[KQ_MAXQ][KQ_MAXC][4], MW[KQ_MAXQ][16];
        for (int j = 0; j < nq; j++) {
            for (size_t c = 0; c < nc; c++)
                for (int r = 0; r < 4; r++)
                    F[j][c][r] = _mm512_setzero_ps();
            for (size_t g = 0; g < ng; g++)
                MW[j][g] = _mm512_setzero_ps();
        }
        vq_pf_share pf = vq_block_fetch(rows, rstride, nt, nc, j0 == 0); /* the first pass streams the rows */
        const float *wq = w + (size_t)j0 * wstride;
        switch (nq) { /* a constant count: the sums stay in registers */
        case 4: blocks_all(BITS, 4, NGC, NC, rows, rstride, coff, nt, ng, nc, lg, rix, tidx, cmask, &u3, wq, wstride, MW, F, &pf, K); break;
        case 3: blocks_all(BITS, 3, NGC, NC, rows, rstride, coff, nt, ng, nc, lg, rix, tidx, cmask, &u3, wq, wstride, MW, F, &pf, K); break;
        case 2: blocks_all(BITS, 2, NGC, NC, rows, rstride, coff, nt, ng, nc, lg, rix, tidx, cmask, &u3, wq, wstride, MW, F, &pf, K); break;
        default: blocks_all(BITS, 1, NGC, NC, rows, rstride, coff, nt, ng, nc, lg, rix, tidx, cmask, &u3, wq, wstride, MW, F, &pf, K); break;
        }
        /* back in channel order, plus the mins' sums */
        __m512i OX[4];
        for (int mo = 0; mo < 4; mo++) {
            int32_t ix[16];
            for (int l = 0; l < 16; l++)
                ix[l] = BITS == 2   ? (l % 4 & 1) * 16 + bc_lane_of(4 * mo + l / 4, NGC)
                        : BITS == 3 ? (l / 4 & 1) * 16 + 4 * mo + l % 4
                                    : (l % 2) * 16 + bc_lane_of(8 * (mo % 2) + l / 2, bc_unit_groups(4, NGC));
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
                    else if (BITS == 3) /* lane l: register l / 4, lane 4mo + l % 4 */
                        out = _mm512_mask_blend_ps(0xFF00, _mm512_permutex2var_ps(F[j][c][0], OX[mo], F[j][c][1]),
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

/* the other shapes: BITS constant, NGC constant */
static inline __attribute__((always_inline)) void qaxpy_shape(const uint8_t *rows, size_t rstride, int bits,
                                                              const int NGC, size_t nt, size_t D, size_t group,
                                                              const float *w, size_t wstride, int n_q, float *acc,
                                                              size_t astride, kq_work *K)
{
    if (bits == 2)
        qaxpy_bits(rows, rstride, 2, 0, NGC, 0, nt, D, group, w, wstride, n_q, acc, astride, K);
    else if (bits == 3)
        qaxpy_bits(rows, rstride, 3, 0, NGC, 0, nt, D, group, w, wstride, n_q, acc, astride, K);
    else
        qaxpy_bits(rows, rstride, 4, 0, NGC, 0, nt, D, group, w, wstride, n_q, acc, astride, K);
}

void vq_kivi_qaxpy_avx512x(const uint8_t *rows, size_t rstride, int bits, size_t nt, size_t D, size_t group,
                           const float *w, size_t wstride, int n_q, float *acc, size_t astride)
{
    if (bits < 2 || bits > 4 || D % 64 || D > 64 * KQ_MAXC || group < 16 || (group & (group - 1)) || D % group ||
        D / group > 16 || rstride > (1u << 26)) { /* (group a power of two here) */
        vq_kivi_qaxpy_ref(rows, rstride, bits, nt, D, group, w, wstride, n_q, acc, astride);
        return;
    }
    kq_work K;
    if (bits == 2 && D == 64 && group == 32) /* the common shapes: constant loops */
        qaxpy_bits(rows, rstride, 2, 2, 2, 1, nt, D, group, w, wstride, n_q, acc, astride, &K);
    else if (bits == 2 && D == 128 && group == 32)
        qaxpy_bits(rows, rstride, 2, 4, 2, 2, nt, D, group, w, wstride, n_q, acc, astride, &K);
    else if (group == 16)
        qaxpy_shape(rows, rstride, bits, 4, nt, D, group, w, wstride, n_q, acc, astride, &K);
    else if (group == 32)
        qaxpy_shape(rows, rstride, bits, 2, nt, D, group, w, wstride, n_q, acc, astride, &K);
    else
        qaxpy_shape(rows, rstride, bits, 1, nt, D, group, w, wstride, n_q, acc, astride, &K);
}
