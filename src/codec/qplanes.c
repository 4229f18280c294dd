/* qplanes.c -- see qplanes.h. */
#include "codec/qplanes.h"

#include <math.h>
#include <string.h>

#include "codec/bitstream.h"
#include "core/io.h"

void vq_qplanes_encode(const float *y, int D, int qbits, uint8_t *qbuf)
{
    float lo = y[0], hi = y[0];
    for (int d = 1; d < D; d++) {
        lo = fminf(lo, y[d]);
        hi = fmaxf(hi, y[d]);
    }
    const unsigned vmax = (1u << qbits) - 1u;
    float delta = hi > lo ? (hi - lo) / (float)vmax : 1.0f;
    memset(qbuf, 0, vq_qplanes_bytes(D, qbits));
    uint8_t *planes = qbuf + 12;
    unsigned long sum = 0;
    for (int d = 0; d < D; d++) {
        float v = roundf((y[d] - lo) / delta);
        unsigned u = (unsigned)fminf((float)vmax, fmaxf(0.0f, v));
        sum += u;
        for (int j = 0; j < qbits; j++)
            if (u >> j & 1)
                vq_bits_put(planes + (size_t)j * (size_t)D / 8, (size_t)d, 1, 1);
    }
    vq_put_f32(qbuf, lo); /* little-endian, as vq_qplanes_sign_dot reads it */
    vq_put_f32(qbuf + 4, delta);
    vq_put_f32(qbuf + 8, (float)sum);
}
