/* qplanes.c -- see qplanes.h. */
#include "codec/qplanes.h"

#include <stdint.h>
#include <string.h>

#include "core/io.h"

/* roundf(x) for 0 <= x < 2^23, without the library call: x - trunc(x) is
 * exact there, so the half-way test is too */
static inline float round_nonneg(float x)
{
    const float r = (float)(int32_t)x;
    return x - r >= 0.5f ? r + 1.0f : r;
}

void vq_qplanes_encode(const float *y, int D, int qbits, uint8_t *qbuf)
{
    float lo = y[0], hi = y[0];
    for (int d = 1; d < D; d++) {
        lo = y[d] < lo ? y[d] : lo;
        hi = y[d] > hi ? y[d] : hi;
    }
    const unsigned vmax = (1u << qbits) - 1u;
    float delta = hi > lo ? (hi - lo) / (float)vmax : 1.0f;
    memset(qbuf, 0, vq_qplanes_bytes(D, qbits));
    uint8_t *planes = qbuf + 12, *tables = planes + (size_t)qbits * (size_t)D / 8;
    uint8_t v4[4]; /* the levels of the current four coordinates (tables) */
    unsigned long sum = 0;
    for (int d = 0; d < D; d++) {
        const float x = (y[d] - lo) / delta; /* >= 0; at most vmax and a rounding */
        const float v = round_nonneg(x < (float)vmax ? x : (float)vmax);
        const unsigned u = (unsigned)v;
        sum += u;
        for (int j = 0; j < qbits; j++) /* LSB-first bits (bitstream.h order) */
            planes[(size_t)j * (size_t)D / 8 + (size_t)d / 8] |= (uint8_t)((u >> j & 1u) << (d % 8));
        v4[d % 4] = (uint8_t)u;
        if (qbits <= VQ_NIBBLE_QBITS && d % 4 == 3)
            vq_nibble_tables(v4, 4, tables + 4 * (size_t)(d - 3));
    }
    vq_put_f32(qbuf, lo); /* little-endian, as vq_qplanes_header reads it */
    vq_put_f32(qbuf + 4, delta);
    vq_put_f32(qbuf + 8, (float)sum);
}
