/* bits_ref.c -- scalar references of kernels.h bitdot and signscore. */
#include "kernels/kernels.h"

#include "core/fp16.h"
#include "core/io.h"

static unsigned pop32(uint32_t x)
{
    x = x - ((x >> 1) & 0x55555555u);
    x = (x & 0x33333333u) + ((x >> 2) & 0x33333333u);
    return (((x + (x >> 4)) & 0x0F0F0F0Fu) * 0x01010101u) >> 24;
}

static uint32_t word(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

void vq_bitdot_ref(const uint8_t *codes, size_t stride, size_t n, size_t D, const uint8_t *planes, size_t qstride,
                   int n_q, int qbits, uint32_t *pz, uint32_t *pq)
{
    for (size_t i = 0; i < n; i++) {
        const uint8_t *z = codes + i * stride;
        uint32_t c = 0;
        for (size_t w = 0; w < D / 32; w++)
            c += pop32(word(z + 4 * w));
        pz[i] = c;
        for (int j = 0; j < n_q; j++) {
            uint32_t acc = 0;
            for (int p = 0; p < qbits; p++) {
                const uint8_t *v = planes + (size_t)j * qstride + (size_t)p * (D / 8);
                for (size_t w = 0; w < D / 32; w++)
                    acc += pop32(word(z + 4 * w) & word(v + 4 * w)) << p;
            }
            pq[(size_t)j * n + i] = acc;
        }
    }
}

/* chunks of tokens and queries whose counts fit the stack */
enum { SS_TOK = 64, SS_QRY = 16 };

void vq_signscore_via(vq_bitdot_fn *bitdot, const uint8_t *codes, size_t stride, size_t n, size_t D,
                      const size_t *offs, const float *w, int n_sets, const float *f, size_t hoff,
                      const uint8_t *planes, size_t qstride, const float *qc, int n_q, int qbits, float *s,
                      size_t sstride)
{
    uint32_t pz[2][SS_TOK], pq[2][SS_QRY * SS_TOK];
    for (size_t i0 = 0; i0 < n; i0 += SS_TOK) {
        const size_t nt = n - i0 < SS_TOK ? n - i0 : SS_TOK;
        for (int j0 = 0; j0 < n_q; j0 += SS_QRY) {
            const int nj = n_q - j0 < SS_QRY ? n_q - j0 : SS_QRY;
            for (int k = 0; k < n_sets; k++)
                bitdot(codes + i0 * stride + offs[k], stride, nt, D, planes + (size_t)j0 * qstride, qstride, nj,
                       qbits, pz[k], pq[k]);
            for (int j = 0; j < nj; j++) {
                const float *c = qc + 3 * (size_t)(j0 + j);
                float *out = s + (size_t)(j0 + j) * sstride + i0;
                for (size_t i = 0; i < nt; i++) {
                    /* one rounding per step (kernels.h): no contraction */
                    float z = w[0] * (float)pz[0][i];
                    float p = w[0] * (float)pq[0][(size_t)j * nt + i];
                    if (n_sets > 1) {
                        const float z1 = w[1] * (float)pz[1][i];
                        const float p1 = w[1] * (float)pq[1][(size_t)j * nt + i];
                        z = z + z1;
                        p = p + p1;
                    }
                    const float a = c[0] * z;
                    const float b = c[1] * p;
                    const float t = a + b;
                    const float u = t - c[2];
                    const size_t ti = i0 + i;
                    out[i] = (f ? f[ti] : vq_fp16_to_fp32(vq_get_u16(codes + ti * stride + hoff))) * u;
                }
            }
        }
    }
}

void vq_signscore_ref(const uint8_t *codes, size_t stride, size_t n, size_t D, const size_t *offs, const float *w,
                      int n_sets, const float *f, size_t hoff, const uint8_t *planes, size_t qstride, const float *qc,
                      int n_q, int qbits, float *s, size_t sstride)
{
    vq_signscore_via(vq_bitdot_ref, codes, stride, n, D, offs, w, n_sets, f, hoff, planes, qstride, qc, n_q, qbits,
                     s, sstride);
}
