/* ops.h -- float kernels of the forward pass: vector dot/axpy (with AVX2
 * variants behind run-time dispatch), RMSNorm, RoPE, activations, softmax.
 * All take caller-owned buffers and never allocate. The scalar versions
 * (suffix _ref) are the references the SIMD ones are tested against. */
#ifndef VQ_MODEL_OPS_H
#define VQ_MODEL_OPS_H

#include <stddef.h>

/* sum a[i]*b[i] */
float vq_vdot(const float *a, const float *b, size_t n);
float vq_vdot_ref(const float *a, const float *b, size_t n);
/* y[i] += a * x[i] */
void vq_vaxpy(float *y, float a, const float *x, size_t n);
void vq_vaxpy_ref(float *y, float a, const float *x, size_t n);

/* AVX2 variants (ops_avx2.c); call only when vq_cpu_features() has AVX2. */
float vq_vdot_avx2(const float *a, const float *b, size_t n);
void vq_vaxpy_avx2(float *y, float a, const float *x, size_t n);

/* y = x / rms(x) * w  (w NULL: no weight), rms = sqrt(mean(x^2) + eps).
 * y may equal x. */
void vq_rmsnorm(float *y, const float *x, const float *w, size_t n, float eps);

/* Rotary position embedding of one head of d values at position pos, in
 * place. inv_freq[i] (i < d/2) = 1 / (base^(2i/d) * freq_factor_i) * scale,
 * precomputed by the caller. neox = 0: pairs (x[2i], x[2i+1]) ("normal",
 * the llama GGUF layout); neox = 1: pairs (x[i], x[i + d/2]). */
void vq_rope(float *x, size_t d, int pos, const float *inv_freq, int neox);

float vq_silu(float x);
/* GELU, tanh approximation (as Gemma's gelu_pytorch_tanh). */
float vq_gelu_tanh(float x);

/* In place: x = softmax(x); returns nothing, x must have n >= 1. */
void vq_softmax(float *x, size_t n);

#endif
