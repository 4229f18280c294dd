/* kivi_qaxpy_avx2.c -- AVX2 + FMA + F16C twin of vq_kivi_qaxpy
 * (kernels/kivi_qaxpy.h): the reference's bits, without VNNI.
 *
 * Per block of 32 rows: the rows' scales and mins as columns (F16C, 4x4
 * or 8x8 transposes), the mins' 16 lane sums (FMAs in the reference's row
 * order), the scale of every weight row j from the rows' largest |s|, and
 * the int8 weights q of every (j, group g) (kernels/wq_avx2.h). The
 * integer sums are VPMADDUBSW of the codes of two
 * rows interleaved byte by byte (unsigned, below 2^bits) against the two
 * rows' weights as one word (signed, |q| <= 127): a 16-bit lane gets
 * q_a c_a + q_b c_b, of size at most 2 * 15 * 127 = 3810, so the
 * instruction never saturates, and VPADDW sums of P pairs stay exact while
 * P * 2 * (2^bits - 1) * 127 < 2^15: the block's 16 pairs at 2 and 3 bits
 * (12192, 28448), 8 pairs at 4 bits (30480), then they are widened to 32
 * bits. (The codes stay in place value 1: the AVX-512 twin's codes times
 * 4^k would overflow these 16-bit pairs.) The codes are not centred (c - h
 * would be signed): h * sum q comes off the 32-bit sum, which is then the
 * reference's I, and F = fma(d, I, F) per block as the reference.
 *
 * Per row pair and chunk (64 channels at 2 bits, 32 at 3 and 4), the code
 * registers C_k, 16-bit lane t of 128-bit lane L holding one channel of
 * both rows:
 *   2 and 4 bits: the pair's 16 code bytes interleaved (lane L: bytes 8L
 *   .. 8L+7), code position k by a shift and a mask: channel 4(8L+t) + k,
 *   resp. 2(8L+t) + k;
 *   3 bits (codes straddle bytes): each lane gets the two bytes holding
 *   its code (VPSHUFB), VPMULLW by 2^(13-s) moves the code (bit offset s)
 *   to the top and VPSRLW 13 down: channel 16L + 8k + t.
 * The weights of a lane are its group's: one group per 128-bit lane (per
 * 64-bit half at 2 bits when 32 does not divide the group). The channel
 * order is restored once per call (shuffles).
 *
 * Covers bits 2..4, D a multiple of 64 up to 512, group a multiple of 16
 * dividing D with D / group <= 16 (the contract); anything else runs the
 * reference. */
#include "kernels/kivi_qaxpy.h"

#include <immintrin.h>
#include <string.h>

#include "core/vexp.h"
#include "kernels/wq_avx2.h"
#include "kernels/transpose_avx2.h"

#define KQ_MAXQ 8   /* weight rows per pass over the rows (state on the stack) */
#define KQ_PASSQ 4  /* weight rows per pass over a block (sums in registers) */
#define KQ_MAXD 512 /* channels */
#define KQ_MAXG 16  /* groups (the contract's D / group <= 16) */
#define KQ_PAIRS (VQ_KQ_BLOCK / 2)

/* one block's headers and int8 weights for up to KQ_MAXQ weight rows */
typedef struct {
    float h[2 * KQ_MAXG][VQ_KQ_BLOCK];       /* header half k of row i (scales, then mins); 0 past the block */
    int8_t q[KQ_MAXQ][KQ_MAXG][VQ_KQ_BLOCK]; /* weights of (j, g), rows in order; 0 past the block */
    float d[KQ_MAXQ];                        /* weight row j's scale A_j / 127, every group's */
    int32_t hq[KQ_MAXQ][KQ_MAXG];            /* h * sum_i q_i (the codes' centre) */
} kq_block;

/* h[k][i] = header half k (nh = 2 D / group of them) of the block's row i
 * < m, 0 for i >= m. Eight halves per load: a row holds at least 16 code
 * bytes after its header, so the load never leaves the row. */
