/* halves.h -- a per-token IEEE half field (a norm, a correction) of a run
 * of code blocks as floats, converted in one batch by the kernel table's
 * fp16_row: exact, so each float equals vq_fp16_to_fp32 of its half. */
#ifndef VQ_CODEC_HALVES_H
#define VQ_CODEC_HALVES_H

#include <stddef.h>
#include <stdint.h>

#include "kernels/kernels.h"

#define VQ_HALVES_BATCH 64 /* the most blocks one call converts */

/* out[i] = the half (little-endian) at base + i*stride, i < n <= VQ_HALVES_BATCH */
static inline void vq_halves_strided(const vq_kernels *k, const uint8_t *base, size_t stride, size_t n, float *out)
{
    uint8_t h[2 * VQ_HALVES_BATCH] = { 0 }; /* (zeroed: gcc -O1 cannot see that n >= 1 fills what is read) */
    for (size_t i = 0; i < n; i++)
        h[2 * i] = base[i * stride], h[2 * i + 1] = base[i * stride + 1];
    k->fp16_row(h, out, n);
}

#endif
