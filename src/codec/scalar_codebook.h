/* scalar_codebook.h -- Lloyd-Max scalar quantizers fitted to samples.
 *
 * vq_scalar_codebook_fit: the k-level scalar quantizer that (locally)
 * minimises the mean squared error on n empirical samples: Lloyd's
 * algorithm (Lloyd 1957/1982; Max 1960) in one dimension, run exactly on
 * the sorted samples: thresholds at midpoints of adjacent levels, each level
 * the mean of the samples in its cell (prefix sums, O(k log n) per
 * iteration). Starts from the quantiles (i + 1/2)/k; stops after `iters`
 * iterations or when no level moves. Levels come out non-decreasing. An
 * empty cell keeps its level. Samples must be finite (NaN/inf refused).
 * Errors: VQ_ERR_INVALID_ARG (n == 0, k < 1 or > 4096, non-finite sample),
 * VQ_ERR_NOMEM. Messages go to err (may be NULL).
 * (Distinct from lloyd_max.c, which fits analytic densities.) */
#ifndef VQ_CODEC_SCALAR_CODEBOOK_H
#define VQ_CODEC_SCALAR_CODEBOOK_H

#include <stddef.h>

#include "core/error.h"

vq_status vq_scalar_codebook_fit(const float *x, size_t n, int k, int iters, float *levels, char *err);

/* Index of the level nearest to v (levels non-decreasing, k >= 1): the
 * number of midpoints 0.5f * (levels[m] + levels[m + 1]) that v is above
 * (they are non-decreasing, so those form a prefix), found by binary
 * search; k a power of two (every codec's codebook) without branches on v
 * (a step of `half` taken by a select), others with. NaN gives 0. */
static inline int vq_scalar_codebook_nearest(const float *levels, int k, float v)
{
    if ((k & (k - 1)) == 0) {
        int lo = 0;
        for (int half = k >> 1; half >= 1; half >>= 1) {
            const int m = lo + half - 1; /* is the answer above m? */
            lo += v > 0.5f * (levels[m] + levels[m + 1]) ? half : 0;
        }
        return lo;
    }
    int lo = 0, hi = k - 1; /* answer in [lo, hi] */
    while (lo < hi) {
        int mid = (lo + hi) / 2;
        /* v above the midpoint of levels mid, mid+1 -> answer > mid */
        if (v > 0.5f * (levels[mid] + levels[mid + 1]))
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

#endif
