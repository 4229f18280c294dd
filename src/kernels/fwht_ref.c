/* fwht_ref.c -- the scalar reference of flip_signs (kernels/fwht.h); the
 * transform's reference is core/hadamard.c. */
#include "kernels/fwht.h"

#include "core/bitstream.h"

void vq_flip_signs_ref(float *x, const uint8_t *bits, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (vq_bits_get(bits, i, 1))
            x[i] = -x[i];
}
