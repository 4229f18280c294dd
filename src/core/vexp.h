/* vexp.h -- softmax numerators over a row: x[i] <- exp(x[i] - m), with
 * x[i] = -inf giving 0; returns the sum of the new x[i]. The caller keeps
 * x[i] <= m (m the row's running maximum), so no result overflows.
 *
 * vq_exp_shift_ref uses expf (the reference); vq_exp_shift_avx2
 * (vexp_avx2.c) evaluates a degree-6 polynomial after range reduction
 * (relative error below 4e-7 for arguments in [-87, 0]; arguments below
 * -87.3, where expf is subnormal, give 0). vq_exp_shift dispatches. */
#ifndef VQ_CORE_VEXP_H
#define VQ_CORE_VEXP_H

#include <stddef.h>

float vq_exp_shift_ref(float *x, size_t n, float m);
float vq_exp_shift_avx2(float *x, size_t n, float m);
float vq_exp_shift(float *x, size_t n, float m);

#endif
