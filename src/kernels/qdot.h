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
#include <string.h>

#include "core/fp16.h"

/* One block's integer part, isum - off*sum of the query block (exact). */
typedef int32_t (*vq_qdot_block_fn)(int bits, const uint8_t *blk, const int8_t *qb, int32_t sq);

/* vq_qdot's loops and float part in the reference's order, around a
 * variant's block function (inlined: the call is to a constant) */
static inline void vq_qdot_blocks(vq_qdot_block_fn block, int bits, const uint8_t *codes, size_t rstride, size_t nt,
                                  size_t D, const uint8_t *qbuf, size_t qstride, int n_q, float *s, size_t sstride)
{
    const size_t nb = D / 32, bb = bits == 8 ? 34 : 18;
    for (int j = 0; j < n_q; j++) {
        const uint8_t *qj = qbuf + (size_t)j * qstride;
        const int8_t *q = (const int8_t *)(const void *)(qj + nb * (sizeof(float) + sizeof(int32_t)));
        for (size_t i = 0; i < nt; i++) {
            const uint8_t *row = codes + i * rstride;
            float acc = 0.0f;
            for (size_t b = 0; b < nb; b++) {
                const uint8_t *blk = row + b * bb;
                float dq;
                int32_t sq;
                memcpy(&dq, qj + b * sizeof(float), sizeof dq);
                memcpy(&sq, qj + nb * sizeof(float) + b * sizeof(int32_t), sizeof sq);
                float dk = vq_fp16_to_fp32((vq_fp16)(blk[0] | blk[1] << 8));
                /* one operation per statement: never contracted into an FMA */
                float t = dk * dq;
                t = t * (float)block(bits, blk, q + b * 32, sq);
                acc = acc + t;
            }
            s[(size_t)j * sstride + i] = acc;
        }
    }
}

size_t vq_qdot_query_bytes(size_t D);
/* the prepared query of x (D floats) at dst; vq_qdot_prepare is the
 * reference (lrintf per value), the twins write its bytes for every input
 * (AVX2; AVX-512, with VNNI: the kernel table's qdot_prepare beside its
 * qdot) */
void vq_qdot_prepare(const float *x, size_t D, uint8_t *dst);
void vq_qdot_prepare_avx2(const float *x, size_t D, uint8_t *dst);
void vq_qdot_prepare_avx512x(const float *x, size_t D, uint8_t *dst);

void vq_qdot_ref(int bits, const uint8_t *codes, size_t rstride, size_t nt, size_t D, const uint8_t *qbuf,
                 size_t qstride, int n_q, float *s, size_t sstride);
void vq_qdot_avx2(int bits, const uint8_t *codes, size_t rstride, size_t nt, size_t D, const uint8_t *qbuf,
                  size_t qstride, int n_q, float *s, size_t sstride);
void vq_qdot_avx512x(int bits, const uint8_t *codes, size_t rstride, size_t nt, size_t D, const uint8_t *qbuf,
                     size_t qstride, int n_q, float *s, size_t sstride);

#endif
