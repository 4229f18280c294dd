/* bits_avx2.c -- bitdot (kernels.h) with the POPCNT instruction on 64-bit
 * words (32-bit words when D is not a multiple of 64). Exact integer
 * results, equal to the reference. */
#include <string.h>

#include "kernels/kernels.h"

static inline uint64_t ld64(const uint8_t *p)
{
    uint64_t x;
    memcpy(&x, p, 8);
    return x;
}

static inline uint32_t ld32(const uint8_t *p)
{
    uint32_t x;
    memcpy(&x, p, 4);
    return x;
}

void vq_bitdot_avx2(const uint8_t *codes, size_t stride, size_t n, size_t D, const uint8_t *planes, size_t qstride,
                    int n_q, int qbits, uint32_t *pz, uint32_t *pq)
{
    const size_t W = D % 64 == 0 ? D / 64 : 0;
    for (size_t i = 0; i < n; i++) {
        const uint8_t *z = codes + i * stride;
        uint32_t c = 0;
        if (W)
            for (size_t w = 0; w < W; w++)
                c += (uint32_t)__builtin_popcountll(ld64(z + 8 * w));
        else
            for (size_t w = 0; w < D / 32; w++)
                c += (uint32_t)__builtin_popcount(ld32(z + 4 * w));
        pz[i] = c;
        for (int j = 0; j < n_q; j++) {
            uint32_t acc = 0;
            for (int p = 0; p < qbits; p++) {
                const uint8_t *v = planes + (size_t)j * qstride + (size_t)p * (D / 8);
                uint32_t s = 0;
                if (W)
                    for (size_t w = 0; w < W; w++)
                        s += (uint32_t)__builtin_popcountll(ld64(z + 8 * w) & ld64(v + 8 * w));
                else
                    for (size_t w = 0; w < D / 32; w++)
                        s += (uint32_t)__builtin_popcount(ld32(z + 4 * w) & ld32(v + 4 * w));
                acc += s << p;
            }
            pq[(size_t)j * n + i] = acc;
        }
    }
}

void vq_signscore_avx2(const uint8_t *codes, size_t stride, size_t n, size_t D, const size_t *offs, const float *w,
                       int n_sets, const float *f, size_t hoff, const uint8_t *planes, size_t qstride,
                       const float *qc, int n_q, int qbits, float *s, size_t sstride)
{
    vq_signscore_via(vq_bitdot_avx2, codes, stride, n, D, offs, w, n_sets, f, hoff, planes, qstride, qc, n_q, qbits,
                     s, sstride);
}
