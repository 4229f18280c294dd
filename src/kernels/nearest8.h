/* nearest8.h -- the nearest of k centroids of 8 floats to a point: the
 * encode step of product quantization with 8-dimensional pieces
 * (VecInfer's codebooks, k-means' assignments).
 *
 * vq_nearest8(cent, k, p): centroid j is cent[8j .. 8j+8); its distance is
 * sum_d (cent[8j+d] - p[d])^2 in float, d in order from 0, each square
 * rounded before its add (no fused multiply-add); returns the lowest j of
 * the smallest distance (strictly smaller replaces): a NaN distance never
 * wins, and a NaN or +inf distance of centroid 0 keeps 0 when none is
 * smaller. Every variant returns the reference's index. k >= 1. */
#ifndef VQ_KERNELS_NEAREST8_H
#define VQ_KERNELS_NEAREST8_H

#include <stddef.h>

/* the distance of centroid c to p, in the order above */
static inline float vq_dist8(const float *c, const float *p)
{
    float s = 0.0f;
    for (int d = 0; d < 8; d++) {
        const float t = c[d] - p[d], sq = t * t; /* two statements: never contracted into an FMA */
        s += sq;
    }
    return s;
}

int vq_nearest8_ref(const float *cent, size_t k, const float *p);
/* AVX2: eight centroids per step, their rows transposed to lanes, so that
 * each lane sums its distance in the reference's order */
int vq_nearest8_avx2(const float *cent, size_t k, const float *p);

#endif
