/* tail_rows.h -- the last rows of a batch (fewer than a kernel's group)
 * copied side by side into a zeroed block, so that the SIMD scorers that
 * load whole groups of rows (units8_avx2.h, units16_avx512.h) read only
 * the rows' own bytes and find zeros in the lanes past them. Plain C:
 * included by the AVX2 and AVX-512 twins alike. */
#ifndef VQ_KERNELS_TAIL_ROWS_H
#define VQ_KERNELS_TAIL_ROWS_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* for t < have, k < n_sets: the nbytes at p + t*stride + offs[k] to
 * tail + (slots*t + k)*nbytes (slots >= n_sets); every other byte of
 * tail[0 .. group*slots*nbytes) zero (have <= group) */
static inline void vq_tail_rows(uint8_t *tail, size_t group, size_t slots, const uint8_t *p, size_t stride,
                                size_t have, const size_t *offs, int n_sets, size_t nbytes)
{
    memset(tail, 0, group * slots * nbytes);
    for (size_t t = 0; t < have; t++)
        for (int k = 0; k < n_sets; k++)
            memcpy(tail + (slots * t + (size_t)k) * nbytes, p + t * stride + offs[k], nbytes);
}

#endif
