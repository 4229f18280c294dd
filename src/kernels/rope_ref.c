/* rope_ref.c -- scalar reference of rope.h's turn. */
#include "kernels/rope.h"

void vq_rope_pairs_ref(float *x, const float *cs, size_t half, int neox, float sgn)
{
    for (size_t i = 0; i < half; i++) {
        const size_t i0 = neox ? i : 2 * i, i1 = neox ? i + half : 2 * i + 1;
        const float a = x[i0], b = x[i1], c = cs[i], s = sgn * cs[half + i];
        const float ac = a * c, bs = b * s, as = a * s, bc = b * c;
        x[i0] = ac - bs;
        x[i1] = as + bc;
    }
}
