/* wq_avx512x.h -- helpers of the int8-weight sums (kernels/kivi_qaxpy.h,
 * kernels/qaxpy.h vq_qaxpy8) and of the four-rows-per-register key dots
 * (qdot_avx512x.c): a four-row byte gather and transpose for VPDPBUSD,
 * four horizontal maxima at once, the weights' scales and rounding. Only for *_avx512x.c files (AVX-512
 * with VNNI and VBMI). */
#ifndef VQ_KERNELS_WQ_AVX512X_H
#define VQ_KERNELS_WQ_AVX512X_H

#include <float.h>
#include <immintrin.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "kernels/kivi_qaxpy.h"
#include "kernels/prefetch.h"
#include "kernels/rows16_avx512.h"

/* the VPERMB index of vq_quad_bytes: byte 4b + r <- byte 16r + b */
static inline __m512i vq_quad_index(void)
{
    int8_t tix[64];
    for (int p = 0; p < 64; p++)
        tix[p] = (int8_t)((p % 4) * 16 + p / 4);
    return _mm512_loadu_si512(tix);
}

/* N (1, 2 or 4) 32-bit words at p (any alignment), broadcast so that
 * 32-bit lane b takes word b % N: a quad's int8 weights (four rows a
 * word) for N column groups */
static inline __attribute__((always_inline)) __m512i vq_bcast_words(const void *p, const int N)
{
    if (N == 1) {
        int32_t x;
        memcpy(&x, p, sizeof x);
        return _mm512_set1_epi32(x);
    }
    if (N == 2) {
        long long x;
        memcpy(&x, p, sizeof x);
        return _mm512_set1_epi64(x);
    }
    return _mm512_broadcast_i32x4(_mm_loadu_si128((const __m128i *)p));
}

/* four rows' 16 bytes at p[t] + off, row t in 128-bit lane t: broadcast
 * loads merged under masks (a load and a blend each, where VINSERTI32X4
 * takes the shuffle port) */
static inline __m512i vq_quad_bytes16(const uint8_t *const p[4], size_t off)
{
    __m512i x = _mm512_broadcast_i32x4(_mm_loadu_si128((const __m128i *)(const void *)(p[0] + off)));
    x = _mm512_mask_broadcast_i32x4(x, 0x00F0, _mm_loadu_si128((const __m128i *)(const void *)(p[1] + off)));
    x = _mm512_mask_broadcast_i32x4(x, 0x0F00, _mm_loadu_si128((const __m128i *)(const void *)(p[2] + off)));
    return _mm512_mask_broadcast_i32x4(x, 0xF000, _mm_loadu_si128((const __m128i *)(const void *)(p[3] + off)));
}

/* the same, transposed: 32-bit lane b = byte b of rows 0..3 */
static inline __m512i vq_quad_bytes(const uint8_t *const p[4], size_t off, __m512i tidx)
{
    return _mm512_permutexvar_epi8(tidx, vq_quad_bytes16(p, off));
}

/* [op(a), op(b), op(c), op(d)], op the maximum (sum 0) or the sum (sum 1)
 * of a vector's 16 lanes, by one tree for all four: l_k with l_k+8, then
 * + 4, + 2, + 1 (vq_sum16_lanes' order: the sum has its bits; the maximum
 * is exact in any order) */
static inline __m128 vq_tree4x16(__m512 a, __m512 b, __m512 c, __m512 d, const int sum)
{
#define VQ_TREE_OP(x, y) (sum ? _mm512_add_ps((x), (y)) : _mm512_max_ps((x), (y)))
    const __m512 ab = VQ_TREE_OP(_mm512_shuffle_f32x4(a, b, 0x44), _mm512_shuffle_f32x4(a, b, 0xEE));
    const __m512 cd = VQ_TREE_OP(_mm512_shuffle_f32x4(c, d, 0x44), _mm512_shuffle_f32x4(c, d, 0xEE));
    __m512 x = VQ_TREE_OP(_mm512_shuffle_f32x4(ab, cd, 0x88), _mm512_shuffle_f32x4(ab, cd, 0xDD));
    x = VQ_TREE_OP(x, _mm512_permute_ps(x, 0x4E));
    x = VQ_TREE_OP(x, _mm512_permute_ps(x, 0xB1));
#undef VQ_TREE_OP
    return _mm512_castps512_ps128(
        _mm512_permutexvar_ps(_mm512_setr_epi32(0, 4, 8, 12, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0), x));
}

/* the maxima of the lanes of a, b, c, d: [max a, max b, max c, max d] */
static inline __m128 vq_max4x16(__m512 a, __m512 b, __m512 c, __m512 d) { return vq_tree4x16(a, b, c, d, 0); }

/* the rows of quad u of a block of m rows (row i at blk + i*rstride +
 * off): rows at or past m repeat the last one (the caller gives them
 * weight 0, and reads stay inside the block) */
