/* nearest8_ref.c -- the scalar reference of vq_nearest8 (kernels/nearest8.h). */
#include "kernels/nearest8.h"

int vq_nearest8_ref(const float *cent, size_t k, const float *p)
{
    int best = 0;
    float bd = vq_dist8(cent, p);
    for (size_t j = 1; j < k; j++) {
        const float t = vq_dist8(cent + 8 * j, p);
        if (t < bd) {
            bd = t;
            best = (int)j;
        }
    }
    return best;
}
