/* fwht_blocks.h -- the shapes a SIMD fwht (kernels/fwht.h) takes: one
 * power-of-two block, or three of them (core/hadamard.h), each through
 * pow2, which transforms x in place and returns 1 for the sizes it has, 0
 * (x untouched) for the others; any other n goes to the reference. */
#ifndef VQ_KERNELS_FWHT_BLOCKS_H
#define VQ_KERNELS_FWHT_BLOCKS_H

#include <stddef.h>

#include "core/hadamard.h"

static inline void vq_fwht_blocks(float *x, size_t n, int (*pow2)(float *, size_t))
{
    if (pow2(x, n))
        return;
    const size_t m = n / 3;
    if (n % 3 == 0 && pow2(x, m)) {
        pow2(x + m, m);
        pow2(x + 2 * m, m);
        return;
    }
    vq_fwht(x, n);
}

#endif
