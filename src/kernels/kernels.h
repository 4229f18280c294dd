/* kernels.h -- the CPU kernel layer below the codecs: one table of
 * function pointers per instruction set, chosen once.
 *
 * Every entry has a scalar reference (the `ref` table) that the SIMD
 * variants are tested against (tests/test_kernels.c). vq_kernels() returns
 * the best table the CPU supports -- AVX-512 (F/BW/VL/DQ; entries that need
 * VPOPCNTDQ or VNNI only when the CPU has them), else AVX2 (with FMA, F16C
 * and POPCNT), else scalar -- decided at the first call (thread-safe)
 * and capped by VQ_FORCE_ISA=scalar|avx2|avx512 (core/cpu.h). A SIMD
 * table fills the entries it has no twin for with the next lower
 * variant's. Call sites never test CPU features themselves.
 *
 * Contracts of the entries (all pointers non-NULL, no allocation, inputs
 * need no alignment):
 *   dense_dot, dense_axpy: kernels/dense.h (float or IEEE half rows);
 *       dense_f16 says whether the half rows have SIMD loops (else they run
 *       the scalar reference, and a caller converts them to floats first);
 *       dense_q the same of q8_0 / q4_0 rows (0 where the block values
 *       into a tile, then the float kernel, are faster).
 *   fp16_row(src, dst, n): dst[i] = the IEEE half at src + 2i (LE).
 *   fp16_from_row(src, dst, n): the reverse, core/fp16_row.h (the bytes
 *       of vq_fp32_to_fp16 for every input).
 *   half_ratio(base, stride, n, c, out): out[i] = h0_i / (h1_i * c) for
 *       i < n, h0_i and h1_i the IEEE halves (LE) at base + i*stride and
 *       two bytes further (stride >= 4): one multiply, then one division
 *       (RaBitQ's one-bit factor, norm / (correction * sqrt(D))); nothing
 *       past out[n-1] written. Every variant has these bits.
 *   q8_0_values, q4_0_values: kernels/qblock_values.h.
 *   lut_row(codes, bits, n, lut, scale, add, out): for the n codes of
 *       `bits` bits (1..4) packed LSB first from codes[0] bit 0
 *       (core/bitstream.h order), out[i] = (add ? out[i] : 0) +
 *       scale * lut[code_i]; n a multiple of 16; lut holds 2^bits floats.
 *   kivi_row(row, bits, n, s, m, out): out[i] = s[i]*code_i + m[i] (one
 *       multiply, then one add, as the reference) for n codes of bits 1..4
 *       packed LSB first; n a multiple of 16.
 *   kivi_group_row(row, bits, n, group, gs16, gm16, out): the same with one
 *       scale and min per group of `group` channels (a multiple of 16
 *       dividing n), read as IEEE halves (LE) from gs16 / gm16:
 *       s[i] = half(gs16, i / group), m[i] = half(gm16, i / group).
 *   lut8_row(c8, n, lut, s, m, out): out[i] = s[i]*lut[c8[i]] + m[i] (one
 *       multiply, then one add) for n codes given one per byte, each
 *       below 256 (lut holds as many floats as the largest code needs):
 *       kivix at any width (lut NULL: the code itself, or its non-uniform
 *       levels).
 *   kivi_fold(q, qstride, n_q, s, m, D, qs, base) (a piece of kivi_kdot,
 *       not a table entry): for each query j (floats at q + j*qstride),
 *       qs[j*D + e] = q_e * s[e] (one multiply) and base[j] = the 16 lane
 *       sums, lane l adding q_e * m[e] (a multiply, then an add) for e = l,
 *       l + 16, ... in order from 0 (the tail below D in its lane the same
 *       way), reduced by vq_sum16_lanes (core/vexp.h). Every variant has
 *       these bits.
 *   kivi_kdot(blocks, bstride, nblk, bits, G, D, q, qstride, n_q, s,
 *       sstride): KIVI keys' scores against float queries. Block k (at
 *       blocks + k*bstride) holds G tokens: D IEEE halves (LE) of channel
 *       scales s_e, D of mins m_e, then G rows of D codes of `bits` bits
 *       (1..4; kivi stores 2 or 4), D*bits/8 bytes each. With qs, base
 *       kivi_fold's of the block's s, m and query j:
 *       s[j*sstride + k*G + t] = codes_dot's sum of row t against qs_j, plus
 *       base_j (one add). D a multiple of 16 up to VQ_KDOT_MAX_D; the next
 *       block is fetched while one is scored. Every variant has the bits of
 *       its table's fp16_row, kivi_fold and codes_dot composed so (AVX-512
 *       at 2 and 4 bits: one fused pass per block, the folded queries never
 *       leave L1, the base added at the scores' store).
 *   kivi_axpy(rows, rstride, bits, nt, D, group, w, wstride, n_q, acc,
 *       astride): acc[j*astride + e] += sum_i w[j*wstride + i] * v_i[e] for
 *       nt KIVI value rows (row i at rows + i*rstride: D/group fp16 scales
 *       s_ig, D/group fp16 mins m_ig, then the codes c_ie of `bits` bits,
 *       1..4; kivi itself stores 2 or 4), v_i =
 *       s_ig c_ie + m_ig, as sum_i w_i (s_ig c_ie) + sum_i w_i m_ig: per
 *       element one FMA per row in row order, then the group's min sum
 *       (FMAs in row order) added once. Every variant has these bits.
 *   lut_axpy(codes, stride, nt, D, offs, bits, lut, n_sets, f, hoff, w,
 *       wstride, n_q, acc, astride): weighted sums of rows of code levels
 *       (TurboQuant's values in the rotated domain). Row i has n_sets (1 or
 *       2) sets of D codes of `bits` bits (1..4, packed LSB first) at
 *       codes + i*stride + offs[k], set k's levels at lut + k*2^bits, and
 *       the factor f_i (f[i], or f NULL: the IEEE half at codes + i*stride
 *       + hoff); v_ie = f_i*lut_0[c_0ie] (+ f_i*lut_1[c_1ie], then one add:
 *       lut_row's values) and acc[j*astride + e] = fmaf(w[j*wstride + i],
 *       v_ie, acc) row after row. D a multiple of 16. Every variant has
 *       these bits.
 *   pq_axpy(codes, stride, nt, M, sd, cb, K, w, wstride, n_q, acc,
 *       astride): weighted sums of product-quantized rows (vecinfer's
 *       values in the rotated domain): row i has M one-byte codes c_im
 *       (< K <= 256) at codes + i*stride, piece m of its value is the
 *       centroid cb + (m*K + c_im)*sd (sd floats), and acc[j*astride +
 *       m*sd + d] = fmaf(w[j*wstride + i], centroid[d], acc) row after row.
 *       Every variant has these bits (AVX-512: sd 4 or 8, M*sd a multiple
 *       of 16; else the reference).
 *   pq_score(codes, stride, n, M, tabs, K, tstride, n_q, s, sstride,
 *       work): product-quantized keys against float per-query tables
 *       (vecinfer's keys): row i has M one-byte codes c_im (< K <= 256) at
 *       codes + i*stride, query j's table of piece m is the K floats at
 *       tabs + j*tstride + m*K, and s[j*sstride + i] = sum_m
 *       table_m[c_im], added from 0.0f in piece order. work: NULL, or
 *       VQ_PQ_SCORE_WORK(M, K) floats the variant may overwrite (the SIMD
 *       variants' K > 16 path lays four queries' tables side by side
 *       there for calls of at least K/4 tokens; without it they take the
 *       reference). Every variant has
 *       these bits (AVX2 and AVX-512: K <= 16 with M a multiple of 4 up to
 *       64, K > 16 with work; else the reference).
 *   outlier_adds(tab, n_o, dense, bits, sm, D, entries, q, qstride, n_q,
 *       s, sstride): a key block's outlier corrections (kivix: exact values
 *       kept beside the dense codes). Entry k < n_o (n_o <= VQ_OUTLIERS_MAX)
 *       is 4 bytes at tab + 4k: a u16 element index el, then an IEEE half x
 *       (LE). Entries with el >= entries are skipped; the others name token
 *       t = el / D and channel c = el % D, whose dense code (`bits` bits,
 *       1..8, at bit el*bits of dense, LSB first) decodes to sm[c]*code +
 *       sm[D + c] (one multiply, then one add), and add q[j*qstride + c] *
 *       (x - that) (a subtraction, a multiply, then an add) to s[j*sstride
 *       + t] for each query j < n_q, entries in table order. Three bytes
 *       past the last dense code's byte must be readable (kivix: its table
 *       follows). Every variant has these bits (AVX-512: D a power of two
 *       16..128, else the AVX2 twin; AVX2: D a power of two and no entry
 *       past the block, else the reference).
 *   kivi_qaxpy: kernels/kivi_qaxpy.h (the same sums with the weights
 *       rounded to int8 per block of rows; the VNNI + VBMI variant where
 *       the CPU has both, else the AVX2 one).
 *   lut_qaxpy: kernels/lut_qaxpy.h (lut_axpy's sums of one set with the
 *       weights rounded to int8 per block of rows and the levels to int8;
 *       the VNNI + VBMI variant where the CPU has both, else the AVX2
 *       one).
 *   codes_dot(codes, rstride, bits, nt, E, lut, q, qstride, n_q, s, sstride):
 *       s[j*sstride + i] = sum_e q[j*qstride + e] * v(code_i[e]) for nt rows
 *       of E codes of `bits` bits (1..4; E a multiple of 16) packed LSB
 *       first at codes + i*rstride, v(c) = c (lut NULL: KIVI keys with the
 *       block's scales folded into q) or lut[c] (2^bits floats: TurboQuant's
 *       code levels): dense_dot over values decoded in registers (AVX-512,
 *       2-4 bits without lut: sixteen tokens per register, no
 *       horizontal sums; the sums agree to float rounding).
 *   codes_dot_pair(codes, rstride, off, nt, E, lut4, q, qstride, n_q, s,
 *       sstride): the same over two sets of E 1-bit codes, a_ie at codes +
 *       i*rstride and b_ie off bytes further, v = lut4[a + 2b] (TurboQuant
 *       RVQ's two 1-bit stages, their levels added once per code pair): one
 *       pass instead of two.
 *   bitdot(codes, stride, n, D, planes, qstride, n_q, qbits, pz, pq): for
 *       n tokens whose D bits (D a multiple of 32) start at codes + i*stride,
 *       pz[i] = popcount(z_i) and, for n_q queries whose qbits bit planes of
 *       D/8 bytes start at planes + j*qstride,
 *       pq[j*n + i] = sum_p 2^p popcount(z_i & plane_jp) (the integer dot
 *       of the bits with the query's integer levels, RaBitQ's estimator).
 *   signscore(codes, stride, n, D, offs, w, n_sets, f, hoff, planes, qstride,
 *       qc, n_q, qbits, s, sstride): scores from sign bits, bitdot's counts
 *       combined in float. Token i has n_sets (1 or 2) sets of D bits at
 *       codes + i*stride + offs[k] and the factor f[i] (f NULL: the IEEE
 *       half, LE, at codes + i*stride + hoff, exactly); query j has its
 *       bit planes as bitdot's at planes + j*qstride and the constants
 *       qc[3j], qc[3j+1], qc[3j+2]. With pz_k, pq_k the counts of set k:
 *         Z = w[0] pz_0 (+ w[1] pz_1),  P = w[0] pq_0 (+ w[1] pq_1)
 *         s[j*sstride + i] = f[i] * ((qc[3j] Z + qc[3j+1] P) - qc[3j+2])
 *       every product and sum rounded on its own, in this order (no FMA),
 *       so every variant has the reference's bits (kernels/qplanes.h gives
 *       the constants: 2 lo, 2 delta, base * sum w). With qbits <=
 *       VQ_NIBBLE_QBITS each query's planes are followed by the nibble
 *       tables of its levels (kernels/nibble_tables.h), which a variant
 *       may read instead of the planes (the VBMI + VNNI one does: 4
 *       nibbles of 16 tokens per lookup).
 *   ftab_score(codes, stride, n, m, offs, w, n_sets, f, hoff, tabs,
 *       tstride, n_q, s, sstride): packed codes scored against float
 *       queries through their float tables (kernels/float_tables.h: sign
 *       or level tables, one per nibble). Token i has n_sets (1 or 2) sets
 *       of m bits (m a multiple of 4) at codes + i*stride + offs[k] and the
 *       factor h_i: f[i], or (f NULL) the IEEE half (LE) at codes +
 *       i*stride + hoff (stride >= 4);
 *       query j has the m/4 tables of a set at tabs + j*tstride (floats).
 *       With A_k the table sum of set k,
 *         s[j*sstride + i] = h_i * (w[0] A_0 (+ w[1] A_1))
 *       every product and sum rounded on its own, in this order, so every
 *       variant has the reference's bits (AVX2 and AVX-512: m a multiple
 *       of 32 up to 1024; else the reference). ftab_levels says whether
 *       its level tables beat codes_dot over the same codes (AVX-512: a
 *       nibble of 16 tokens per VPERMPS; AVX2 builds its tables and looks
 *       them up slower than its codes_dot decodes: one core, D 128, 4
 *       queries, turboquant_mse 18.9 ns a token by codes_dot against 20.7-21.4
 *       by level tables, figures/bench/ab-session39.txt part 1); sign
 *       tables win on both.
 *   sign_tables, level_tables: kernels/float_tables.h (ftab_score's
 *       tables; every variant the reference's bits).
 *   qplanes(y, D, qbits, qbuf): a query's levels, bit planes and nibble
 *       tables, kernels/qplanes.h (vq_qplanes_encode_ref's bytes for
 *       finite y).
 *   codes_qdot: kernels/codes_qdot.h (KIVI key codes against int8
 *       queries; the VNNI variant when the CPU has AVX-512 VNNI, else the
 *       AVX2 one).
 *   qaxpy: kernels/qaxpy.h (weighted sums of q8_0 / q4_0 rows); qaxpy8 the
 *       same with int8 weights (the VNNI + VBMI variant where the CPU has
 *       both, else the AVX2 one).
 *   qdot: kernels/qdot.h (q8_0 / q4_0 rows against int8 queries; the VNNI
 *       variant when the CPU has AVX-512 VNNI, else the AVX2 one).
 *   rope_pairs: kernels/rope.h (RoPE turn of one vector by a table row).
 *   fwht, flip_signs: kernels/fwht.h (the Hadamard rotation's transform and
 *       sign flips).
 *   bits_unpack(src, n, bits, out): out[i] = code i of the n codes of
 *       `bits` bits (1..8) packed at src (core/bitstream.h), one per byte;
 *       reads only the bytes the codes lie in (the reference is
 *       vq_bits_unpack; the VBMI variant where the CPU has it, else the
 *       AVX2 one).
 *   rope_codes_dot: kernels/rope.h (pre-RoPE integer keys scored against
 *       float queries, each token turned by its table row; the VBMI
 *       variant where the CPU has it, else the AVX2 one).
 *   nearest8: kernels/nearest8.h (the nearest of k centroids of 8 floats:
 *       VecInfer's encode, k-means' assignments; the AVX2 variant on both
 *       SIMD tables).
 *   lut8_scan: kernels/lut8_scan.h (byte codes scored from per-query byte
 *       tables: vecinfer with qbits=8; the VBMI variant where the CPU has
 *       it, else the reference).
 *   silu_mul, gelu_mul: kernels/glu.h (the gated products of a feed-forward
 *       block).
 *   ordered_matvec: kernels/matvec.h (a matrix, column by column, times a
 *       vector, each sum in index order: the encoders' projections, the
 *       same bits in every variant).
 *   lut8_tables: kernels/lut8_tables.h (a query's float tables rounded to
 *       lut8_scan's byte tables; the same bytes in every variant). */
