/* ops.c -- scalar float kernels of the forward pass (see ops.h). */
#include "model/ops.h"

#include "core/vexp.h"

#include <math.h>

void vq_rmsnorm(float *y, const float *x, const float *w, size_t n, float eps)
{
    double ss = 0;
    for (size_t i = 0; i < n; i++)
        ss += (double)x[i] * x[i];
    float r = (float)(1.0 / sqrt(ss / (double)n + (double)eps));
    if (w)
        for (size_t i = 0; i < n; i++)
            y[i] = x[i] * r * w[i];
    else
        for (size_t i = 0; i < n; i++)
            y[i] = x[i] * r;
}

void vq_rope_angles(float *cs, size_t d, int pos, const float *inv_freq)
{
    for (size_t i = 0; i < d / 2; i++) {
        double th = (double)pos * (double)inv_freq[i];
        cs[2 * i] = (float)cos(th);
        cs[2 * i + 1] = (float)sin(th);
    }
}

void vq_rope_apply(float *x, size_t d, const float *cs, int neox)
{
    size_t half = d / 2;
    for (size_t i = 0; i < half; i++) {
        float c = cs[2 * i], s = cs[2 * i + 1];
        size_t i0 = neox ? i : 2 * i;
        size_t i1 = neox ? i + half : 2 * i + 1;
        float a = x[i0], b = x[i1];
        x[i0] = a * c - b * s;
        x[i1] = a * s + b * c;
    }
}

void vq_rope(float *x, size_t d, int pos, const float *inv_freq, int neox)
{
    size_t half = d / 2;
    for (size_t i = 0; i < half; i++) {
        double th = (double)pos * (double)inv_freq[i];
        float c = (float)cos(th), s = (float)sin(th);
        size_t i0 = neox ? i : 2 * i;
        size_t i1 = neox ? i + half : 2 * i + 1;
        float a = x[i0], b = x[i1];
        x[i0] = a * c - b * s;
        x[i1] = a * s + b * c;
    }
}

void vq_softmax(float *x, size_t n)
{
    float s = vq_exp_shift(x, n, 1.0f, vq_row_max(x, n)); /* core/vexp.h: SIMD */
    float inv = 1.0f / s;
    for (size_t i = 0; i < n; i++)
        x[i] *= inv;
}
