/* fwht.h -- the pieces of the randomized Hadamard rotation
 * (codec/rotation.h) as kernels: every variant returns the reference's
 * bits.
 *
 * fwht(x, n): core/hadamard.h vq_fwht, in place. Each output is the same
 * chain of additions and subtractions in every variant (the stages are
 * elementwise: a vector stage does per lane what the scalar loop does),
 * then one multiply by 1/sqrt(n), so the floats are equal bit for bit.
 * flip_signs(x, bits, n): x[i] = -x[i] where bit i of bits (LSB first,
 * core/bitstream.h) is set, for i < n (a sign flip: exact). */
#ifndef VQ_KERNELS_FWHT_H
#define VQ_KERNELS_FWHT_H

#include <stddef.h>
#include <stdint.h>

void vq_flip_signs_ref(float *x, const uint8_t *bits, size_t n);
/* AVX2 (AVX-512F): n a power of two from 8 (16) to 512, or three of them
 * (else the reference) */
void vq_fwht_avx2(float *x, size_t n);
void vq_flip_signs_avx2(float *x, const uint8_t *bits, size_t n);
void vq_fwht_avx512(float *x, size_t n);
void vq_flip_signs_avx512(float *x, const uint8_t *bits, size_t n);

#endif
