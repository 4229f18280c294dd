/* ops.c -- scalar float kernels of the forward pass (see ops.h). */
#include "model/ops.h"

#include "core/vexp.h"
#include "kernels/kernels.h"

#include <math.h>

void vq_rmsnorm(float *y, const float *x, const float *w, size_t n, float eps)
{
    /* four running sums (each square is exact in double): one sum's chain
     * of dependent adds cost ~4 cycles an element, 2k+ cycles for a 576-wide
     * row, twice per layer, on the decode step's serial path */
    double s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    size_t i4 = 0;
    for (; i4 + 4 <= n; i4 += 4) {
        s0 += (double)x[i4] * x[i4];
        s1 += (double)x[i4 + 1] * x[i4 + 1];
        s2 += (double)x[i4 + 2] * x[i4 + 2];
        s3 += (double)x[i4 + 3] * x[i4 + 3];
    }
    double ss = (s0 + s1) + (s2 + s3);
    for (size_t i = i4; i < n; i++)
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
    const size_t half = d / 2;
    for (size_t i = 0; i < half; i++) {
        double th = (double)pos * (double)inv_freq[i];
        cs[i] = (float)cos(th);
        cs[half + i] = (float)sin(th);
    }
}

void vq_rope_apply(float *x, size_t d, const float *cs, int neox)
{
    /* rope.h: two products, then one add or subtract; the SIMD variants
     * take half a multiple of 16, the scalar reference any half */
    const size_t half = d / 2;
    if (half % 16 == 0)
        vq_kernels_get()->rope_pairs(x, cs, half, neox, 1.0f);
    else
        vq_rope_pairs_ref(x, cs, half, neox, 1.0f);
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