#ifndef VQ_KERNELS_KERNELS_H
#define VQ_KERNELS_KERNELS_H

#include <stddef.h>
#include <stdint.h>

#include "kernels/dense.h"
#include "kernels/fwht.h"
#include "kernels/glu.h"
#include "kernels/qblock_values.h"
#include "kernels/codes_qdot.h"
#include "kernels/kivi_qaxpy.h"
#include "kernels/lut8_scan.h"
#include "kernels/lut8_tables.h"
#include "kernels/lut_qaxpy.h"
#include "kernels/matvec.h"
#include "kernels/nearest8.h"
#include "kernels/nibble_tables.h"
#include "kernels/qaxpy.h"
#include "kernels/qdot.h"
#include "kernels/qplanes.h"
#include "kernels/rope.h"
#include "kernels/float_tables.h"

typedef void vq_signscore_fn(const uint8_t *codes, size_t stride, size_t n, size_t D, const size_t *offs,
                             const float *w, int n_sets, const float *f, size_t hoff, const uint8_t *planes,
                             size_t qstride, const float *qc, int n_q, int qbits, float *s, size_t sstride);
typedef void vq_bitdot_fn(const uint8_t *codes, size_t stride, size_t n, size_t D, const uint8_t *planes,
                          size_t qstride, int n_q, int qbits, uint32_t *pz, uint32_t *pq);

