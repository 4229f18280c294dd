/* bitstream.h -- packing of small unsigned codes into bytes, LSB first:
 * the one bit packing of the library (codecs, the cache's xquant/xkv
 * codes; the kernels' scalar references; the GPU kernels read the same layout).
 *
 * A code of width `bits` (1..16) at bit offset `bit` occupies bits
 * [bit, bit + bits) of the byte string, bit j of the stream being bit
 * (j % 8) of byte j / 8; code i of a run of equal widths sits at bit
 * offset i * bits. A code touches only the bytes its bits lie in (at most
 * 3), so packing a row never reads or writes past the row's last code.
 * The caller zeroes the destination before putting (puts OR) and passes
 * values that fit in `bits` (higher bits are dropped). */
#ifndef VQ_CORE_BITSTREAM_H
#define VQ_CORE_BITSTREAM_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

static inline void vq_bits_put_at(uint8_t *dst, size_t bit, int bits, unsigned v)
{
    size_t byte = bit >> 3;
    unsigned sh = (unsigned)(bit & 7), end = sh + (unsigned)bits;
    uint32_t w = (uint32_t)(v & ((1u << bits) - 1u)) << sh;
    dst[byte] |= (uint8_t)w;
    if (end > 8)
        dst[byte + 1] |= (uint8_t)(w >> 8);
    if (end > 16)
        dst[byte + 2] |= (uint8_t)(w >> 16);
}

static inline unsigned vq_bits_get_at(const uint8_t *src, size_t bit, int bits)
{
    size_t byte = bit >> 3;
    unsigned sh = (unsigned)(bit & 7), end = sh + (unsigned)bits;
    uint32_t w = src[byte];
    if (end > 8)
        w |= (uint32_t)src[byte + 1] << 8;
    if (end > 16)
        w |= (uint32_t)src[byte + 2] << 16;
    return (unsigned)(w >> sh) & ((1u << bits) - 1u);
}

/* code i of a run of `bits`-wide codes */
static inline void vq_bits_put(uint8_t *dst, size_t i, int bits, unsigned v)
{
    vq_bits_put_at(dst, i * (size_t)bits, bits, v);
}

static inline unsigned vq_bits_get(const uint8_t *src, size_t i, int bits)
{
    return vq_bits_get_at(src, i * (size_t)bits, bits);
}

/* eight codes of `bits` bits from the `bits` bytes at p into out[0..8) */
static inline void vq_bits_unpack8(const uint8_t *p, int bits, uint8_t *out)
{
    uint64_t w = 0;
    _Pragma("GCC unroll 8") for (int k = 0; k < bits; k++) w |= (uint64_t)p[k] << (8 * k);
    _Pragma("GCC unroll 8") for (int k = 0; k < 8; k++) out[k] = (uint8_t)((w >> (k * bits)) & ((1u << bits) - 1u));
}

/* codes 0..n-1 into out[0..n) (one byte each, bits <= 8); whole bytes at a
 * time for widths 1, 2, 4 and 8, and for the other widths eight codes (that
 * is `bits` whole bytes) at a time */
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
    } else if (bits > 0 && bits < 8) {
        for (; i + 8 <= n; i += 8)
            switch (bits) { /* a constant width per case: the loops unroll */
            case 3: vq_bits_unpack8(src + i / 8 * 3, 3, out + i); break;
            case 5: vq_bits_unpack8(src + i / 8 * 5, 5, out + i); break;
            case 6: vq_bits_unpack8(src + i / 8 * 6, 6, out + i); break;
            default: vq_bits_unpack8(src + i / 8 * 7, 7, out + i); break;
            }
    }
    for (; i < n; i++)
        out[i] = (uint8_t)vq_bits_get(src, i, bits);
}

/* in[0..8) (codes of `bits` bits, higher bits dropped) into the `bits`
 * bytes at p: vq_bits_unpack8's inverse */
static inline void vq_bits_pack8(const uint8_t *in, int bits, uint8_t *p)
{
    uint64_t w = 0;
    _Pragma("GCC unroll 8") for (int k = 0; k < 8; k++) w |= (uint64_t)(in[k] & ((1u << bits) - 1u)) << (k * bits);
    _Pragma("GCC unroll 8") for (int k = 0; k < bits; k++) p[k] = (uint8_t)(w >> (8 * k));
}

/* in[0..n) (one code per byte, bits <= 8) into ceil(n * bits / 8) bytes
 * at dst, which this zeroes first; eight codes (`bits` whole bytes) at a
 * time, then the rest one by one */
static inline void vq_bits_pack(const uint8_t *in, size_t n, int bits, uint8_t *dst)
{
    memset(dst, 0, (n * (size_t)bits + 7) / 8);
    size_t i = 0;
    if (bits > 0 && bits <= 8)
        for (; i + 8 <= n; i += 8)
            switch (bits) { /* a constant width per case: the loops unroll */
            case 1: vq_bits_pack8(in + i, 1, dst + i / 8); break;
            case 2: vq_bits_pack8(in + i, 2, dst + i / 8 * 2); break;
            case 3: vq_bits_pack8(in + i, 3, dst + i / 8 * 3); break;
            case 4: vq_bits_pack8(in + i, 4, dst + i / 8 * 4); break;
            case 5: vq_bits_pack8(in + i, 5, dst + i / 8 * 5); break;
            case 6: vq_bits_pack8(in + i, 6, dst + i / 8 * 6); break;
            case 7: vq_bits_pack8(in + i, 7, dst + i / 8 * 7); break;
            default: vq_bits_pack8(in + i, 8, dst + i); break;
            }
    for (; i < n; i++)
        vq_bits_put(dst, i, bits, in[i]);
}

#endif
