/* fp16_row.h -- rows of little-endian IEEE halves to floats, and back.
 *
 * vq_fp16_row_ref converts with vq_fp16_to_fp32 (fp16.h), the reference;
 * vq_fp16_row_f16c (fp16_row_avx2.c, F16C) is its twin: exact for every
 * input, bit-identical except that a signalling NaN comes out quiet.
 * vq_fp16_row picks the best variant the CPU has. src holds 2*n bytes and
 * needs no alignment.
 *
 * vq_fp16_from_row_ref(src, dst, n) writes the n floats as halves (2n
 * bytes, LE, any alignment) with vq_fp32_to_fp16 (round to nearest even,
 * overflow to infinity, every NaN as sign | 0x7e00); its F16C twin gives
 * the same bytes for every input (VCVTPS2PH rounds to nearest even; a
 * group of 8 holding a NaN goes to the reference). */
#ifndef VQ_CORE_FP16_ROW_H
#define VQ_CORE_FP16_ROW_H

#include <stddef.h>
#include <stdint.h>

void vq_fp16_row_ref(const uint8_t *src, float *dst, size_t n);
void vq_fp16_row_f16c(const uint8_t *src, float *dst, size_t n);
void vq_fp16_row(const uint8_t *src, float *dst, size_t n);
void vq_fp16_from_row_ref(const float *src, uint8_t *dst, size_t n);
void vq_fp16_from_row_f16c(const float *src, uint8_t *dst, size_t n);

#endif