typedef void vq_ftab_score_fn(const uint8_t *codes, size_t stride, size_t n, size_t m, const size_t *offs,
                              const float *w, int n_sets, const float *f, size_t hoff, const float *tabs,
                              size_t tstride, int n_q, float *s, size_t sstride);

typedef void vq_half_ratio_fn(const uint8_t *base, size_t stride, size_t n, float c, float *out);
/* kivi_kdot's bound on D (four queries' folded copies on the stack) */
#define VQ_KDOT_MAX_D 256
typedef void vq_kivi_kdot_fn(const uint8_t *blocks, size_t bstride, size_t nblk, int bits, size_t G, size_t D,
                             const float *q, size_t qstride, int n_q, float *s, size_t sstride);
typedef void vq_kivi_fold_fn(const float *q, size_t qstride, int n_q, const float *s, const float *m, size_t D,
                             float *qs, float *base);
typedef void vq_codes_dot_fn(const uint8_t *codes, size_t rstride, int bits, size_t nt, size_t E, const float *lut,
                             const float *q, size_t qstride, int n_q, float *s, size_t sstride);

typedef void vq_lut_axpy_fn(const uint8_t *codes, size_t stride, size_t nt, size_t D, const size_t *offs, int bits,
                            const float *lut, int n_sets, const float *f, size_t hoff, const float *w, size_t wstride,
                            int n_q, float *acc, size_t astride);

