/* rows_ref.c -- scalar references of the row decoders of kernels.h
 * (lut_row, kivi_row, ...) and of the sums that decode rows in registers
 * (lut_axpy, kivi_axpy). */
#include "core/vexp.h"
#include "kernels/kernels.h"

#include <math.h>

#include "core/bitstream.h"
#include "core/fp16.h"

/* code i of width bits (1..8), LSB first */
static inline unsigned code_at(const uint8_t *src, size_t i, int bits) { return vq_bits_get(src, i, bits); }

void vq_bits_unpack_ref(const uint8_t *src, size_t n, int bits, uint8_t *out) { vq_bits_unpack(src, n, bits, out); }

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

void vq_kivi_fold_ref(const float *q, size_t qstride, int n_q, const float *s, const float *m, size_t D, float *qs,
                      float *base)
{
    for (int j = 0; j < n_q; j++) {
        const float *qj = q + (size_t)j * qstride;
        float lane[16] = { 0 };
        for (size_t e = 0; e < D; e++) {
            qs[(size_t)j * D + e] = qj[e] * s[e];
            const float t = qj[e] * m[e];
            lane[e % 16] = lane[e % 16] + t;
        }
        base[j] = vq_sum16_lanes(lane);
    }
}

void vq_lut8_row_ref(const uint8_t *c8, size_t n, const float *lut, const float *s, const float *m, float *out)
{
    for (size_t i = 0; i < n; i++) {
        float t = s[i] * (lut ? lut[c8[i]] : (float)c8[i]);
        out[i] = t + m[i];
    }
}

static float half_at(const uint8_t *p, size_t k) { return vq_fp16_to_fp32((vq_fp16)(p[2 * k] | p[2 * k + 1] << 8)); }

void vq_half_ratio_ref(const uint8_t *base, size_t stride, size_t n, float c, float *out)
{
    for (size_t i = 0; i < n; i++) {
        const uint8_t *p = base + i * stride;
        out[i] = half_at(p, 0) / (half_at(p, 1) * c);
    }
}

void vq_kivi_group_row_ref(const uint8_t *row, int bits, size_t n, size_t group, const uint8_t *gs16,
                           const uint8_t *gm16, float *out)
{
    for (size_t i = 0; i < n; i++) {
        float t = half_at(gs16, i / group) * (float)code_at(row, i, bits);
        out[i] = t + half_at(gm16, i / group);
    }
}

void vq_codes_dot_ref(const uint8_t *codes, size_t rstride, int bits, size_t nt, size_t E, const float *lut,
                      const float *q, size_t qstride, int n_q, float *s, size_t sstride)
{
    for (int j = 0; j < n_q; j++)
        for (size_t i = 0; i < nt; i++) {
            const uint8_t *row = codes + i * rstride;
            float t = 0.0f;
            for (size_t e = 0; e < E; e++) {
                const unsigned c = code_at(row, e, bits);
                t += q[(size_t)j * qstride + e] * (lut ? lut[c] : (float)c);
            }
            s[(size_t)j * sstride + i] = t;
        }
}

void vq_codes_dot_pair_ref(const uint8_t *codes, size_t rstride, size_t off, size_t nt, size_t E, const float *lut4,
                           const float *q, size_t qstride, int n_q, float *s, size_t sstride)
{
    for (int j = 0; j < n_q; j++)
        for (size_t i = 0; i < nt; i++) {
            const uint8_t *row = codes + i * rstride;
            float t = 0.0f;
            for (size_t e = 0; e < E; e++)
                t += q[(size_t)j * qstride + e] * lut4[code_at(row, e, 1) + 2 * code_at(row + off, e, 1)];
            s[(size_t)j * sstride + i] = t;
        }
}

void vq_kivi_axpy_ref(const uint8_t *rows, size_t rstride, int bits, size_t nt, size_t D, size_t group,
                      const float *w, size_t wstride, int n_q, float *acc, size_t astride)
{
    const size_t ng = D / group;
    for (int j = 0; j < n_q; j++)
        for (size_t g = 0; g < ng; g++) {
            float *a = acc + (size_t)j * astride + g * group;
            float wm = 0.0f;
            for (size_t i = 0; i < nt; i++) {
                const uint8_t *r = rows + i * rstride;
                const float wi = w[(size_t)j * wstride + i], s = half_at(r, g);
                for (size_t e = 0; e < group; e++)
                    a[e] = fmaf(wi, s * (float)code_at(r + 4 * ng, g * group + e, bits), a[e]);
                wm = fmaf(wi, half_at(r + 2 * ng, g), wm);
            }
            for (size_t e = 0; e < group; e++)
                a[e] += wm;
        }
}

void vq_lut_axpy_ref(const uint8_t *codes, size_t stride, size_t nt, size_t D, const size_t *offs, int bits,
                     const float *lut, int n_sets, const float *f, size_t hoff, const float *w, size_t wstride, int n_q,
                     float *acc, size_t astride)
{
    const size_t L = (size_t)1 << bits;
    for (size_t i = 0; i < nt; i++) {
        const uint8_t *r = codes + i * stride;
        const float fi = f ? f[i] : half_at(r + hoff, 0);
        for (int j = 0; j < n_q; j++) {
            const float wi = w[(size_t)j * wstride + i];
            float *a = acc + (size_t)j * astride;
            for (size_t e = 0; e < D; e++) {
                float v = fi * lut[code_at(r + offs[0], e, bits)];
                if (n_sets > 1) {
                    const float v1 = fi * lut[L + code_at(r + offs[1], e, bits)];
                    v = v + v1;
                }
                a[e] = fmaf(wi, v, a[e]);
            }
        }
    }
}
