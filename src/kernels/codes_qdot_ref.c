/* codes_qdot_ref.c -- query preparation and the scalar reference of
 * vq_codes_qdot (kernels/codes_qdot.h). */
#include "kernels/codes_qdot.h"

#include <math.h>
#include <string.h>

size_t vq_codes_query_bytes(size_t D) { return D / 64 * sizeof(float) + D; }

/* channel of position p in a chunk */
static size_t chan_of(int bits, size_t p) { return bits == 4 ? (p < 32 ? 2 * p : 2 * (p - 32) + 1) : 4 * (p % 16) + p / 16; }

void vq_codes_qprep(const float *x, size_t D, int bits, uint8_t *dst)
{
    int8_t *q = (int8_t *)(void *)(dst + D / 64 * sizeof(float));
    for (size_t c = 0; c < D / 64; c++) {
        const float *xc = x + 64 * c;
        float amax = 0.0f;
        for (int e = 0; e < 64; e++)
            amax = fmaxf(amax, fabsf(xc[e]));
        float d = amax / 127.0f, inv = amax > 0.0f ? 127.0f / amax : 0.0f;
        for (size_t p = 0; p < 64; p++) {
            long v = lrintf(xc[chan_of(bits, p)] * inv);
            q[64 * c + p] = (int8_t)(v > 127 ? 127 : v < -127 ? -127 : v);
        }
        memcpy(dst + c * sizeof(float), &d, sizeof d);
    }
}

static unsigned code_at(const uint8_t *row, int bits, size_t ch)
{
    return bits == 4 ? (row[ch >> 1] >> (4 * (ch & 1))) & 15u : (row[ch >> 2] >> (2 * (ch & 3))) & 3u;
}

void vq_codes_qdot_ref(const uint8_t *codes, size_t rstride, int bits, size_t nt, size_t D, const uint8_t *qbuf,
                       size_t qstride, int n_q, float *s, size_t sstride)
{
    for (int j = 0; j < n_q; j++) {
        const uint8_t *qj = qbuf + (size_t)j * qstride;
        const int8_t *q = (const int8_t *)(const void *)(qj + D / 64 * sizeof(float));
        for (size_t i = 0; i < nt; i++) {
            const uint8_t *row = codes + i * rstride;
            float acc = 0.0f;
            for (size_t c = 0; c < D / 64; c++) {
                int32_t isum = 0;
                for (size_t p = 0; p < 64; p++)
                    isum += (int32_t)code_at(row, bits, 64 * c + chan_of(bits, p)) * q[64 * c + p];
                float d;
                memcpy(&d, qj + c * sizeof(float), sizeof d);
                acc += d * (float)isum;
            }
            s[(size_t)j * sstride + i] = acc;
        }
    }
}