static void block_headers(const uint8_t *blk, size_t rstride, size_t m, size_t nh, float h[][VQ_KQ_BLOCK])
{
    if (nh <= 4) { /* four halves a row: rows i and i + 4 per register, a 4x4 transpose per 128-bit lane */
        const __m128i z = _mm_setzero_si128();
        for (size_t i0 = 0; i0 < VQ_KQ_BLOCK; i0 += 8) {
            __m256 r[4];
            for (size_t i = 0; i < 4; i++) {
                const uint8_t *p = blk + (i0 + i) * rstride;
                const __m128i lo = i0 + i < m ? _mm_loadl_epi64((const __m128i *)(const void *)p) : z;
                const __m128i hi =
                    i0 + i + 4 < m ? _mm_loadl_epi64((const __m128i *)(const void *)(p + 4 * rstride)) : z;
                r[i] = _mm256_cvtph_ps(_mm_unpacklo_epi64(lo, hi));
            }
            const __m256 t0 = _mm256_unpacklo_ps(r[0], r[1]), t1 = _mm256_unpackhi_ps(r[0], r[1]);
            const __m256 t2 = _mm256_unpacklo_ps(r[2], r[3]), t3 = _mm256_unpackhi_ps(r[2], r[3]);
            const __m256 c[4] = { _mm256_shuffle_ps(t0, t2, 0x44), _mm256_shuffle_ps(t0, t2, 0xEE),
                                  _mm256_shuffle_ps(t1, t3, 0x44), _mm256_shuffle_ps(t1, t3, 0xEE) };
            for (size_t k = 0; k < nh; k++)
                _mm256_storeu_ps(&h[k][i0], c[k]);
        }
        return;
    }
    for (size_t i0 = 0; i0 < VQ_KQ_BLOCK; i0 += 8)
        for (size_t k0 = 0; k0 < nh; k0 += 8) {
            __m256 r[8];
            for (size_t i = 0; i < 8; i++)
                r[i] = i0 + i < m ? _mm256_cvtph_ps(_mm_loadu_si128(
                                        (const __m128i *)(const void *)(blk + (i0 + i) * rstride + 2 * k0)))
                                  : _mm256_setzero_ps();
            vq_transpose8_ps(r);
            for (size_t k = 0; k < 8 && k0 + k < nh; k++)
                _mm256_storeu_ps(&h[k0 + k][i0], r[k]);
        }
}

/* the code registers C[0..K) of rows a, b for chunk c (layouts above) */
static inline __attribute__((always_inline)) void pair_codes(const int BITS, const uint8_t *a, const uint8_t *b,
                                                             size_t c, const __m256i ctl3[2], __m256i mul3,
                                                             __m256i C[4])
{
    if (BITS != 3) {
        const __m128i x = _mm_loadu_si128((const __m128i *)(const void *)(a + 16 * c));
        const __m128i y = _mm_loadu_si128((const __m128i *)(const void *)(b + 16 * c));
        const __m256i T =
            _mm256_inserti128_si256(_mm256_castsi128_si256(_mm_unpacklo_epi8(x, y)), _mm_unpackhi_epi8(x, y), 1);
        const __m256i mask = _mm256_set1_epi8((char)((1 << BITS) - 1));
        C[0] = _mm256_and_si256(T, mask);
        C[1] = _mm256_and_si256(_mm256_srli_epi16(T, BITS), mask);
        if (BITS == 2) {
            C[2] = _mm256_and_si256(_mm256_srli_epi16(T, 4), mask);
            C[3] = _mm256_and_si256(_mm256_srli_epi16(T, 6), mask);
        }
    } else { /* chunk bytes 0..7 to lane 0 (channels 0..15), 4..11 to lane 1 (16..31): 8-byte loads stay in the row */
        const uint8_t *pa = a + 12 * c, *pb = b + 12 * c;
        const __m256i Sa = _mm256_inserti128_si256(
            _mm256_castsi128_si256(_mm_loadl_epi64((const __m128i *)(const void *)pa)),
            _mm_loadl_epi64((const __m128i *)(const void *)(pa + 4)), 1);
        const __m256i Sb = _mm256_inserti128_si256(
            _mm256_castsi128_si256(_mm_loadl_epi64((const __m128i *)(const void *)pb)),
            _mm_loadl_epi64((const __m128i *)(const void *)(pb + 4)), 1);
        _Pragma("GCC unroll 8") for (int k = 0; k < 2; k++) {
            const __m256i ca = _mm256_srli_epi16(_mm256_mullo_epi16(_mm256_shuffle_epi8(Sa, ctl3[k]), mul3), 13);
            const __m256i cb = _mm256_srli_epi16(_mm256_mullo_epi16(_mm256_shuffle_epi8(Sb, ctl3[k]), mul3), 13);
            C[k] = _mm256_or_si256(ca, _mm256_slli_epi16(cb, 8));
        }
    }
}

