/* glu.h -- the gated products of a feed-forward block:
 *
 * vq_silu_mul(g, u, n): g[i] <- silu(g[i]) * u[i] for i < n, silu(x) =
 * x / (1 + exp(-x)) (SwiGLU);
 * vq_gelu_mul(g, u, n): g[i] <- gelu(g[i]) * u[i], gelu the tanh form
 * 0.5 x (1 + tanh(k (x + 0.044715 x^3))), k = sqrt(2/pi) (GeGLU, Gemma's
 * gelu_pytorch_tanh), which is x * sigmoid(2 k (x + 0.044715 x^3)).
 *
 * _ref are the references: silu by expf, then the division, then the
 * product; gelu by tanhf in the form above, then the product. The AVX-512
 * twins (and the AVX2 ones, on 8 lanes with core/vexp_avx2.h: the same
 * bits) evaluate x * sigmoid(z) (z = x, or the 2k(...) above) with
 * e = exp(-|z|) from core/vexp_avx512.h (relative error below 4e-7; 0 for
 * |z| > 87.3): x / (1 + e) for z >= 0, x * e / (1 + e) below (no
 * overflowing exp), then the product. silu: within 2e-6 of the reference
 * relative to the result; gelu: within 2e-6 relative plus 1e-7 of
 * |g * u| (the reference's 1 + tanh loses digits where tanh nears -1)
 * (tests/test_kernels.c). Any n; no allocation. */
#ifndef VQ_KERNELS_GLU_H
#define VQ_KERNELS_GLU_H

#include <stddef.h>

void vq_silu_mul_ref(float *g, const float *u, size_t n);
void vq_silu_mul_avx2(float *g, const float *u, size_t n);
void vq_silu_mul_avx512(float *g, const float *u, size_t n);
void vq_gelu_mul_ref(float *g, const float *u, size_t n);
void vq_gelu_mul_avx2(float *g, const float *u, size_t n);
void vq_gelu_mul_avx512(float *g, const float *u, size_t n);

#endif