static inline void vq_quad_rows(const uint8_t *blk, size_t rstride, size_t off, size_t u, size_t m, const uint8_t *p[4])
{
    p[0] = blk + 4 * u * rstride + off;
    if (4 * u + 4 <= m) {
        p[1] = p[0] + rstride, p[2] = p[1] + rstride, p[3] = p[2] + rstride;
    } else {
        const uint8_t *last = blk + (m - 1) * rstride + off;
        p[1] = 4 * u + 1 < m ? p[0] + rstride : last;
        p[2] = 4 * u + 2 < m ? p[0] + 2 * rstride : last;
        p[3] = last;
    }
}

/* The VPERMB index that puts two pairs' int8 weights in row order: after
 * VPACKSSDW of each pair's rows 0-15 and 16-31 and VPACKSSWB of the two
 * pairs (128-bit lane L then holds rows 4L..4L+3 and 16+4L.. of pair 0,
 * then of pair 1), byte 32t + r <- row r of pair t */
static inline __m512i vq_pair_order(void)
{
    static const int8_t order[64] = {
        0,  1,  2,  3,  16, 17, 18, 19, 32, 33, 34, 35, 48, 49, 50, 51, 4,  5,  6,  7,  20, 21,
        22, 23, 36, 37, 38, 39, 52, 53, 54, 55, 8,  9,  10, 11, 24, 25, 26, 27, 40, 41, 42, 43,
        56, 57, 58, 59, 12, 13, 14, 15, 28, 29, 30, 31, 44, 45, 46, 47, 60, 61, 62, 63,
    };
    return _mm512_loadu_si512(order);
}

/* The int8-weight scales of a block for up to four weight rows, one per
 * row for all column groups (kernels/kivi_qaxpy.h, kernels/qaxpy.h): S[g][h]
 * the block's rows' scales of group g (rows 16h..16h+15, 0 past the
 * block), g < ng; W[j][h] weight row j's weights, j < nq. A_j = max_i
 * |w_ji| max_g |s_ig| (= max |w_ji s_ig|: rounding is monotonic); lane j of
 * *sc A_j / 127, of *inv 127 / A_j (0 when A_j is 0; lanes j >= nq 0).
 * Returns whether some inv overflowed (A_j below 3.7e-37: vq_hold_weights). */
static inline __attribute__((always_inline)) int vq_wq_row_scales(const __m512 W[4][2], int nq, const __m512 (*S)[2],
                                                                  size_t ng, __m128 *sc, __m128 *inv)
{
    __m512 Smax[2];
    _Pragma("GCC unroll 2") for (int h = 0; h < 2; h++)
    {
        Smax[h] = _mm512_setzero_ps();
        for (size_t g = 0; g < ng; g++)
            Smax[h] = _mm512_range_ps(Smax[h], S[g][h], 0x0B); /* max(|x|, |y|): signs cleared */
    }
    __m512 V[4];
    _Pragma("GCC unroll 4") for (int j = 0; j < 4; j++)
        V[j] = j < nq ? _mm512_range_ps(_mm512_mul_ps(W[j][0], Smax[0]), _mm512_mul_ps(W[j][1], Smax[1]), 0x0B)
                      : _mm512_setzero_ps();
    const __m128 A4 = vq_max4x16(V[0], V[1], V[2], V[3]);
    *sc = _mm_div_ps(A4, _mm_set1_ps(127.0f));
    *inv = _mm_maskz_div_ps(_mm_cmp_ps_mask(A4, _mm_setzero_ps(), _CMP_GT_OQ), _mm_set1_ps(127.0f), A4);
    return _mm_cmp_ps_mask(*inv, _mm_set1_ps(FLT_MAX), _CMP_NLE_UQ) != 0;
}

/* the sums of the lanes of a, b, c, d: [sum a, sum b, sum c, sum d] */
static inline __m128i vq_sum4x16_epi32(__m512i a, __m512i b, __m512i c, __m512i d)
{
    const __m512i ab = _mm512_add_epi32(_mm512_shuffle_i32x4(a, b, 0x44), _mm512_shuffle_i32x4(a, b, 0xEE));
    const __m512i cd = _mm512_add_epi32(_mm512_shuffle_i32x4(c, d, 0x44), _mm512_shuffle_i32x4(c, d, 0xEE));
    __m512i x = _mm512_add_epi32(_mm512_shuffle_i32x4(ab, cd, 0x88), _mm512_shuffle_i32x4(ab, cd, 0xDD));
    x = _mm512_add_epi32(x, _mm512_shuffle_epi32(x, _MM_PERM_BADC));
    x = _mm512_add_epi32(x, _mm512_shuffle_epi32(x, _MM_PERM_CDAB));
    return _mm512_castsi512_si128(
        _mm512_permutexvar_epi32(_mm512_setr_epi32(0, 4, 8, 12, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0), x));
}

/* lut_qaxpy's weights, row by row: the weight scales of np weight rows from their |a| maxima
 * V[k]: sc[k] = A/127 and inv[k] = 127/A (0 when A is 0), four at a time
 * (V padded with zeros to a multiple of 4; sc, inv hold as many) */