typedef void vq_pq_axpy_fn(const uint8_t *codes, size_t stride, size_t nt, size_t M, size_t sd, const float *cb,
                           size_t K, const float *w, size_t wstride, int n_q, float *acc, size_t astride);

#define VQ_PQ_SCORE_WORK(M, K) ((size_t)(M) * (size_t)(K) * 4u) /* pq_score: floats of work */
typedef void vq_pq_score_fn(const uint8_t *codes, size_t stride, size_t n, size_t M, const float *tabs, size_t K,
                            size_t tstride, int n_q, float *s, size_t sstride, float *work);

#define VQ_OUTLIERS_MAX 1024 /* outlier_adds: entries per call */
typedef void vq_outlier_adds_fn(const uint8_t *tab, int n_o, const uint8_t *dense, int bits, const float *sm, size_t D,
                                size_t entries, const float *q, size_t qstride, int n_q, float *s, size_t sstride);

typedef struct vq_kernels {
    const char *isa; /* "scalar", "avx2", "avx512" */
    int simd;        /* 0 for the scalar references */
    vq_dense_fn *dense_dot, *dense_axpy;
    int dense_f16; /* 1: dense_dot/axpy have SIMD loops for VQ_ELEM_F16 rows */
    int dense_q;   /* 1: ... for VQ_ELEM_Q8_0 / Q4_0 rows, faster than their tiled path */
    int ftab_levels; /* 1: ftab_score over level tables is faster than codes_dot (see ftab_score) */
    void (*fp16_row)(const uint8_t *src, float *dst, size_t n);
    void (*fp16_from_row)(const float *src, uint8_t *dst, size_t n);
    vq_half_ratio_fn *half_ratio;
    void (*q8_0_values)(const uint8_t *blk, size_t nblk, float *out);
    void (*q4_0_values)(const uint8_t *blk, size_t nblk, float *out);
    void (*lut_row)(const uint8_t *codes, int bits, size_t n, const float *lut, float scale, int add, float *out);
    void (*kivi_row)(const uint8_t *row, int bits, size_t n, const float *s, const float *m, float *out);
    void (*lut8_row)(const uint8_t *c8, size_t n, const float *lut, const float *s, const float *m, float *out);
    void (*kivi_group_row)(const uint8_t *row, int bits, size_t n, size_t group, const uint8_t *gs16,
                           const uint8_t *gm16, float *out);
    vq_kivi_kdot_fn *kivi_kdot;
    void (*kivi_axpy)(const uint8_t *rows, size_t rstride, int bits, size_t nt, size_t D, size_t group,
                      const float *w, size_t wstride, int n_q, float *acc, size_t astride);
    vq_lut_axpy_fn *lut_axpy;
    vq_pq_axpy_fn *pq_axpy;
    vq_pq_score_fn *pq_score;
    vq_outlier_adds_fn *outlier_adds;
    void (*kivi_qaxpy)(const uint8_t *rows, size_t rstride, int bits, size_t nt, size_t D, size_t group,
                       const float *w, size_t wstride, int n_q, float *acc, size_t astride);
    vq_lut_qaxpy_fn *lut_qaxpy;
    vq_codes_dot_fn *codes_dot;
    void (*codes_dot_pair)(const uint8_t *codes, size_t rstride, size_t off, size_t nt, size_t E, const float *lut4,
                           const float *q, size_t qstride, int n_q, float *s, size_t sstride);
    vq_bitdot_fn *bitdot;
    vq_signscore_fn *signscore;
    vq_ftab_score_fn *ftab_score;
    vq_sign_tables_fn *sign_tables;
    vq_level_tables_fn *level_tables;
    void (*qplanes)(const float *y, int D, int qbits, uint8_t *qbuf);
    void (*codes_qprep)(const float *q, size_t qstride, int n_q, const uint8_t *hdr, size_t D, int bits, uint8_t *dst,
                        size_t dstride);
    void (*codes_qdot)(const uint8_t *codes, size_t rstride, int bits, size_t nt, size_t D, const uint8_t *qbuf,
                       size_t qstride, int n_q, float *s, size_t sstride);
    void (*qaxpy)(int bits, const uint8_t *codes, size_t rstride, size_t nt, size_t D, const float *w,
                  size_t wstride, int n_q, float *acc, size_t astride);
    void (*qaxpy8)(int bits, const uint8_t *codes, size_t rstride, size_t nt, size_t D, const float *w,
                   size_t wstride, int n_q, float *acc, size_t astride);
    void (*qdot)(int bits, const uint8_t *codes, size_t rstride, size_t nt, size_t D, const uint8_t *qbuf,
                 size_t qstride, int n_q, float *s, size_t sstride);
    void (*qdot_prepare)(const float *x, size_t D, uint8_t *dst);
    void (*rope_pairs)(float *x, const float *cs, size_t half, int neox, float sgn);
    void (*fwht)(float *x, size_t n);
    void (*flip_signs)(float *x, const uint8_t *bits, size_t n);
    void (*bits_unpack)(const uint8_t *src, size_t n, int bits, uint8_t *out);
    void (*rope_codes_dot)(const vq_rope_keys *k, const float *q, size_t qstride, int n_q, float *out,
                           size_t ostride);
    int (*nearest8)(const float *cent, size_t k, const float *p);
    void (*lut8_scan)(const uint8_t *codes, size_t stride, size_t n, size_t M, const uint8_t *tab, size_t qstride,
                      int n_q, float *s, size_t sstride);
    void (*silu_mul)(float *g, const float *u, size_t n);
    void (*gelu_mul)(float *g, const float *u, size_t n);
    vq_ordered_matvec_fn *ordered_matvec;
    vq_lut8_tables_fn *lut8_tables;
} vq_kernels;