/* The VPSHUFB controls of the pair weights: with per-lane groups (QW 0),
 * source lane L holds rows 0..15 (v = 0) or 16..31 (v = 1) of its group's
 * weights and control r puts pair 8v + r's word in every lane; per 64-bit
 * half (QW 1), source lane L holds rows 8v .. 8v+7 of the group of each
 * half, and control r puts pair 4v + r's word in each half. */
static inline __m256i weight_ctl(const int QW, int r)
{
    const long long lo = (long long)(0x0001000100010001ull * (unsigned)(2 * r | (2 * r + 1) << 8));
    if (!QW)
        return _mm256_set1_epi64x(lo);
    const long long hi = (long long)(0x0001000100010001ull * (unsigned)((8 + 2 * r) | (9 + 2 * r) << 8));
    return _mm256_set_epi64x(hi, lo, hi, lo);
}

/* the per-call constants of block_pass: the weight controls of
 * weight_ctl, and at 3 bits the VPSHUFB control per code register
 * (16-bit lane t of lane L, register k: the two bytes around channel e =
 * 16L + 8k + t, bit 3e of the chunk, in the lane's source = chunk bytes
 * from 4L) and the VPMULLW factors 2^(13 - 3e mod 8) = 2^(13 - 3t mod 8) */
typedef struct {
    __m256i ctl[8], ctl3[2], mul3;
} kq_consts;

static void consts_init(int BITS, int QW, kq_consts *k3)
{
    for (int r = 0; r < 8; r++)
        k3->ctl[r] = weight_ctl(QW, r % (QW ? 4 : 8));
    k3->ctl3[0] = k3->ctl3[1] = k3->mul3 = _mm256_setzero_si256();
    if (BITS != 3)
        return;
    uint8_t cb[2][32];
    int16_t mv[16];
    for (int k = 0; k < 2; k++)
        for (int L = 0; L < 2; L++)
            for (int t = 0; t < 8; t++) {
                const int byte = 2 * L + 3 * k + (3 * t >> 3);
                cb[k][16 * L + 2 * t] = (uint8_t)byte, cb[k][16 * L + 2 * t + 1] = (uint8_t)(byte + 1);
                mv[8 * L + t] = (int16_t)(1 << (13 - (3 * t & 7)));
            }
    k3->ctl3[0] = _mm256_loadu_si256((const __m256i *)(const void *)cb[0]);
    k3->ctl3[1] = _mm256_loadu_si256((const __m256i *)(const void *)cb[1]);
    k3->mul3 = _mm256_loadu_si256((const __m256i *)(const void *)mv);
}

/* One pass of NQ weight rows (block state rows j0 .. j0+NQ-1, float sums
 * F[j] in slot order, fstride apart) over the block's np pairs: per chunk
 * the 16-bit sums, widened, centred and folded into F with the pairs'
 * scales. gq[c][L][x]: the group of chunk c, lane L, 64-bit half x. */