static inline void vq_weight_scales(__m512 *V, size_t np, float *sc, float *inv)
{
    for (size_t k = np; k % 4; k++)
        V[k] = _mm512_setzero_ps();
    for (size_t k = 0; k < np; k += 4) {
        const __m128 A4 = vq_max4x16(V[k], V[k + 1], V[k + 2], V[k + 3]);
        const __m128 i4 = _mm_div_ps(_mm_set1_ps(127.0f), A4);
        _mm_storeu_ps(sc + k, _mm_div_ps(A4, _mm_set1_ps(127.0f)));
        _mm_storeu_ps(inv + k, _mm_and_ps(i4, _mm_cmpgt_ps(A4, _mm_setzero_ps())));
    }
}

/* q = VCVTPS2DQ(a * inv) held as the reference holds lrintf's result
 * (kernels/kivi_qaxpy.h): to [-127, 127], so that a product that is not
 * finite (127 / A overflows for A below 3.7e-37: every product is +-inf or
 * NaN, and converts to INT_MIN) gives -127 as lrintf's LONG_MIN does;
 * lanes off in live (rows past the block) 0. Needed only when inv is not
 * finite: else |a| <= A keeps |q| <= 127. */
static inline __m512i vq_hold_weights(__m512i q, __mmask16 live)
{
    return _mm512_maskz_max_epi32(live, _mm512_min_epi32(q, _mm512_set1_epi32(127)), _mm512_set1_epi32(-127));
}

/* One (weight row, group) pair's int8 weights for the block kernels
 * (kernels/kivi_qaxpy.h, kernels/qaxpy.h): q = (w s) inv rounded (W[h] the
 * weights, S[h] the rows' scales of the group, rows 16h..16h+15; VI inv in
 * every lane), held by vq_hold_weights when some inv is not finite (held;
 * live[h]: the block's rows). *P: the rows' q packed to 16 bits (VPACKSSDW:
 * |q| <= 127 never clips), *Q: the two halves' q added (their sum's
 * lanes) */
static inline __attribute__((always_inline)) void vq_wq_pair(const __m512 W[2], const __m512 S[2], __m512 VI, int held,
                                                             const __mmask16 live[2], __m512i *P, __m512i *Q)
{
    __m512i q0 = _mm512_cvtps_epi32(_mm512_mul_ps(_mm512_mul_ps(W[0], S[0]), VI));
    __m512i q1 = _mm512_cvtps_epi32(_mm512_mul_ps(_mm512_mul_ps(W[1], S[1]), VI));
    if (held)
        q0 = vq_hold_weights(q0, live[0]), q1 = vq_hold_weights(q1, live[1]);
    *P = _mm512_packs_epi32(q0, q1);
    *Q = _mm512_add_epi32(q0, q1);
}

/* a pair's 32 weights a0 (rows 0-15), a1 (16-31) times inv, rounded to
 * nearest even, held by vq_hold_weights when inv is not finite (live[h]:
 * the block's rows 16h..16h+15) and stored as int8; returns their sum */
static inline int32_t vq_round_weights(__m512 a0, __m512 a1, float inv, const __mmask16 live[2], int8_t dst[32])
{
    const __m512 vi = _mm512_set1_ps(inv);
    __m512i q0 = _mm512_cvtps_epi32(_mm512_mul_ps(a0, vi)), q1 = _mm512_cvtps_epi32(_mm512_mul_ps(a1, vi));
    if (!(inv <= FLT_MAX))
        q0 = vq_hold_weights(q0, live[0]), q1 = vq_hold_weights(q1, live[1]);
    _mm_storeu_si128((__m128i *)(void *)dst, _mm512_cvtsepi32_epi8(q0));
    _mm_storeu_si128((__m128i *)(void *)(dst + 16), _mm512_cvtsepi32_epi8(q1));
    return _mm512_reduce_add_epi32(_mm512_add_epi32(q0, q1));
}

/* the block of rows starting at row b of nt: its row count m (<=
 * VQ_KQ_BLOCK) and the lane masks of its rows 0-15 and 16-31 */
static inline size_t vq_block_start(size_t b, size_t nt, __mmask16 v[2])
{
    const size_t m = nt - b < VQ_KQ_BLOCK ? nt - b : VQ_KQ_BLOCK;
    v[0] = vq_rows16_live(m);
    v[1] = vq_rows16_live(m > 16 ? m - 16 : 0);
    return m;
}

/* The fetch of nt rows (a page is read cold; nothing when !on) spread
 * over the quads of `passes` passes per block: one vq_pf_step per quad of
 * rows of each pass, vq_block_lead ahead (a pass over a block
 * touches all its rows at once; kernels/prefetch.h). */
static inline vq_pf_share vq_block_fetch(const uint8_t *rows, size_t rstride, size_t nt, size_t passes, int on)
{
    return vq_pf_share_init(rows, vq_block_lead(rstride), on ? nt * rstride : 0, (nt + 3) / 4 * passes);
}

#endif
