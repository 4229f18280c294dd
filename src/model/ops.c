/* ops.c -- scalar float kernels of the forward pass (see ops.h). */
#include "model/ops.h"

#include <math.h>

#include "core/cpu.h"

float vq_vdot_ref(const float *a, const float *b, size_t n)
{
    /* 8 independent partial sums: vectorisable and less rounding drift */
    float s[8] = { 0 };
    size_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (int u = 0; u < 8; u++)
            s[u] += a[i + u] * b[i + u];
    float t = 0;
    for (; i < n; i++)
        t += a[i] * b[i];
    return ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7])) + t;
}

void vq_vaxpy_ref(float *y, float a, const float *x, size_t n)
{
    for (size_t i = 0; i < n; i++)
        y[i] += a * x[i];
}

float vq_vdot(const float *a, const float *b, size_t n)
{
    if (vq_cpu_features() & VQ_CPU_AVX2)
        return vq_vdot_avx2(a, b, n);
    return vq_vdot_ref(a, b, n);
}

void vq_vaxpy(float *y, float a, const float *x, size_t n)
{
    if (vq_cpu_features() & VQ_CPU_AVX2)
        vq_vaxpy_avx2(y, a, x, n);
    else
        vq_vaxpy_ref(y, a, x, n);
}

void vq_vdot_rows_ref(const float *q, const float *K, size_t n, size_t d, float scale, float *out)
{
    for (size_t j = 0; j < n; j++)
        out[j] = scale * vq_vdot_ref(q, K + j * d, d);
}

void vq_vaxpy_rows_ref(float *y, const float *p, const float *V, size_t n, size_t d)
{
    for (size_t j = 0; j < n; j++)
        vq_vaxpy_ref(y, p[j], V + j * d, d);
}

void vq_vdot_rows(const float *q, const float *K, size_t n, size_t d, float scale, float *out)
{
    if (vq_cpu_features() & VQ_CPU_AVX2)
        vq_vdot_rows_avx2(q, K, n, d, scale, out);
    else
        vq_vdot_rows_ref(q, K, n, d, scale, out);
}

void vq_vaxpy_rows(float *y, const float *p, const float *V, size_t n, size_t d)
{
    if (vq_cpu_features() & VQ_CPU_AVX2)
        vq_vaxpy_rows_avx2(y, p, V, n, d);
    else
        vq_vaxpy_rows_ref(y, p, V, n, d);
}

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

float vq_silu(float x) { return x / (1.0f + expf(-x)); }

float vq_gelu_tanh(float x)
{
    const float k = 0.7978845608028654f; /* sqrt(2/pi) */
    return 0.5f * x * (1.0f + tanhf(k * (x + 0.044715f * x * x * x)));
}

void vq_softmax(float *x, size_t n)
{
    float m = x[0];
    for (size_t i = 1; i < n; i++)
        if (x[i] > m)
            m = x[i];
    float s = 0;
    for (size_t i = 0; i < n; i++) {
        x[i] = expf(x[i] - m);
        s += x[i];
    }
    float inv = 1.0f / s;
    for (size_t i = 0; i < n; i++)
        x[i] *= inv;
}
