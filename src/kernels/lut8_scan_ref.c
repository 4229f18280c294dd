/* lut8_scan_ref.c -- the scalar reference of vq_lut8_scan
 * (kernels/lut8_scan.h). */
#include "kernels/lut8_scan.h"

#include <string.h>

void vq_lut8_scan_ref(const uint8_t *codes, size_t stride, size_t n, size_t M, const uint8_t *tab, size_t qstride,
                      int n_q, float *s, size_t sstride)
{
    for (int j = 0; j < n_q; j++) {
        const uint8_t *q = tab + (size_t)j * qstride, *T = q + VQ_L8_HEAD;
        float bias, delta;
        memcpy(&bias, q, sizeof bias);
        memcpy(&delta, q + sizeof bias, sizeof delta);
        for (size_t i = 0; i < n; i++) {
            const uint8_t *c = codes + i * stride;
            uint32_t sum = 0;
            for (size_t m = 0; m < M; m++)
                sum += T[m * 256 + c[m]];
            s[(size_t)j * sstride + i] = bias + delta * (float)sum;
        }
    }
}
