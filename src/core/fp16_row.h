/* fp16_row.h -- rows of little-endian IEEE halves to floats.
 *
 * vq_fp16_row_ref converts with vq_fp16_to_fp32 (fp16.h), the reference;
 * vq_fp16_row_f16c (fp16_row_avx2.c, F16C) is its twin: exact for every
 * input, bit-identical except that a signalling NaN comes out quiet.
 * vq_fp16_row picks the best variant the CPU has. src holds 2*n bytes and
 * needs no alignment. */
#ifndef VQ_CORE_FP16_ROW_H
#define VQ_CORE_FP16_ROW_H

#include <stddef.h>
#include <stdint.h>

void vq_fp16_row_ref(const uint8_t *src, float *dst, size_t n);
void vq_fp16_row_f16c(const uint8_t *src, float *dst, size_t n);
void vq_fp16_row(const uint8_t *src, float *dst, size_t n);

#endif
