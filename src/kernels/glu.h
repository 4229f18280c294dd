/* glu.h -- the SwiGLU product of a feed-forward block:
 *
 * vq_silu_mul(g, u, n): g[i] <- silu(g[i]) * u[i] for i < n, silu(x) =
 * x / (1 + exp(-x)).
 *
 * _ref is the reference: expf, then the division, then the product, in
 * that order. The AVX-512 twin takes e = exp(-|x|) from core/vexp_avx512.h
 * (relative error below 4e-7; 0 for |x| > 87.3), then x / (1 + e) for
 * x >= 0 and x * e / (1 + e) below (the same function without an
 * overflowing exp), then the product: within 2e-6 of the reference
 * relative to |silu(x) * u| for finite inputs (tests/test_kernels.c).
 * Any n; no allocation. */
#ifndef VQ_KERNELS_GLU_H
#define VQ_KERNELS_GLU_H

#include <stddef.h>

void vq_silu_mul_ref(float *g, const float *u, size_t n);
void vq_silu_mul_avx512(float *g, const float *u, size_t n);

#endif
