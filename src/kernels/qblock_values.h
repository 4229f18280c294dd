/* qblock_values.h -- the values of q8_0 / q4_0 blocks (quant_blocks.c's
 * layouts: fp16 scale, then 32 int8 or 16 bytes of nibble pairs) as floats,
 * nblk blocks back to back into out[32*nblk]: x = d*q (q8_0), d*(q-8)
 * (q4_0). The _ref functions are the scalar references; the _avx2 twins
 * (qblock_values_avx2.c) and _avx512 twins give bit-identical results (one exact int->float
 * conversion and one multiply per value, as the reference). */
#ifndef VQ_KERNELS_QBLOCK_VALUES_H
#define VQ_KERNELS_QBLOCK_VALUES_H

#include <stddef.h>
#include <stdint.h>

void vq_q8_0_values_ref(const uint8_t *blk, size_t nblk, float *out);
void vq_q4_0_values_ref(const uint8_t *blk, size_t nblk, float *out);
void vq_q8_0_values_avx2(const uint8_t *blk, size_t nblk, float *out);
void vq_q4_0_values_avx2(const uint8_t *blk, size_t nblk, float *out);
void vq_q8_0_values_avx512(const uint8_t *blk, size_t nblk, float *out);
void vq_q4_0_values_avx512(const uint8_t *blk, size_t nblk, float *out);

#endif