/* The table in use (see above). */
const vq_kernels *vq_kernels_get(void);
/* A given variant, or NULL when this CPU (or VQ_FORCE_ISA) rules it out;
 * "scalar" is always available. For tests and benchmarks. */
const vq_kernels *vq_kernels_variant(const char *isa);

/* ---- the variants (one file each; *_avx2.c / *_avx512.c are compiled with
 * those instruction sets and only reached through the tables) ---------- */
void vq_lut_row_ref(const uint8_t *codes, int bits, size_t n, const float *lut, float scale, int add, float *out);
void vq_lut_row_avx2(const uint8_t *codes, int bits, size_t n, const float *lut, float scale, int add, float *out);
void vq_lut_row_avx512(const uint8_t *codes, int bits, size_t n, const float *lut, float scale, int add, float *out);
void vq_kivi_row_ref(const uint8_t *row, int bits, size_t n, const float *s, const float *m, float *out);
void vq_kivi_row_avx2(const uint8_t *row, int bits, size_t n, const float *s, const float *m, float *out);
void vq_kivi_row_avx512(const uint8_t *row, int bits, size_t n, const float *s, const float *m, float *out);
void vq_lut8_row_ref(const uint8_t *c8, size_t n, const float *lut, const float *s, const float *m, float *out);
void vq_lut8_row_avx2(const uint8_t *c8, size_t n, const float *lut, const float *s, const float *m, float *out);
void vq_lut8_row_avx512(const uint8_t *c8, size_t n, const float *lut, const float *s, const float *m, float *out);
void vq_kivi_group_row_ref(const uint8_t *row, int bits, size_t n, size_t group, const uint8_t *gs16,
                           const uint8_t *gm16, float *out);
