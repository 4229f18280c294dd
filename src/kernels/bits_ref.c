/* bits_ref.c -- scalar reference of kernels.h bitdot. */
#include "kernels/kernels.h"

static unsigned pop32(uint32_t x)
{
    x = x - ((x >> 1) & 0x55555555u);
    x = (x & 0x33333333u) + ((x >> 2) & 0x33333333u);
    return (((x + (x >> 4)) & 0x0F0F0F0Fu) * 0x01010101u) >> 24;
}

static uint32_t word(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

void vq_bitdot_ref(const uint8_t *codes, size_t stride, size_t n, size_t D, const uint8_t *planes, size_t qstride,
                   int n_q, int qbits, uint32_t *pz, uint32_t *pq)
{
    for (size_t i = 0; i < n; i++) {
        const uint8_t *z = codes + i * stride;
        uint32_t c = 0;
        for (size_t w = 0; w < D / 32; w++)
            c += pop32(word(z + 4 * w));
        pz[i] = c;
        for (int j = 0; j < n_q; j++) {
            uint32_t acc = 0;
            for (int p = 0; p < qbits; p++) {
                const uint8_t *v = planes + (size_t)j * qstride + (size_t)p * (D / 8);
                for (size_t w = 0; w < D / 32; w++)
                    acc += pop32(word(z + 4 * w) & word(v + 4 * w)) << p;
            }
            pq[(size_t)j * n + i] = acc;
        }
    }
}
