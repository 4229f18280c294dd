/* qaxpy.h -- weighted sums of q8_0 / q4_0 rows (quant_blocks.c's layouts)
 * into float accumulators, decoding each row once in registers:
 *
 *   acc[j*astride + e] += sum_i w[j*wstride + i] * value_i[e]
 *
 * for nt rows of D values (D a multiple of 32; row i at codes + i*rstride)
 * and n_q weight rows, with value_i the block values of qblock_values.h
 * (d*q, d*(q-8): the same floats). The AVX-512 twin adds w_i * value_i[e]
 * with one FMA per row in row order, as the tiled path (values into a
 * tile, then dense_axpy) does: bit-identical to it. The _ref function is
 * the scalar reference (plain multiply and add). */
#ifndef VQ_KERNELS_QAXPY_H
#define VQ_KERNELS_QAXPY_H

#include <stddef.h>
#include <stdint.h>

void vq_qaxpy_ref(int bits, const uint8_t *codes, size_t rstride, size_t nt, size_t D, const float *w,
                  size_t wstride, int n_q, float *acc, size_t astride);
void vq_qaxpy_avx512(int bits, const uint8_t *codes, size_t rstride, size_t nt, size_t D, const float *w,
                     size_t wstride, int n_q, float *acc, size_t astride);

#endif