void vq_kivi_group_row_avx2(const uint8_t *row, int bits, size_t n, size_t group, const uint8_t *gs16,
                            const uint8_t *gm16, float *out);
void vq_kivi_group_row_avx512(const uint8_t *row, int bits, size_t n, size_t group, const uint8_t *gs16,
                              const uint8_t *gm16, float *out);
void vq_fp16_row_avx512(const uint8_t *src, float *dst, size_t n);
vq_half_ratio_fn vq_half_ratio_ref, vq_half_ratio_avx2, vq_half_ratio_avx512;
void vq_bits_unpack_ref(const uint8_t *src, size_t n, int bits, uint8_t *out);
void vq_bits_unpack_avx2(const uint8_t *src, size_t n, int bits, uint8_t *out);
void vq_bits_unpack_avx512x(const uint8_t *src, size_t n, int bits, uint8_t *out);
vq_kivi_fold_fn vq_kivi_fold_ref, vq_kivi_fold_avx2;
/* kivi_kdot from pieces: per block fp16_row of the header, fold, codes_dot
 * of up to four queries, the base added (the scalar and AVX2 tables, and
 * the AVX-512 one outside its fused cases) */
void vq_kivi_kdot_via(void (*fp16_row)(const uint8_t *src, float *dst, size_t n), vq_kivi_fold_fn *fold,
                      vq_codes_dot_fn *dot, const uint8_t *blocks, size_t bstride, size_t nblk, int bits, size_t G,
                      size_t D, const float *q, size_t qstride, int n_q, float *s, size_t sstride);
