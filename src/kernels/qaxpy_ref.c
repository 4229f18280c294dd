/* qaxpy_ref.c -- scalar reference of vq_qaxpy (kernels/qaxpy.h). */
#include "kernels/qaxpy.h"

#include "kernels/qblock_values.h"

void vq_qaxpy_ref(int bits, const uint8_t *codes, size_t rstride, size_t nt, size_t D, const float *w,
                  size_t wstride, int n_q, float *acc, size_t astride)
{
    float vals[32];
    const size_t bb = bits == 8 ? 34 : 18;
    for (size_t i = 0; i < nt; i++)
        for (size_t b = 0; b < D / 32; b++) {
            const uint8_t *blk = codes + i * rstride + b * bb;
            (bits == 8 ? vq_q8_0_values_ref : vq_q4_0_values_ref)(blk, 1, vals);
            for (int j = 0; j < n_q; j++) {
                float wj = w[(size_t)j * wstride + i], *a = acc + (size_t)j * astride + b * 32;
                for (int e = 0; e < 32; e++)
                    a[e] += wj * vals[e];
            }
        }
}
