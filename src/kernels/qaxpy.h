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

/* vq_qaxpy8: the same sums with the weights rounded to int8, so that the
 * codes meet them in integer dot products (VNNI). Rows form blocks of
 * VQ_KQ_BLOCK (kernels/kivi_qaxpy.h) from the first (the last may be
 * short); per block and weight row j, with d_ig the scale of row i's
 * column block g (32 values): A_j = max over the block's rows i and every
 * g of |w_ji * d_ig| (one rounded multiply each), s_j = A_j / 127, inv_j =
 * 127 / A_j (0 when A_j is 0), q_jgi = (w_ji * d_ig) * inv_j (two rounded
 * multiplies, in that order) rounded to nearest even and held to [-127,
 * 127], I_e = sum_i q_jgi v_ie (exact, v the signed code: the int8 of
 * q8_0, the nibble - 8 of q4_0), F_je = fmaf(s_j, (float)I_e, F_je) block
 * after block from 0; then acc[j*astride + e] += F_je. One scale per
 * weight row and block for all column blocks, as kivi_qaxpy (until
 * session 45 one per (j, g)). A variant may form A_j as max_i |w_ji|
 * max_g |d_ig| (the same float: rounding is monotonic). The rounding adds
 * at most A_j / 254 per row and code unit. The AVX-512 twin (VNNI + VBMI)
 * and the AVX2 one (+ FMA + F16C: VPMADDUBSW for q4_0, VPMADDWD for q8_0;
 * D a multiple of 32 up to 512, else the reference) return the
 * reference's bits for finite inputs. */
void vq_qaxpy8_ref(int bits, const uint8_t *codes, size_t rstride, size_t nt, size_t D, const float *w,
                   size_t wstride, int n_q, float *acc, size_t astride);
void vq_qaxpy8_avx2(int bits, const uint8_t *codes, size_t rstride, size_t nt, size_t D, const float *w,
                    size_t wstride, int n_q, float *acc, size_t astride);
void vq_qaxpy8_avx512x(int bits, const uint8_t *codes, size_t rstride, size_t nt, size_t D, const float *w,
                       size_t wstride, int n_q, float *acc, size_t astride);

#endif