static inline __attribute__((always_inline)) void
block_pass(const int BITS, const int QW, const int NQ, const uint8_t *const pa[KQ_PAIRS],
           const uint8_t *const pb[KQ_PAIRS], size_t np, size_t nc, uint8_t gq[][2][2], const kq_consts *k3,
           const kq_block *st, int j0, float *F, size_t fstride)
{
    const int K = BITS == 2 ? 4 : 2, PV = QW ? 4 : 8, NV = KQ_PAIRS / PV;
    const __m256i *ctl = k3->ctl, *ctl3 = k3->ctl3, mul3 = k3->mul3;
    for (size_t c = 0; c < nc; c++) {
        /* every pair's weight words for this chunk, VPMADDUBSW's operand from memory */
        __m256i WB[KQ_PASSQ][KQ_PAIRS];
        _Pragma("GCC unroll 8") for (int j = 0; j < NQ; j++) {
            if (!QW) { /* lanes: the groups' whole rows of weights (loads the size of their stores) */
                const __m256i Q0 = _mm256_loadu_si256((const __m256i *)(const void *)st->q[j0 + j][gq[c][0][0]]);
                const __m256i Q1 = _mm256_loadu_si256((const __m256i *)(const void *)st->q[j0 + j][gq[c][1][0]]);
                const __m256i V0 = _mm256_permute2x128_si256(Q0, Q1, 0x20), V1 = _mm256_permute2x128_si256(Q0, Q1, 0x31);
                _Pragma("GCC unroll 8") for (int r = 0; r < 8; r++) WB[j][r] = _mm256_shuffle_epi8(V0, ctl[r]);
                _Pragma("GCC unroll 8") for (int r = 0; r < 8; r++) WB[j][8 + r] = _mm256_shuffle_epi8(V1, ctl[r]);
                continue;
            }
            for (int v = 0; v < NV && PV * v < (int)np; v++) {
                __m128i l[2];
                _Pragma("GCC unroll 8") for (int L = 0; L < 2; L++) {
                    const int8_t *q0 = st->q[j0 + j][gq[c][L][0]], *q1 = st->q[j0 + j][gq[c][L][1]];
                    l[L] = QW ? _mm_unpacklo_epi64(_mm_loadl_epi64((const __m128i *)(const void *)(q0 + 8 * v)),
                                                   _mm_loadl_epi64((const __m128i *)(const void *)(q1 + 8 * v)))
                              : _mm_loadu_si128((const __m128i *)(const void *)(q0 + 16 * v));
                }
                const __m256i V = _mm256_inserti128_si256(_mm256_castsi128_si256(l[0]), l[1], 1);
                _Pragma("GCC unroll 8") for (int r = 0; r < PV; r++) WB[j][PV * v + r] = _mm256_shuffle_epi8(V, ctl[r]);
            }
        }
        /* 16-bit sums: 2 and 3 bits the whole block's (at most 16 pairs), 4 bits 8 pairs', then
         * widened into I */
        __m256i A[KQ_PASSQ][4], I[KQ_PASSQ][4][2];
        _Pragma("GCC unroll 8") for (int j = 0; j < NQ; j++)
            for (int k = 0; k < K; k++) {
                A[j][k] = _mm256_setzero_si256();
                if (BITS == 4)
                    I[j][k][0] = I[j][k][1] = _mm256_setzero_si256();
            }
        for (size_t p = 0; p < np; p++) {
            __m256i C[4];
            pair_codes(BITS, pa[p], pb[p], c, ctl3, mul3, C);
            _Pragma("GCC unroll 8") for (int k = 0; k < K; k++)
                _Pragma("GCC unroll 8") for (int j = 0; j < NQ; j++)
                    A[j][k] = _mm256_add_epi16(A[j][k], _mm256_maddubs_epi16(C[k], WB[j][p]));
            if (BITS == 4 && (p % 8 == 7 || p + 1 == np)) /* at most 8 pairs per 16-bit sum */
                _Pragma("GCC unroll 8") for (int j = 0; j < NQ; j++)
                    for (int k = 0; k < K; k++) {
                        I[j][k][0] = _mm256_add_epi32(I[j][k][0], _mm256_cvtepi16_epi32(_mm256_castsi256_si128(A[j][k])));
                        I[j][k][1] =
                            _mm256_add_epi32(I[j][k][1], _mm256_cvtepi16_epi32(_mm256_extracti128_si256(A[j][k], 1)));
                        A[j][k] = _mm256_setzero_si256();
                    }
        }
        if (BITS != 4)
            _Pragma("GCC unroll 8") for (int j = 0; j < NQ; j++)
                for (int k = 0; k < K; k++) {
                    I[j][k][0] = _mm256_cvtepi16_epi32(_mm256_castsi256_si128(A[j][k]));
                    I[j][k][1] = _mm256_cvtepi16_epi32(_mm256_extracti128_si256(A[j][k], 1));
                }
        /* slot ((c K + k) 2 + L) 8 + t; lanes t < 4 and t >= 4 in groups gq[c][L][0], [1] */
        _Pragma("GCC unroll 8") for (int j = 0; j < NQ; j++)
            for (int L = 0; L < 2; L++) {
                const int g0 = gq[c][L][0], g1 = gq[c][L][1];
                const __m256 dv = _mm256_set1_ps(st->d[j0 + j]);
                const __m256i hv =
                    _mm256_set_m128i(_mm_set1_epi32(st->hq[j0 + j][g1]), _mm_set1_epi32(st->hq[j0 + j][g0]));
                _Pragma("GCC unroll 8") for (int k = 0; k < K; k++) {
                    float *f = F + (size_t)j * fstride + ((c * (size_t)K + (size_t)k) * 2 + (size_t)L) * 8;
                    const __m256 Iv = _mm256_cvtepi32_ps(_mm256_sub_epi32(I[j][k][L], hv));
                    _mm256_storeu_ps(f, _mm256_fmadd_ps(dv, Iv, _mm256_loadu_ps(f)));
                }
            }
    }
}

