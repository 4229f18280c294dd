/* fp16.h -- IEEE half and bfloat16 conversions (scalar, exact rounding).
 *
 * vq_fp32_to_fp16 rounds to nearest even and handles subnormals, infinities
 * and NaN; vq_fp16_to_fp32 is exact. SIMD converters may sit beside these
 * (F16C); these are the reference. */
#ifndef VQ_CORE_FP16_H
#define VQ_CORE_FP16_H

#include <stdint.h>
#include <string.h>

typedef uint16_t vq_fp16;
typedef uint16_t vq_bf16;

static inline uint32_t vq_f32_bits(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
static inline float vq_bits_f32(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }

static inline float vq_fp16_to_fp32(vq_fp16 h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu;
    uint32_t man = h & 0x3ffu;
    if (exp == 0x1f) /* inf / nan */
        return vq_bits_f32(sign | 0x7f800000u | (man << 13));
    if (exp == 0) {
        if (man == 0)
            return vq_bits_f32(sign);
        /* subnormal: man * 2^-24 */
        float f = (float)man * (1.0f / 16777216.0f);
        return sign ? -f : f;
    }
    return vq_bits_f32(sign | ((exp + 112) << 23) | (man << 13));
}

static inline vq_fp16 vq_fp32_to_fp16(float f)
{
    uint32_t u = vq_f32_bits(f);
    uint32_t sign = (u >> 16) & 0x8000u;
    uint32_t a = u & 0x7fffffffu;
    if (a >= 0x7f800000u) /* inf or nan */
        return (vq_fp16)(sign | 0x7c00u | (a > 0x7f800000u ? 0x200u : 0));
    if (a >= 0x477ff000u) /* rounds to >= 65520: overflow to inf */
        return (vq_fp16)(sign | 0x7c00u);
    if (a < 0x38800000u) { /* below 2^-14: subnormal half or zero */
        if (a < 0x33000000u) /* < 2^-25: rounds to zero */
            return (vq_fp16)sign;
        uint32_t e = a >> 23;
        uint32_t m = (a & 0x7fffffu) | 0x800000u;
        uint32_t shift = 126 - e; /* 14..24 */
        uint32_t r = m >> shift;
        uint32_t rem = m & ((1u << shift) - 1);
        uint32_t half = 1u << (shift - 1);
        if (rem > half || (rem == half && (r & 1)))
            r++;
        return (vq_fp16)(sign | r);
    }
    uint32_t r = ((a - 0x38000000u) >> 13);
    uint32_t rem = a & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (r & 1)))
        r++;
    return (vq_fp16)(sign | r);
}

static inline float vq_bf16_to_fp32(vq_bf16 h) { return vq_bits_f32((uint32_t)h << 16); }

static inline vq_bf16 vq_fp32_to_bf16(float f)
{
    uint32_t u = vq_f32_bits(f);
    if ((u & 0x7fffffffu) > 0x7f800000u)
        return (vq_bf16)((u >> 16) | 0x40u);
    u += 0x7fffu + ((u >> 16) & 1u);
    return (vq_bf16)(u >> 16);
}

#endif
