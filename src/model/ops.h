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

/* Attention inner loops over n rows of d floats (rows contiguous):
 *   vq_vdot_rows:  out[j] = scale * vq_vdot(q, K + j*d, d)  for j < n;
 *   vq_vaxpy_rows: y += sum_j p[j] * V[j*d..], applied for j = 0, 1, ...
 *                  in order, each step as vq_vaxpy(y, p[j], V + j*d, d).
 * Results are bit-identical to those per-row calls of the same ISA (same
 * operation order); the SIMD versions only avoid the per-row call and, for
 * vaxpy, keep y in registers. */
void vq_vdot_rows(const float *q, const float *K, size_t n, size_t d, float scale, float *out);
void vq_vdot_rows_ref(const float *q, const float *K, size_t n, size_t d, float scale, float *out);
void vq_vaxpy_rows(float *y, const float *p, const float *V, size_t n, size_t d);
void vq_vaxpy_rows_ref(float *y, const float *p, const float *V, size_t n, size_t d);

/* AVX2 variants (ops_avx2.c); call only when vq_cpu_features() has AVX2. */
float vq_vdot_avx2(const float *a, const float *b, size_t n);
void vq_vaxpy_avx2(float *y, float a, const float *x, size_t n);
void vq_vdot_rows_avx2(const float *q, const float *K, size_t n, size_t d, float scale, float *out);
void vq_vaxpy_rows_avx2(float *y, const float *p, const float *V, size_t n, size_t d);

/* y = x / rms(x) * w  (w NULL: no weight), rms = sqrt(mean(x^2) + eps).
 * y may equal x. */
void vq_rmsnorm(float *y, const float *x, const float *w, size_t n, float eps);

/* Rotary position embedding of one head of d values at position pos, in
 * place. inv_freq[i] (i < d/2) = 1 / (base^(2i/d) * freq_factor_i) * scale,
 * precomputed by the caller. neox = 0: pairs (x[2i], x[2i+1]) ("normal",
 * the llama GGUF layout); neox = 1: pairs (x[i], x[i + d/2]). */
void vq_rope(float *x, size_t d, int pos, const float *inv_freq, int neox);
/* The same in two steps, so one position's angles serve every head:
 * vq_rope_angles fills cs[2i] = cos, cs[2i+1] = sin of pos * inv_freq[i]
 * (i < d/2, computed exactly as vq_rope does); vq_rope_apply rotates x with
 * them. vq_rope_apply(x, d, cs, neox) after vq_rope_angles(cs, d, pos,
 * inv_freq) gives bit-identical results to vq_rope(x, d, pos, inv_freq, neox). */
void vq_rope_angles(float *cs, size_t d, int pos, const float *inv_freq);
void vq_rope_apply(float *x, size_t d, const float *cs, int neox);

float vq_silu(float x);
/* GELU, tanh approximation (as Gemma's gelu_pytorch_tanh). */
float vq_gelu_tanh(float x);

/* In place: x = softmax(x); returns nothing, x must have n >= 1. */
void vq_softmax(float *x, size_t n);

#endif
