/* glu_ref.c -- the scalar reference of glu.h's SwiGLU product. */
#include <math.h>

#include "kernels/glu.h"

void vq_silu_mul_ref(float *g, const float *u, size_t n)
{
    for (size_t i = 0; i < n; i++)
        g[i] = g[i] / (1.0f + expf(-g[i])) * u[i];
}