vq_kivi_kdot_fn vq_kivi_kdot_ref, vq_kivi_kdot_avx2, vq_kivi_kdot_avx512;
void vq_kivi_axpy_ref(const uint8_t *rows, size_t rstride, int bits, size_t nt, size_t D, size_t group,
                      const float *w, size_t wstride, int n_q, float *acc, size_t astride);
void vq_kivi_axpy_avx2(const uint8_t *rows, size_t rstride, int bits, size_t nt, size_t D, size_t group,
                       const float *w, size_t wstride, int n_q, float *acc, size_t astride);
void vq_kivi_axpy_avx512(const uint8_t *rows, size_t rstride, int bits, size_t nt, size_t D, size_t group,
                         const float *w, size_t wstride, int n_q, float *acc, size_t astride);
vq_lut_axpy_fn vq_lut_axpy_ref, vq_lut_axpy_avx2, vq_lut_axpy_avx512;
vq_pq_axpy_fn vq_pq_axpy_ref, vq_pq_axpy_avx512;
vq_pq_score_fn vq_pq_score_ref, vq_pq_score_avx2, vq_pq_score_avx512;
vq_outlier_adds_fn vq_outlier_adds_ref, vq_outlier_adds_avx2, vq_outlier_adds_avx512;
vq_ftab_score_fn vq_ftab_score_ref, vq_ftab_score_avx2, vq_ftab_score_avx512;
void vq_codes_dot_ref(const uint8_t *codes, size_t rstride, int bits, size_t nt, size_t E, const float *lut,
                      const float *q, size_t qstride, int n_q, float *s, size_t sstride);
