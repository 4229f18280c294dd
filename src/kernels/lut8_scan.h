/* lut8_scan.h -- scores of tokens of byte codes from per-query tables of
 * bytes: the "fast scan" of product quantization at 8 bits per piece
 * (VecInfer's codes with the query's distance tables rounded to bytes).
 *
 * vq_lut8_scan(codes, stride, n, M, tab, qstride, n_q, s, sstride): token i
 * has M byte codes c_im at codes + i*stride; query j's table at
 * tab + j*qstride is
 *     float bias | float delta | M x 256 bytes T[m][c]
 * (VQ_L8_HEAD bytes of header, floats little-endian as memcpy reads them),
 * and s[j*sstride + i] = bias + delta * (float)(sum_m T[m][c_im]): the
 * integer sum exact, then one multiply and one add, so every variant
 * returns the reference's bits. 1 <= M <= 256. */
#ifndef VQ_KERNELS_LUT8_SCAN_H
#define VQ_KERNELS_LUT8_SCAN_H

#include <stddef.h>
#include <stdint.h>

#define VQ_L8_HEAD 8 /* bias and delta before the tables */

void vq_lut8_scan_ref(const uint8_t *codes, size_t stride, size_t n, size_t M, const uint8_t *tab, size_t qstride,
                      int n_q, float *s, size_t sstride);
/* AVX-512 BW + VBMI: 64 tokens per pass, their codes transposed to one
 * register per piece, two VPERMI2B and a blend per piece and query (the
 * table's 256 bytes in four registers), 16-bit sums; M <= 64 (else the
 * reference) */
void vq_lut8_scan_avx512x(const uint8_t *codes, size_t stride, size_t n, size_t M, const uint8_t *tab,
                          size_t qstride, int n_q, float *s, size_t sstride);

#endif
