/* qdot.h -- scores of q8_0 / q4_0 rows (quant_blocks.c's layouts) against
 * queries quantized to int8, in the integer domain (VNNI on AVX-512,
 * VPMADDUBSW on AVX2).
 *
 * A prepared int8 query of D values (D a multiple of 32, nb = D/32
 * blocks) is vq_qdot_query_bytes(D) bytes, written by vq_qdot_prepare:
 *   float   d[nb]    per-block scale, amax/127 (0 for an all-zero block)
 *   int32_t sum[nb]  sum of the block's int8 values
 *   int8_t  q[D]     round(x/d), in [-127, 127]
 * so x ~= d[b]*q[e] (error <= d[b]/2 per value).
 *
 * vq_qdot(bits, codes, rstride, nt, D, qbuf, qstride, n_q, s, sstride):
 * for nt rows of D/32 blocks (row i at codes + i*rstride; block bytes 34
 * for bits 8, 18 for bits 4) and n_q prepared queries (query j at
 * qbuf + j*qstride),
 *   s[j*sstride + i] = sum_b half(dk_ib) * d_jb * (sum_e u_ie q_je - off*sum_jb)
 * with u the row's codes as unsigned bytes (q8_0: k+128, off 128; q4_0:
 * the nibble, off 8): the integer part is exact, so variants differ only
 * in the order of the float sum over blocks (relative error ~1e-6 of
 * sum_b |term_b|; the AVX2 twin keeps the reference's order). The _ref
 * function is the scalar reference. */
#ifndef VQ_KERNELS_QDOT_H
#define VQ_KERNELS_QDOT_H

#include <stddef.h>
#include <stdint.h>

size_t vq_qdot_query_bytes(size_t D);
void vq_qdot_prepare(const float *x, size_t D, uint8_t *dst);

void vq_qdot_ref(int bits, const uint8_t *codes, size_t rstride, size_t nt, size_t D, const uint8_t *qbuf,
                 size_t qstride, int n_q, float *s, size_t sstride);
void vq_qdot_avx2(int bits, const uint8_t *codes, size_t rstride, size_t nt, size_t D, const uint8_t *qbuf,
                  size_t qstride, int n_q, float *s, size_t sstride);
void vq_qdot_avx512x(int bits, const uint8_t *codes, size_t rstride, size_t nt, size_t D, const uint8_t *qbuf,
                     size_t qstride, int n_q, float *s, size_t sstride);

#endif
