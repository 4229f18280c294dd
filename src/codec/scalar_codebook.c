/* scalar_codebook.c -- Lloyd-Max on empirical samples (scalar_codebook.h). */
#include <math.h>
#include <stdlib.h>

#include "codec/scalar_codebook.h"

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* number of sorted samples <= t */
static size_t count_le(const double *s, size_t n, double t)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (s[mid] <= t)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

vq_status vq_scalar_codebook_fit(const float *x, size_t n, int k, int iters, float *levels, char *err)
{
    if (n == 0 || k < 1 || k > 4096)
        return vq_fail(err, VQ_ERR_INVALID_ARG, "scalar codebook: %zu samples, %d levels", n, k);
    double *s = malloc(n * sizeof(double));
    double *pre = malloc((n + 1) * sizeof(double));
    double *lv = malloc((size_t)k * sizeof(double));
    size_t *cut = malloc(((size_t)k + 1) * sizeof(size_t));
    if (!s || !pre || !lv || !cut) {
        free(s); free(pre); free(lv); free(cut);
        return vq_fail(err, VQ_ERR_NOMEM, "scalar codebook: out of memory (%zu samples)", n);
    }
    vq_status st = VQ_OK;
    for (size_t i = 0; i < n; i++) {
        if (!isfinite(x[i])) {
            st = vq_fail(err, VQ_ERR_INVALID_ARG, "scalar codebook: sample %zu is not finite", i);
            goto done;
        }
        s[i] = x[i];
    }
    qsort(s, n, sizeof *s, cmp_double);
    pre[0] = 0;
    for (size_t i = 0; i < n; i++)
        pre[i + 1] = pre[i] + s[i];
    for (int j = 0; j < k; j++) {
        size_t idx = (size_t)(((double)j + 0.5) / k * (double)n);
        lv[j] = s[idx < n ? idx : n - 1];
    }
    for (int it = 0; it < iters; it++) {
        cut[0] = 0;
        cut[k] = n;
        for (int j = 0; j + 1 < k; j++)
            cut[j + 1] = count_le(s, n, 0.5 * (lv[j] + lv[j + 1]));
        int moved = 0;
        for (int j = 0; j < k; j++) {
            size_t a = cut[j], b = cut[j + 1];
            if (b <= a)
                continue;
            double m = (pre[b] - pre[a]) / (double)(b - a);
            moved |= m != lv[j];
            lv[j] = m;
        }
        if (!moved)
            break;
    }
    for (int j = 0; j < k; j++) /* cell means of sorted cells are ordered */
        levels[j] = (float)lv[j];
    for (int j = 1; j < k; j++)
        if (levels[j] < levels[j - 1])
            levels[j] = levels[j - 1];
done:
    free(s); free(pre); free(lv); free(cut);
    return st;
}
