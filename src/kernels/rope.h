/* rope.h -- the RoPE turn of one vector by a table row (prerope scoring,
 * cache/prerope.c).
 *
 * rope_pairs(x, cs, half, neox, sgn): x holds 2*half floats; pair i is
 * (x[i], x[i + half]) when neox, else (x[2i], x[2i + 1]); cs holds the
 * row's half cosines, then its half sines. Each pair (a, b) becomes
 *   (a*c - b*s, a*s + b*c)  with c = cs[i], s = sgn * cs[half + i],
 * sgn = 1 (forward) or -1 (backward), in that order of operations (two
 * products, then one subtraction or addition; no fused multiply-add), so
 * every variant has the reference's bits. half is a multiple of 16. */
#ifndef VQ_KERNELS_ROPE_H
#define VQ_KERNELS_ROPE_H

#include <stddef.h>

void vq_rope_pairs_ref(float *x, const float *cs, size_t half, int neox, float sgn);
void vq_rope_pairs_avx512(float *x, const float *cs, size_t half, int neox, float sgn);

#endif
