/* hadamard.h -- fast Walsh-Hadamard transform.
 *
 * vq_fwht(x, n): in place, x <- H_n x / sqrt(n) (orthonormal, so it is its
 * own inverse) for n a power of two. For n = 3 * 2^k (head_dim 96, 192) the
 * transform is block-diagonal: three orthonormal 2^k transforms on
 * consecutive thirds; it is still orthonormal and self-inverse.
 * vq_fwht_supported(n) says whether n is one of those sizes. */
#ifndef VQ_CORE_HADAMARD_H
#define VQ_CORE_HADAMARD_H

#include <stddef.h>

int vq_fwht_supported(size_t n);
void vq_fwht(float *x, size_t n);

#endif