/* the passes over one block for nq weight rows: as many as the 16-bit sums'
 * registers need (QP rows per pass at most), of balanced sizes */
static inline __attribute__((always_inline)) void
block_passes(const int BITS, const int QW, const uint8_t *const pa[KQ_PAIRS], const uint8_t *const pb[KQ_PAIRS],
             size_t np, size_t nc, uint8_t gq[][2][2], const kq_consts *k3, const kq_block *st, int nq, float *F,
             size_t fstride)
{
    const int QP = BITS == 2 ? 3 : 4;
    for (int j0 = 0; j0 < nq;) {
        const int left = nq - j0, passes = (left + QP - 1) / QP, n = (left + passes - 1) / passes;
        float *Fj = F + (size_t)j0 * fstride;
        switch (n) {
        case 1: block_pass(BITS, QW, 1, pa, pb, np, nc, gq, k3, st, j0, Fj, fstride); break;
        case 2: block_pass(BITS, QW, 2, pa, pb, np, nc, gq, k3, st, j0, Fj, fstride); break;
        case 3: block_pass(BITS, QW, 3, pa, pb, np, nc, gq, k3, st, j0, Fj, fstride); break;
        default: block_pass(BITS, QW, BITS == 2 ? 3 : 4, pa, pb, np, nc, gq, k3, st, j0, Fj, fstride); break;
        }
        j0 += n;
    }
}

/* acc[e] += F_e + M_g(e) (grp: the group of each channel), F in slot
 * order: per chunk c and lane L, 2 bits: register k lane t = channel 64c
 * + 32L + 4t + k (a 4x8 transpose), 4 bits: 32c + 16L + 2t + k (an
 * interleave), 3 bits: 32c + 16L + 8k + t (in order) */
