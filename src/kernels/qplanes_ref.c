/* qplanes_ref.c -- the reference of vq_qplanes_encode (kernels/qplanes.h). */
#include "kernels/qplanes.h"

#include <stdint.h>

#include "core/io.h"

/* roundf(x) for 0 <= x < 2^23, without the library call: x - trunc(x) is
 * exact there, so the half-way test is too */
static inline float round_nonneg(float x)
{
    const float r = (float)(int32_t)x;
    return x - r >= 0.5f ? r + 1.0f : r;
}

/* the bits j of eight levels (byte k of w = level k) as one byte, bit k
 * from level k: each bit moved to 56 + k by one multiply (no two partial
 * products share a bit position, so nothing carries) */
static inline uint8_t plane_byte(uint64_t w, int j)
{
    return (uint8_t)((((w >> j) & 0x0101010101010101ull) * 0x0102040810204080ull) >> 56);
}

void vq_qplanes_encode_ref(const float *y, int D, int qbits, uint8_t *qbuf)
{
    enum { STEP = 64 }; /* levels made per pass (D is a multiple of 32) */
    float lo = y[0], hi = y[0];
    for (int d = 1; d < D; d++) {
        lo = y[d] < lo ? y[d] : lo;
        hi = y[d] > hi ? y[d] : hi;
    }
    const unsigned vmax = (1u << qbits) - 1u;
    float delta = hi > lo ? (hi - lo) / (float)vmax : 1.0f;
    uint8_t *planes = qbuf + 12, *tables = planes + (size_t)qbits * (size_t)D / 8;
    unsigned long sum = 0;
    for (int d0 = 0; d0 < D; d0 += STEP) {
        const int n = D - d0 < STEP ? D - d0 : STEP;
        uint8_t u[STEP];
        for (int d = 0; d < n; d++) {
            const float x = (y[d0 + d] - lo) / delta; /* >= 0; at most vmax and a rounding */
            u[d] = (uint8_t)round_nonneg(x < (float)vmax ? x : (float)vmax);
            sum += u[d];
        }
        for (int b = 0; b < n / 8; b++) { /* LSB-first bits (bitstream.h order) */
            uint64_t w = 0;
            for (int k = 0; k < 8; k++)
                w |= (uint64_t)u[8 * b + k] << (8 * k);
            for (int j = 0; j < qbits; j++)
                planes[(size_t)j * (size_t)D / 8 + (size_t)(d0 / 8 + b)] = plane_byte(w, j);
        }
        if (qbits <= VQ_NIBBLE_QBITS)
            vq_nibble_tables(u, (size_t)n, tables + 4 * (size_t)d0);
    }
    vq_put_f32(qbuf, lo); /* little-endian, as vq_qplanes_header reads it */
    vq_put_f32(qbuf + 4, delta);
    vq_put_f32(qbuf + 8, (float)sum);
}
