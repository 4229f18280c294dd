/* kmeans.h -- k-means clustering for product-quantization codebooks.
 *
 * vq_kmeans clusters n points of dimension d (point i at x + i*stride,
 * stride >= d floats) into k centroids (k*d floats at centroids, row-major).
 * Initialisation: k-means++ (Arthur & Vassilvitskii, 2007), drawn from a
 * vq_rng seeded with `seed`; then exactly `iters` Lloyd iterations (assign
 * each point to its nearest centroid, move each centroid to the mean of its
 * points). An empty cluster takes the point farthest from its centroid.
 * Fully deterministic: same inputs and seed, same centroids.
 * With n < k the extra centroids duplicate points (they are never nearest
 * to anything, since ties go to the lowest index).
 * Sums run in double. Errors: VQ_ERR_INVALID_ARG (n, k or d zero),
 * VQ_ERR_NOMEM; messages go to err (may be NULL). */
#ifndef VQ_CODEC_KMEANS_H
#define VQ_CODEC_KMEANS_H

#include <stddef.h>
#include <stdint.h>

#include "core/error.h"

vq_status vq_kmeans(const float *x, size_t n, size_t stride, int d, int k, int iters,
                    uint64_t seed, float *centroids, char *err);

/* Index of the centroid nearest to p (squared L2; ties to the lowest
 * index; a NaN point gives 0). */
int vq_kmeans_nearest(const float *centroids, int k, int d, const float *p);

#endif
