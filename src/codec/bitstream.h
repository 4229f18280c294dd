/* bitstream.h -- packing of small unsigned codes into bytes, LSB first.
 *
 * Code i of width `bits` (1..8) occupies bits [i*bits, (i+1)*bits) of the
 * byte string, bit j of the stream being bit (j % 8) of byte j / 8. With
 * bits in {1,2,4,8} a code never straddles a byte; 3-bit codes may. The
 * caller zeroes the destination before vq_bits_put (it ORs). */
#ifndef VQ_CODEC_BITSTREAM_H
#define VQ_CODEC_BITSTREAM_H

#include <stddef.h>
#include <stdint.h>

static inline void vq_bits_put(uint8_t *dst, size_t i, int bits, unsigned v)
{
    size_t bit = i * (size_t)bits;
    size_t byte = bit >> 3;
    unsigned sh = (unsigned)(bit & 7);
    unsigned w = (v & ((1u << bits) - 1u)) << sh;
    dst[byte] |= (uint8_t)w;
    if (sh + (unsigned)bits > 8)
        dst[byte + 1] |= (uint8_t)(w >> 8);
}

static inline unsigned vq_bits_get(const uint8_t *src, size_t i, int bits)
{
    size_t bit = i * (size_t)bits;
    size_t byte = bit >> 3;
    unsigned sh = (unsigned)(bit & 7);
    unsigned w = src[byte];
    if (sh + (unsigned)bits > 8)
        w |= (unsigned)src[byte + 1] << 8;
    return (w >> sh) & ((1u << bits) - 1u);
}

/* codes 0..n-1 into out[0..n) (one byte each); whole bytes at a time for
 * widths 1, 2, 4 and 8 */
static inline void vq_bits_unpack(const uint8_t *src, size_t n, int bits, uint8_t *out)
{
    size_t i = 0;
    if (bits == 1 || bits == 2 || bits == 4 || bits == 8) {
        const unsigned per = 8u / (unsigned)bits, mask = (1u << bits) - 1u;
        for (; i + per <= n; i += per) {
            unsigned w = src[i / per];
            for (unsigned k = 0; k < per; k++)
                out[i + k] = (uint8_t)((w >> (k * (unsigned)bits)) & mask);
        }
    }
    for (; i < n; i++)
        out[i] = (uint8_t)vq_bits_get(src, i, bits);
}

#endif
