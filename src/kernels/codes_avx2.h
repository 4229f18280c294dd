/* codes_avx2.h -- packed codes decoded in AVX2 registers, the fixed
 * horizontal sums, and the per-pair duplication of RoPE's cosines and
 * sines, shared by the AVX2 kernels (include only from *_avx2.c files).
 *
 * Sixteen codes of b bits (1..4, packed LSB first, core/bitstream.h) fill
 * 2b bytes; nothing past them is read. They come back as two registers of
 * eight 32-bit lanes (codes 0-7, 8-15), each lane the dword that holds its
 * code shifted right so the code is in bits 0..b-1; the bits above are the
 * following codes' (vq_codes_mask clears them; a permute of a table that
 * repeats every 2^b entries, vq_levels8, ignores them):
 *   b = 1: the 2 bytes, lanes shifted by i and 8 + i;
 *   b = 2: the dword, shifted by 2i and 16 + 2i;
 *   b = 3: the dword at 0 (codes 0-7, 3i) and the one at 2 (codes 8-15,
 *          8 + 3i: bit 24 is bit 8 of that dword);
 *   b = 4: the dwords at 0 and 4, shifted by 4i.
 * Widths 5..8: vq_codes8_wide, 8 codes (b bytes) at a time. */
#ifndef VQ_KERNELS_CODES_AVX2_H
#define VQ_KERNELS_CODES_AVX2_H

#include <immintrin.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "kernels/store4.h"

/* the IEEE half in word 0 of each of h[0..7] (a block's fp16 scale, read
 * with its block by a vector load), as eight floats in that order:
 * unpacks, not 2-byte stores, which would not forward to a 16-byte load */
static inline __m256 vq_word0_halves8(const __m128i h[8])
{
    const __m128i h01 = _mm_unpacklo_epi16(h[0], h[1]), h23 = _mm_unpacklo_epi16(h[2], h[3]);
    const __m128i h45 = _mm_unpacklo_epi16(h[4], h[5]), h67 = _mm_unpacklo_epi16(h[6], h[7]);
    return _mm256_cvtph_ps(_mm_unpacklo_epi64(_mm_unpacklo_epi32(h01, h23), _mm_unpacklo_epi32(h45, h67)));
}

/* the shifts of codes 0-7 (hi = 0) or 8-15 (hi = 1) of width b */
static inline __m256i vq_codes_shifts(int b, int hi)
{
    const __m256i i8 = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    const int base = !hi || b == 4 ? 0 : b == 1 ? 8 : b == 2 ? 16 : 8;
    return _mm256_add_epi32(_mm256_mullo_epi32(i8, _mm256_set1_epi32(b)), _mm256_set1_epi32(base));
}

/* 2^b - 1 in every lane */
static inline __m256i vq_codes_mask(int b) { return _mm256_set1_epi32((1 << b) - 1); }

/* the 16 codes at p (b a constant after inlining) into *lo, *hi, shifted
 * but not masked (see above); sh0 / sh1: vq_codes_shifts(b, 0 / 1) */
static inline __attribute__((always_inline)) void vq_codes16(const uint8_t *p, const int b, __m256i sh0, __m256i sh1,
                                                             __m256i *lo, __m256i *hi)
{
    uint32_t x0 = 0, x1 = 0;
    if (b == 1) {
        memcpy(&x0, p, 2);
        x1 = x0;
    } else if (b == 2) {
        memcpy(&x0, p, 4);
        x1 = x0;
    } else if (b == 3) {
        memcpy(&x0, p, 4);
        memcpy(&x1, p + 2, 4);
    } else {
        memcpy(&x0, p, 4);
        memcpy(&x1, p + 4, 4);
    }
    *lo = _mm256_srlv_epi32(_mm256_set1_epi32((int)x0), sh0);
    *hi = _mm256_srlv_epi32(_mm256_set1_epi32((int)x1), sh1);
}

/* the n bytes at p (n = 1..8, a constant after inlining) as a
 * little-endian integer, put together from 4-, 2- and 1-byte loads in
 * registers: a memcpy of 3, 5, 6 or 7 bytes into a zeroed integer is
 * compiled into stores to the stack and one wider reload, which waits
 * for the stores (a store-forwarding stall per call) */
static inline __attribute__((always_inline)) uint64_t vq_load_le(const uint8_t *p, const int n)
{
    uint64_t x = 0;
    int at = 0;
    if (n >= 4) {
        uint32_t d;
        memcpy(&d, p, 4);
        x = d, at = 4;
    }
    if (n - at >= 2) {
        uint16_t h;
        memcpy(&h, p + at, 2);
        x |= (uint64_t)h << (8 * at), at += 2;
    }
    if (n - at >= 1)
        x |= (uint64_t)p[at] << (8 * at);
    return x;
}

