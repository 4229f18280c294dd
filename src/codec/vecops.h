/* vecops.h -- the plain float loops that the scalar (reference) kernels of
 * several codecs share: a token decoded (or staged) into floats is scored
 * with a dot product and accumulated with an axpy; encoders take the norm.
 * Each is the loop in index order, so a kernel written with them computes
 * exactly what its open-coded loop did. */
#ifndef VQ_CODEC_VECOPS_H
#define VQ_CODEC_VECOPS_H

#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

/* sum_i a[i] * b[i], in index order, float accumulator */
static inline float vq_vec_dot(const float *a, const float *b, size_t n)
{
    float s = 0.0f;
    for (size_t i = 0; i < n; i++)
        s += a[i] * b[i];
    return s;
}

/* y[i] += a * x[i] */
static inline void vq_vec_axpy(float a, const float *x, size_t n, float *y)
{
    for (size_t i = 0; i < n; i++)
        y[i] += a * x[i];
}

/* ||x|| with a double accumulator, rounded to float */
static inline float vq_vec_norm(const float *x, size_t n)
{
    double s = 0.0;
    for (size_t i = 0; i < n; i++)
        s += (double)x[i] * x[i];
    return (float)sqrt(s);
}

/* a malloc'd copy of n floats, or NULL when out of memory */
static inline float *vq_vec_dup(const float *x, size_t n)
{
    float *y = malloc((n ? n : 1) * sizeof *y);
    if (y && n)
        memcpy(y, x, n * sizeof *y);
    return y;
}

#endif
