/* dense.c -- scalar references of dense.h. */
#include "kernels/dense.h"

#include "core/fp16.h"

static float half_at(const uint8_t *v, size_t idx) { return vq_fp16_to_fp32((vq_fp16)(v[2 * idx] | v[2 * idx + 1] << 8)); }

void vq_dense_dot_ref(const float *q, size_t qstride, int n_q, const float *v, size_t nt, size_t E, float *s,
                      size_t sstride)
{
    for (int j = 0; j < n_q; j++) {
        const float *qj = q + (size_t)j * qstride;
        for (size_t i = 0; i < nt; i++) {
            const float *vi = v + i * E;
            float t = 0.0f;
            for (size_t e = 0; e < E; e++)
                t += qj[e] * vi[e];
            s[(size_t)j * sstride + i] = t;
        }
    }
}

void vq_dense_axpy_ref(const float *w, size_t wstride, int n_q, const float *v, size_t nt, size_t E, float *acc,
                       size_t astride)
{
    for (int j = 0; j < n_q; j++) {
        float *a = acc + (size_t)j * astride;
        for (size_t i = 0; i < nt; i++) {
            float wi = w[(size_t)j * wstride + i];
            const float *vi = v + i * E;
            for (size_t e = 0; e < E; e++)
                a[e] += wi * vi[e];
        }
    }
}

void vq_half_dot_ref(const float *q, size_t qstride, int n_q, const uint8_t *v, size_t nt, size_t E, float *s,
                     size_t sstride)
{
    for (int j = 0; j < n_q; j++) {
        const float *qj = q + (size_t)j * qstride;
        for (size_t i = 0; i < nt; i++) {
            float t = 0.0f;
            for (size_t e = 0; e < E; e++)
                t += qj[e] * half_at(v, i * E + e);
            s[(size_t)j * sstride + i] = t;
        }
    }
}

void vq_half_axpy_ref(const float *w, size_t wstride, int n_q, const uint8_t *v, size_t nt, size_t E, float *acc,
                      size_t astride)
{
    for (int j = 0; j < n_q; j++) {
        float *a = acc + (size_t)j * astride;
        for (size_t i = 0; i < nt; i++) {
            float wi = w[(size_t)j * wstride + i];
            for (size_t e = 0; e < E; e++)
                a[e] += wi * half_at(v, i * E + e);
        }
    }
}
