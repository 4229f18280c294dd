/* vexp.h -- softmax numerators over a row: x[i] <- exp(x[i]*sc - m), with
 * x[i] = -inf giving 0; returns the sum of the new x[i]. sc > 0 scales the
 * raw scores on the way (the product rounded to float, then m subtracted:
 * with sc = 1 the plain shift); the caller keeps x[i]*sc <= m (m the
 * row's running maximum of the scaled scores), so no result overflows.
 *
 * vq_exp_shift_ref uses expf and sums left to right (the reference);
 * the twins (vexp_avx2.c, vexp_avx512.c) evaluate a degree-6 polynomial
 * after range reduction (relative error below 4e-7 for arguments in
 * [-87, 0]; arguments below -87.3, where expf is subnormal, give 0) and
 * sum in 16 lanes (lane k: the x[i] with i % 16 == k, in order) reduced by
 * vq_sum16_lanes, so both twins return the same bits and a row's sum does
 * not change when masked (-inf) slots follow it. vq_exp_shift dispatches.
 *
 * vq_row_max: the largest x[i] (NaNs ignored), -inf for n = 0. */
#ifndef VQ_CORE_VEXP_H
#define VQ_CORE_VEXP_H

#include <stddef.h>

float vq_exp_shift_ref(float *x, size_t n, float sc, float m);
float vq_exp_shift_avx2(float *x, size_t n, float sc, float m);
float vq_exp_shift_avx512(float *x, size_t n, float sc, float m);
float vq_exp_shift(float *x, size_t n, float sc, float m);

float vq_row_max_ref(const float *x, size_t n);
float vq_row_max_avx2(const float *x, size_t n);
float vq_row_max_avx512(const float *x, size_t n);
float vq_row_max(const float *x, size_t n);

/* ((l0+l8) + (l4+l12)) + ... : the fixed tree of the twins' lane sums */
static inline float vq_sum16_lanes(const float l[16])
{
    float a[8], b[4], c[2];
    for (int k = 0; k < 8; k++)
        a[k] = l[k] + l[k + 8];
    for (int k = 0; k < 4; k++)
        b[k] = a[k] + a[k + 4];
    for (int k = 0; k < 2; k++)
        c[k] = b[k] + b[k + 2];
    return c[0] + c[1];
}

#endif
