/* ops.h -- float kernels of the forward pass: RMSNorm, RoPE, activations,
 * softmax. (Dot products and weighted sums of rows -- attention -- are the
 * kernel layer's dense kernels: kernels/kernels.h.)
 * All take caller-owned buffers and never allocate. The scalar versions
 * (suffix _ref) are the references the SIMD ones are tested against. */
#ifndef VQ_MODEL_OPS_H
#define VQ_MODEL_OPS_H

#include <stddef.h>

/* y = x / rms(x) * w  (w NULL: no weight), rms = sqrt(mean(x^2) + eps).
 * y may equal x. */
void vq_rmsnorm(float *y, const float *x, const float *w, size_t n, float eps);

/* Rotary position embedding of one head of d values at position pos, in
 * place. inv_freq[i] (i < d/2) = 1 / (base^(2i/d) * freq_factor_i) * scale,
 * precomputed by the caller. neox = 0: pairs (x[2i], x[2i+1]) ("normal",
 * the llama GGUF layout); neox = 1: pairs (x[i], x[i + d/2]). */
void vq_rope(float *x, size_t d, int pos, const float *inv_freq, int neox);
/* The same in two steps, so one position's angles serve every head:
 * vq_rope_angles fills cs[i] = cos, cs[d/2 + i] = sin of pos * inv_freq[i]
 * (i < d/2, computed exactly as vq_rope does; the layout of a row of
 * kernels/rope.h's tables); vq_rope_apply rotates x with them, through the
 * kernel table's rope_pairs when d/2 is a multiple of 16, else its scalar
 * reference (every variant has the reference's bits). vq_rope_apply(x, d, cs, neox) after
 * vq_rope_angles(cs, d, pos, inv_freq) gives bit-identical results to
 * vq_rope(x, d, pos, inv_freq, neox). */
void vq_rope_angles(float *cs, size_t d, int pos, const float *inv_freq);
void vq_rope_apply(float *x, size_t d, const float *cs, int neox);


/* In place: x = softmax(x); returns nothing, x must have n >= 1. */
void vq_softmax(float *x, size_t n);

#endif
