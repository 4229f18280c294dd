/* codes_qdot_ref.c -- query preparation and the scalar reference of
 * vq_codes_qdot (kernels/codes_qdot.h). */
#include "kernels/codes_qdot.h"

#include <math.h>
#include <string.h>

#include "core/bitstream.h"
#include "core/fp16.h"
#include "core/vexp.h"

size_t vq_codes_query_bytes(size_t D) { return VQ_CQ_HEAD + D; }

/* the IEEE half at p + 2i (little-endian) */
static float half_at(const uint8_t *p, size_t i)
{
    return vq_fp16_to_fp32((vq_fp16)(p[2 * i] | p[2 * i + 1] << 8));
}

/* channel of position p in a chunk */
static size_t chan_of(int bits, size_t p)
{
    return bits == 4 ? (p < 32 ? 2 * p : 2 * (p - 32) + 1) : bits == 3 ? p : 4 * (p % 16) + p / 16;
}

void vq_codes_qprep(const float *qs, size_t qstride, int n_q, const uint8_t *hdr, size_t D, int bits, uint8_t *dst,
                    size_t dstride)
{
    for (int j = 0; j < n_q; j++) {
        const float *qv = qs + (size_t)j * qstride;
        uint8_t *out = dst + (size_t)j * dstride;
        int8_t *q = (int8_t *)(void *)(out + VQ_CQ_HEAD);
        const float h = (float)(1 << (bits - 1));
        float amax = 0.0f, lanes[16] = { 0 };
        for (size_t e = 0; e < D; e++) {
            const float s = half_at(hdr, e);
            amax = fmaxf(amax, fabsf(qv[e] * s));
            lanes[e % 16] = fmaf(qv[e], fmaf(h, s, half_at(hdr, D + e)), lanes[e % 16]);
        }
        float d = amax / 127.0f, inv = amax > 0.0f ? 127.0f / amax : 0.0f;
        int32_t qsum = 0;
        for (size_t c = 0; c < D / 64; c++)
            for (size_t p = 0; p < 64; p++) {
                size_t e = 64 * c + chan_of(bits, p);
                long v = lrintf(qv[e] * half_at(hdr, e) * inv);
                q[64 * c + p] = (int8_t)(v > 127 ? 127 : v < -127 ? -127 : v);
                qsum += q[64 * c + p];
            }
        const float base = vq_sum16_lanes(lanes) - d * (float)(qsum * (1 << (bits - 1)));
        memcpy(out, &d, sizeof d);
        memcpy(out + sizeof d, &base, sizeof base);
    }
}

static unsigned code_at(const uint8_t *row, int bits, size_t ch) { return vq_bits_get(row, ch, bits); }

void vq_codes_qdot_ref(const uint8_t *codes, size_t rstride, int bits, size_t nt, size_t D, const uint8_t *qbuf,
                       size_t qstride, int n_q, float *s, size_t sstride)
{
    for (int j = 0; j < n_q; j++) {
        const uint8_t *qj = qbuf + (size_t)j * qstride;
        const int8_t *q = (const int8_t *)(const void *)(qj + VQ_CQ_HEAD);
        float d, base;
        memcpy(&d, qj, sizeof d);
        memcpy(&base, qj + sizeof d, sizeof base);
        for (size_t i = 0; i < nt; i++) {
            const uint8_t *row = codes + i * rstride;
            int32_t isum = 0;
            for (size_t c = 0; c < D / 64; c++)
                for (size_t p = 0; p < 64; p++)
                    isum += (int32_t)code_at(row, bits, 64 * c + chan_of(bits, p)) * q[64 * c + p];
            s[(size_t)j * sstride + i] = d * (float)isum + base;
        }
    }
}