static inline __attribute__((always_inline)) void out_channels(const int BITS, const float *F, const float *M,
                                                               const uint8_t *grp, size_t nc, float *acc)
{
    const int K = BITS == 2 ? 4 : 2;
    for (size_t c = 0; c < nc; c++)
        for (size_t L = 0; L < 2; L++) {
            __m256 R[4], O[4];
            for (int k = 0; k < K; k++)
                R[k] = _mm256_loadu_ps(F + ((c * (size_t)K + (size_t)k) * 2 + L) * 8);
            size_t e0;
            if (BITS == 2) {
                const __m256 t0 = _mm256_unpacklo_ps(R[0], R[1]), t1 = _mm256_unpackhi_ps(R[0], R[1]);
                const __m256 t2 = _mm256_unpacklo_ps(R[2], R[3]), t3 = _mm256_unpackhi_ps(R[2], R[3]);
                const __m256 y0 = _mm256_shuffle_ps(t0, t2, 0x44), y1 = _mm256_shuffle_ps(t0, t2, 0xEE);
                const __m256 y2 = _mm256_shuffle_ps(t1, t3, 0x44), y3 = _mm256_shuffle_ps(t1, t3, 0xEE);
                /* y_u: lanes t = u (low half) and u + 4 (high), k in order */
                O[0] = _mm256_permute2f128_ps(y0, y1, 0x20), O[1] = _mm256_permute2f128_ps(y2, y3, 0x20);
                O[2] = _mm256_permute2f128_ps(y0, y1, 0x31), O[3] = _mm256_permute2f128_ps(y2, y3, 0x31);
                e0 = 64 * c + 32 * L;
            } else if (BITS == 4) {
                const __m256 lo = _mm256_unpacklo_ps(R[0], R[1]), hi = _mm256_unpackhi_ps(R[0], R[1]);
                O[0] = _mm256_permute2f128_ps(lo, hi, 0x20), O[1] = _mm256_permute2f128_ps(lo, hi, 0x31);
                e0 = 32 * c + 16 * L;
            } else {
                O[0] = R[0], O[1] = R[1];
                e0 = 32 * c + 16 * L;
            }
            for (int u = 0; u < (BITS == 2 ? 4 : 2); u++) { /* 8 channels in one group (group % 16 == 0) */
                float *a = acc + e0 + 8 * (size_t)u;
                const __m256 o = _mm256_add_ps(O[u], _mm256_set1_ps(M[grp[e0 + 8 * (size_t)u]]));
                _mm256_storeu_ps(a, _mm256_add_ps(_mm256_loadu_ps(a), o));
            }
        }
}

