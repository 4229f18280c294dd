/* kivi_qaxpy.h -- weighted sums of KIVI value rows with the weights
 * rounded to int8, so that the codes meet them in integer dot products
 * (VNNI, or VPMADDUBSW on AVX2): the int8 counterpart of kernels.h
 * kivi_axpy, which it takes the row layout and arguments from (row i at
 * rows + i*rstride: D/group fp16 scales s_ig, D/group fp16 mins m_ig, then
 * D codes c_ie of `bits` bits, packed LSB first).
 *
 * vq_kivi_qaxpy(rows, rstride, bits, nt, D, group, w, wstride, n_q, acc,
 * astride) adds, for each weight row j (w_ji = w[j*wstride + i]) and
 * channel e of group g = e / group, F_je + M_jg to acc[j*astride + e]
 * (one add of their float sum), where:
 *   the rows form blocks of VQ_KQ_BLOCK from the first (the last may be
 *   short); per block and j: A_j = max over the block's rows i and every
 *   group g of |w_ji * s_ig| (one rounded multiply each), d_j = A_j / 127,
 *   inv_j = 127 / A_j (0 when A_j is 0), q_jgi = (w_ji * s_ig) * inv_j
 *   (two rounded multiplies, in that order) rounded to nearest even and
 *   held to [-127, 127], I_e = sum_i q_jgi (c_ie - h) with h =
 *   2^(bits-1) (exact; the codes centred, so that the rounding does not
 *   meet the values' offset), and F_je = fmaf(d_j, (float)I_e, F_je)
 *   block after block from 0;
 *   M_jg: 16 lanes, lane l = fmaf(w_ji, fmaf(h, s_ig, m_ig), lane) for the
 *   rows i = l mod 16 in order, reduced by vq_sum16_lanes
 *   (v = s (c - h) + (m + h s)).
 * One scale per weight row and block for all groups (until session 44 one
 * per (j, g)): per block the weights take one maximum and one pair of
 * divisions per row j (figures/bench/ab-session44.txt). Every variant
 * returns the reference's bits (for finite inputs); a variant may form A_j
 * as max_i |w_ji| max_g |s_ig| (the same float: rounding is monotonic).
 * The rounding of the weights adds an error of at most A_j / 254 per row
 * and code unit from the centre, against a KIVI step of (max - min) /
 * (2^bits - 1) = s_ig.
 * bits is 2, 3 or 4, group a multiple of 16 dividing D, D / group <= 16. */
#ifndef VQ_KERNELS_KIVI_QAXPY_H
#define VQ_KERNELS_KIVI_QAXPY_H

#include <stddef.h>
#include <stdint.h>

#include "kernels/prefetch.h"

#define VQ_KQ_BLOCK 32 /* rows sharing one weight scale */

/* the bytes at the start of a call's rows (rstride apart) that the
 * int8-weight block kernels (kivi_qaxpy, qaxpy8, lut_qaxpy: their AVX-512
 * twins' vq_block_fetch) do not fetch ahead themselves: a block plus
 * VQ_PF_SPREAD_BLOCKS */
static inline size_t vq_block_lead(size_t rstride) { return VQ_KQ_BLOCK * rstride + VQ_PF_SPREAD_BLOCKS; }

void vq_kivi_qaxpy_ref(const uint8_t *rows, size_t rstride, int bits, size_t nt, size_t D, size_t group, const float *w,
                       size_t wstride, int n_q, float *acc, size_t astride);
/* AVX2 + FMA + F16C (VPMADDUBSW of two rows' codes against their int8
 * weights); bits 2..4, D a multiple of 64 up to 512, group a multiple of
 * 16 (else the reference) */
void vq_kivi_qaxpy_avx2(const uint8_t *rows, size_t rstride, int bits, size_t nt, size_t D, size_t group,
                        const float *w, size_t wstride, int n_q, float *acc, size_t astride);
/* VNNI + VBMI; D a multiple of 64 up to 512, group a power of two (else
 * the reference). 3 bits: each row's codes unpacked to bytes (VPERMB +
 * VPMULTISHIFTQB), four rows interleaved per 32-bit lane by unpacks */
void vq_kivi_qaxpy_avx512x(const uint8_t *rows, size_t rstride, int bits, size_t nt, size_t D, size_t group,
                           const float *w, size_t wstride, int n_q, float *acc, size_t astride);

#endif
