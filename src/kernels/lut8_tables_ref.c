/* lut8_tables_ref.c -- the scalar reference of vq_lut8_tables
 * (kernels/lut8_tables.h). A zero's sign never reaches a byte: min_m
 * enters only as l - min_m (equal for either zero, but for l = -0, whose
 * byte is 0 either way) and the bias (a sum from +0.0f, which -0 cannot
 * change), a range of -0 replaces nothing. */
#include "kernels/lut8_tables.h"

#include <string.h>

void vq_lut8_tables_ref(const float *lut, int M, uint8_t *qbuf)
{
    float bias = 0.0f, range = 0.0f, lo[256];
    for (int m = 0; m < M; m++) {
        const float *l = lut + (size_t)m * 256;
        float mn = l[0], mx = l[0];
        for (int k = 1; k < 256; k++) {
            mn = l[k] < mn ? l[k] : mn;
            mx = l[k] > mx ? l[k] : mx;
        }
        lo[m] = mn;
        bias += mn;
        range = mx - mn > range ? mx - mn : range;
    }
    const float delta = range / 255.0f, inv = range > 0.0f ? 255.0f / range : 0.0f;
    uint8_t *T = qbuf + VQ_L8_HEAD;
    for (int m = 0; m < M; m++) {
        const float *l = lut + (size_t)m * 256;
        for (int k = 0; k < 256; k++) {
            const float v = (l[k] - lo[m]) * inv + 0.5f; /* in [0.5, 255.5] up to rounding; NaN -> 0 */
            T[(size_t)m * 256 + k] = (uint8_t)(v >= 255.0f ? 255.0f : v >= 0.0f ? v : 0.0f);
        }
    }
    memcpy(qbuf, &bias, sizeof bias);
    memcpy(qbuf + sizeof bias, &delta, sizeof delta);
}
