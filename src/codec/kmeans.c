/* kmeans.c -- k-means++ initialisation and Lloyd iterations (see kmeans.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "codec/kmeans.h"
#include "core/rng.h"
#include "kernels/kernels.h"

static inline float dist2(const float *a, const float *b, int d)
{
    float s = 0.0f;
    for (int i = 0; i < d; i++) {
        float t = a[i] - b[i];
        s += t * t;
    }
    return s;
}

int vq_kmeans_nearest(const float *centroids, int k, int d, const float *p)
{
    if (d == 8) /* the same index from the kernel table (kernels/nearest8.h: the same sums) */
        return vq_kernels_get()->nearest8(centroids, (size_t)k, p);
    int best = 0;
    float bd = dist2(centroids, p, d);
    for (int j = 1; j < k; j++) {
        float t = dist2(centroids + (size_t)j * d, p, d);
        if (t < bd) {
            bd = t;
            best = j;
        }
    }
    return best;
}

/* k-means++: first centroid uniform, each next one drawn with probability
 * proportional to the squared distance to the nearest chosen centroid. */
static void kmeanspp(const float *x, size_t n, size_t stride, int d, int k, vq_rng *r,
                     float *cent, double *mind)
{
    size_t first = (size_t)(vq_rng_next(r) % n);
    memcpy(cent, x + first * stride, (size_t)d * sizeof(float));
    for (size_t i = 0; i < n; i++)
        mind[i] = dist2(x + i * stride, cent, d);
    for (int j = 1; j < k; j++) {
        double total = 0;
        for (size_t i = 0; i < n; i++)
            total += mind[i];
        size_t pick = 0;
        if (!(total > 0)) {
            pick = (size_t)(vq_rng_next(r) % n); /* every point is a centroid already */
        } else {
            double u = (double)(vq_rng_next(r) >> 11) * (1.0 / 9007199254740992.0) * total, acc = 0;
            pick = n - 1;
            for (size_t i = 0; i < n; i++) {
                acc += mind[i];
                if (acc > u) {
                    pick = i;
                    break;
                }
            }
        }
        float *cj = cent + (size_t)j * d;
        memcpy(cj, x + pick * stride, (size_t)d * sizeof(float));
        for (size_t i = 0; i < n; i++) {
            double t = dist2(x + i * stride, cj, d);
            if (t < mind[i])
                mind[i] = t;
        }
    }
}

vq_status vq_kmeans(const float *x, size_t n, size_t stride, int d, int k, int iters,
                    uint64_t seed, float *centroids, char *err)
{
    if (n == 0 || k <= 0 || d <= 0 || stride < (size_t)d)
        return vq_fail(err, VQ_ERR_INVALID_ARG, "kmeans: %zu points, k=%d, d=%d", n, k, d);
    double *mind = malloc(n * sizeof(double));
    double *sum = malloc((size_t)k * d * sizeof(double));
    size_t *cnt = malloc((size_t)k * sizeof(size_t));
    int *asg = malloc(n * sizeof(int));
    if (!mind || !sum || !cnt || !asg) {
        free(mind); free(sum); free(cnt); free(asg);
        return vq_fail(err, VQ_ERR_NOMEM, "kmeans: out of memory (%zu points, k=%d)", n, k);
    }
    vq_rng r;
    vq_rng_seed(&r, seed);
    kmeanspp(x, n, stride, d, k, &r, centroids, mind);
    for (int it = 0; it < iters; it++) {
        memset(sum, 0, (size_t)k * d * sizeof(double));
        memset(cnt, 0, (size_t)k * sizeof(size_t));
        for (size_t i = 0; i < n; i++) {
            const float *p = x + i * stride;
            int j = vq_kmeans_nearest(centroids, k, d, p);
            asg[i] = j;
            mind[i] = dist2(p, centroids + (size_t)j * d, d);
            cnt[j]++;
            for (int t = 0; t < d; t++)
                sum[(size_t)j * d + t] += p[t];
        }
        for (int j = 0; j < k; j++) {
            float *cj = centroids + (size_t)j * d;
            if (cnt[j] > 0) {
                for (int t = 0; t < d; t++)
                    cj[t] = (float)(sum[(size_t)j * d + t] / (double)cnt[j]);
                continue;
            }
            /* empty: take the worst-served point (then mark it served) */
            size_t far = 0;
            for (size_t i = 1; i < n; i++)
                if (mind[i] > mind[far])
                    far = i;
            memcpy(cj, x + far * stride, (size_t)d * sizeof(float));
            mind[far] = 0;
        }
    }
    free(mind); free(sum); free(cnt); free(asg);
    return VQ_OK;
}