static inline __attribute__((always_inline)) void qaxpy_bits(const uint8_t *rows, size_t rstride, const int BITS,
                                                             const int QW, size_t nt, size_t D, size_t group,
                                                             const float *w, size_t wstride, int n_q, float *acc,
                                                             size_t astride)
{
    const size_t ng = D / group, coff = 4 * ng, CH = BITS == 2 ? 64 : 32, nc = D / CH;
    uint8_t gq[KQ_MAXD / 32][2][2];
    uint8_t grp[KQ_MAXD]; /* the group of each channel */
    for (size_t g = 0, e = 0; g < ng; g++)
        for (size_t x = 0; x < group; x++)
            grp[e++] = (uint8_t)g;
    for (size_t c = 0; c < nc; c++)
        for (size_t L = 0; L < 2; L++)
            for (size_t x = 0; x < 2; x++)
                gq[c][L][x] = grp[CH * c + CH / 2 * L + (BITS == 2 ? 16 * x : 0)];
    kq_block st;
    kq_consts k3;
    consts_init(BITS, QW, &k3);
    float F[KQ_MAXQ][KQ_MAXD];
    __m256 MW[KQ_MAXQ][KQ_MAXG][2]; /* the mins' lanes: row i in lane i % 16 */
    const __m256 abs = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
    for (int j0 = 0; j0 < n_q; j0 += KQ_MAXQ) {
        const int nq = n_q - j0 < KQ_MAXQ ? n_q - j0 : KQ_MAXQ;
        for (int j = 0; j < nq; j++) {
            memset(F[j], 0, sizeof(float) * D);
            for (size_t g = 0; g < ng; g++)
                MW[j][g][0] = MW[j][g][1] = _mm256_setzero_ps();
        }
        for (size_t b = 0; b < nt; b += VQ_KQ_BLOCK) {
            const size_t m = nt - b < VQ_KQ_BLOCK ? nt - b : VQ_KQ_BLOCK, np = (m + 1) / 2;
            const uint8_t *blk = rows + b * rstride;
            block_headers(blk, rstride, m, 2 * ng, st.h);
            __m256i live[4];
            vq_wq_live(m, live);
            __m256 W[KQ_MAXQ][4], Smax[4];
            vq_wq_load(w, wstride, j0, nq, b, m, W);
            _Pragma("GCC unroll 4") for (int k = 0; k < 4; k++) { /* max_g |s_ig| (0 past the block) */
                Smax[k] = _mm256_and_ps(_mm256_loadu_ps(&st.h[0][8 * k]), abs);
                for (size_t g = 1; g < ng; g++)
                    Smax[k] = _mm256_max_ps(Smax[k], _mm256_and_ps(_mm256_loadu_ps(&st.h[g][8 * k]), abs));
            }
            for (int j = 0; j < nq; j++) {
                /* A_j = max_i |w_ji| max_g |s_ig| (= max |w_ji s_ig|: rounding is monotonic), d_j = A_j / 127,
                 * q = (w_ji * s_ig) * inv_j rounded (kivi_qaxpy.h) */
                float iv;
                const float A = vq_wq_row_scale(W[j], Smax, &iv);
                st.d[j] = A / 127.0f;
                for (size_t g = 0; g < ng; g++) {
                    __m256 a[4];
                    _Pragma("GCC unroll 4") for (int k = 0; k < 4; k++)
                        a[k] = _mm256_mul_ps(W[j][k], _mm256_loadu_ps(&st.h[g][8 * k]));
                    st.hq[j][g] = vq_wq_quantize32(a, iv, live, st.q[j][g], NULL) * (1 << (BITS - 1));
                }
            }
            const __m256 hv = _mm256_set1_ps((float)(1 << (BITS - 1)));
            for (size_t g = 0; g < ng; g++) {
                __m256 X[4];
                _Pragma("GCC unroll 4") for (int k = 0; k < 4; k++) /* m + h s */
                    X[k] = _mm256_fmadd_ps(hv, _mm256_loadu_ps(&st.h[g][8 * k]), _mm256_loadu_ps(&st.h[ng + g][8 * k]));
                for (int j = 0; j < nq; j++) {
                    /* lane l: rows l, then l + 16 (rows past the block add w = 0 times 0) */
                    MW[j][g][0] = _mm256_fmadd_ps(W[j][2], X[2], _mm256_fmadd_ps(W[j][0], X[0], MW[j][g][0]));
                    MW[j][g][1] = _mm256_fmadd_ps(W[j][3], X[3], _mm256_fmadd_ps(W[j][1], X[1], MW[j][g][1]));
                }
            }
            /* pair p: rows 2p and 2p + 1 (row 2p again, with weight 0, past the block) */
            const uint8_t *pa[KQ_PAIRS], *pb[KQ_PAIRS];
            for (size_t p = 0; p < np; p++) {
                pa[p] = blk + 2 * p * rstride + coff;
                pb[p] = 2 * p + 1 < m ? pa[p] + rstride : pa[p];
            }
            block_passes(BITS, QW, pa, pb, np, nc, gq, &k3, &st, nq, &F[0][0], KQ_MAXD);
        }
        for (int j = 0; j < nq; j++) {
            float M[KQ_MAXG], lanes[16];
            for (size_t g = 0; g < ng; g++) {
                _mm256_storeu_ps(lanes, MW[j][g][0]);
                _mm256_storeu_ps(lanes + 8, MW[j][g][1]);
                M[g] = vq_sum16_lanes(lanes);
            }
            out_channels(BITS, F[j], M, grp, nc, acc + (size_t)(j0 + j) * astride);
        }
    }
}

void vq_kivi_qaxpy_avx2(const uint8_t *rows, size_t rstride, int bits, size_t nt, size_t D, size_t group,
                        const float *w, size_t wstride, int n_q, float *acc, size_t astride)
{
    if (bits < 2 || bits > 4 || D % 64 || D > KQ_MAXD || group % 16 || group == 0 || D % group ||
        D / group > KQ_MAXG) {
        vq_kivi_qaxpy_ref(rows, rstride, bits, nt, D, group, w, wstride, n_q, acc, astride);
        return;
    }
    if (bits == 2 && group % 32 == 0)
        qaxpy_bits(rows, rstride, 2, 0, nt, D, group, w, wstride, n_q, acc, astride);
    else if (bits == 2) /* groups of 16, 48, ...: one per 64-bit half */
        qaxpy_bits(rows, rstride, 2, 1, nt, D, group, w, wstride, n_q, acc, astride);
    else if (bits == 3)
        qaxpy_bits(rows, rstride, 3, 0, nt, D, group, w, wstride, n_q, acc, astride);
    else
        qaxpy_bits(rows, rstride, 4, 0, nt, D, group, w, wstride, n_q, acc, astride);
}
