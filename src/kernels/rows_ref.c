/* rows_ref.c -- scalar references of the row decoders of kernels.h
 * (lut_row, kivi_row). */
#include "kernels/kernels.h"

/* code i of width bits (1..8), LSB first (codec/bitstream.h order) */
static inline unsigned code_at(const uint8_t *src, size_t i, int bits)
{
    size_t bit = i * (size_t)bits;
    unsigned sh = (unsigned)(bit & 7), w = src[bit >> 3];
    if (sh + (unsigned)bits > 8)
        w |= (unsigned)src[(bit >> 3) + 1] << 8;
    return (w >> sh) & ((1u << bits) - 1u);
}

void vq_lut_row_ref(const uint8_t *codes, int bits, size_t n, const float *lut, float scale, int add, float *out)
{
    for (size_t i = 0; i < n; i++) {
        float x = scale * lut[code_at(codes, i, bits)];
        out[i] = add ? out[i] + x : x;
    }
}

void vq_kivi_row_ref(const uint8_t *row, int bits, size_t n, const float *s, const float *m, float *out)
{
    for (size_t i = 0; i < n; i++) {
        float t = s[i] * (float)code_at(row, i, bits);
        out[i] = t + m[i];
    }
}

void vq_kivi_group_row_ref(const uint8_t *row, int bits, size_t n, size_t group, const float *gs, const float *gm,
                           float *out)
{
    for (size_t i = 0; i < n; i++) {
        float t = gs[i / group] * (float)code_at(row, i, bits);
        out[i] = t + gm[i / group];
    }
}
