/* io.h -- little-endian field access for file formats (alignment-free). */
#ifndef VQ_CORE_IO_H
#define VQ_CORE_IO_H

#include <stdint.h>
#include <string.h>

static inline void vq_put_u16(uint8_t *p, uint16_t v) { p[0] = (uint8_t)v; p[1] = (uint8_t)(v >> 8); }
static inline void vq_put_u32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}
static inline void vq_put_u64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}
static inline void vq_put_f32(uint8_t *p, float f) { uint32_t u; memcpy(&u, &f, 4); vq_put_u32(p, u); }
static inline uint16_t vq_get_u16(const uint8_t *p) { return (uint16_t)(p[0] | p[1] << 8); }
static inline uint32_t vq_get_u32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static inline uint64_t vq_get_u64(const uint8_t *p) { return vq_get_u32(p) | (uint64_t)vq_get_u32(p + 4) << 32; }
static inline float vq_get_f32(const uint8_t *p) { uint32_t u = vq_get_u32(p); float f; memcpy(&f, &u, 4); return f; }

#endif