void vq_codes_dot_avx2(const uint8_t *codes, size_t rstride, int bits, size_t nt, size_t E, const float *lut,
                       const float *q, size_t qstride, int n_q, float *s, size_t sstride);
void vq_codes_dot_avx512(const uint8_t *codes, size_t rstride, int bits, size_t nt, size_t E, const float *lut,
                         const float *q, size_t qstride, int n_q, float *s, size_t sstride);
void vq_codes_dot_pair_ref(const uint8_t *codes, size_t rstride, size_t off, size_t nt, size_t E, const float *lut4,
                           const float *q, size_t qstride, int n_q, float *s, size_t sstride);
void vq_codes_dot_pair_avx2(const uint8_t *codes, size_t rstride, size_t off, size_t nt, size_t E, const float *lut4,
                            const float *q, size_t qstride, int n_q, float *s, size_t sstride);
void vq_bitdot_ref(const uint8_t *codes, size_t stride, size_t n, size_t D, const uint8_t *planes, size_t qstride,
                   int n_q, int qbits, uint32_t *pz, uint32_t *pq);
void vq_bitdot_avx2(const uint8_t *codes, size_t stride, size_t n, size_t D, const uint8_t *planes, size_t qstride,
                    int n_q, int qbits, uint32_t *pz, uint32_t *pq);
void vq_bitdot_avx512x(const uint8_t *codes, size_t stride, size_t n, size_t D, const uint8_t *planes,
                       size_t qstride, int n_q, int qbits, uint32_t *pz, uint32_t *pq);
/* signscore from a bitdot's counts and the reference's float steps (the
 * scalar table, and the AVX-512 one where D is not 64/128/256) */
void vq_signscore_via(vq_bitdot_fn *bitdot, const uint8_t *codes, size_t stride, size_t n, size_t D,
                      const size_t *offs, const float *w, int n_sets, const float *f, size_t hoff,
                      const uint8_t *planes, size_t qstride, const float *qc, int n_q, int qbits, float *s,
                      size_t sstride);
vq_signscore_fn vq_signscore_ref, vq_signscore_avx2, vq_signscore_avx512x, vq_signscore_nibbles_avx512x;

#endif
