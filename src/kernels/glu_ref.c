/* glu_ref.c -- the scalar references of glu.h's gated products. */
#include <math.h>

#include "kernels/glu.h"

void vq_silu_mul_ref(float *g, const float *u, size_t n)
{
    for (size_t i = 0; i < n; i++)
        g[i] = g[i] / (1.0f + expf(-g[i])) * u[i];
}

void vq_gelu_mul_ref(float *g, const float *u, size_t n)
{
    const float k = 0.7978845608028654f; /* sqrt(2/pi) */
    for (size_t i = 0; i < n; i++) {
        const float x = g[i];
        g[i] = 0.5f * x * (1.0f + tanhf(k * (x + 0.044715f * x * x * x))) * u[i];
    }
}