/* the 8 codes of width b (5..8) in the b bytes at p (nothing past them is
 * read), each in the low bits of its lane, the bits above not cleared
 * (b = 8: none above): two dwords of 4 codes each, shifted by sh =
 * 0, b, 2b, 3b, 0, b, 2b, 3b */
static inline __attribute__((always_inline)) __m256i vq_codes8_wide(const uint8_t *p, const int b, __m256i sh)
{
    if (b == 8)
        return _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(const void *)p));
    const uint64_t x = vq_load_le(p, b);
    const __m128i lo = _mm_set1_epi32((int)(uint32_t)x), hi = _mm_set1_epi32((int)(uint32_t)(x >> (4 * b)));
    return _mm256_srlv_epi32(_mm256_set_m128i(hi, lo), sh);
}

/* the 4 floats at p, each twice: p0 p0 p1 p1 p2 p2 p3 p3 (a RoPE row's
 * cosines or sines over 4 adjacent pairs) */
static inline __m256 vq_dup4(const float *p)
{
    const __m128 v = _mm_loadu_ps(p);
    return _mm256_set_m128(_mm_unpackhi_ps(v, v), _mm_unpacklo_ps(v, v));
}

/* the integer levels for b <= 3 bits, laid out as vq_levels8 lays a table:
 * lane k holds (float)(k mod 2^b), so an unmasked code of vq_codes16 picks
 * its own value */
static inline __m256 vq_int_levels8(int b)
{
    return _mm256_cvtepi32_ps(
        _mm256_and_si256(_mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7), _mm256_set1_epi32((1 << b) - 1)));
}

/* the 2^b levels at lut (b <= 3) repeated to fill 8 lanes: a permute by an
 * unmasked code of vq_codes16 picks lut[code] */
static inline __m256 vq_levels8(const float *lut, int b)
{
    if (b == 3)
        return _mm256_loadu_ps(lut);
    if (b == 2)
        return _mm256_setr_ps(lut[0], lut[1], lut[2], lut[3], lut[0], lut[1], lut[2], lut[3]);
    return _mm256_setr_ps(lut[0], lut[1], lut[0], lut[1], lut[0], lut[1], lut[0], lut[1]);
}

/* the level of each code (masked or not) of width b from the 2^b levels:
 * b <= 3 from lv0 = vq_levels8; b = 4 from lv0 = lut[0..7], lv1 =
 * lut[8..15], picked by bit 3 */
static inline __attribute__((always_inline)) __m256 vq_level_of(__m256i c, const int b, __m256 lv0, __m256 lv1)
{
    if (b <= 3)
        return _mm256_permutevar8x32_ps(lv0, c);
    return _mm256_blendv_ps(_mm256_permutevar8x32_ps(lv0, c), _mm256_permutevar8x32_ps(lv1, c),
                            _mm256_castsi256_ps(_mm256_slli_epi32(c, 28)));
}

/* [sum(a0), sum(a1), sum(a2), sum(a3)], every vector by the same tree
 * ((x0+x1) + (x2+x3)) + ((x4+x5) + (x6+x7)), so a sum does not depend on
 * its place in the result */
static inline __m128 vq_hsum4x256(__m256 a0, __m256 a1, __m256 a2, __m256 a3)
{
    const __m256 t = _mm256_hadd_ps(_mm256_hadd_ps(a0, a1), _mm256_hadd_ps(a2, a3));
    return _mm_add_ps(_mm256_castps256_ps128(t), _mm256_extractf128_ps(t, 1));
}

/* vq_sum16_lanes (core/vexp.h) of the 16 lanes lo (0-7), hi (8-15): the
 * same additions of the same operands, so the same bits */
static inline float vq_sum16x256(__m256 lo, __m256 hi)
{
    const __m256 a = _mm256_add_ps(lo, hi);                                               /* l[k] + l[k+8] */
    const __m128 b = _mm_add_ps(_mm256_castps256_ps128(a), _mm256_extractf128_ps(a, 1)); /* a[k] + a[k+4] */
    const __m128 c = _mm_add_ps(b, _mm_movehl_ps(b, b));                                  /* b[k] + b[k+2] */
    return _mm_cvtss_f32(_mm_add_ss(c, _mm_movehdup_ps(c)));                              /* c[0] + c[1] */
}


#endif
