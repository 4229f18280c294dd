/* dense.c -- scalar references of dense.h: one loop each for float rows
 * and for IEEE-half rows (HALF, a constant after inlining). */
#include "kernels/dense.h"

#include "core/fp16.h"

static inline float row_at(const void *v, size_t idx, int HALF)
{
    if (HALF) {
        const uint8_t *h = v;
        return vq_fp16_to_fp32((vq_fp16)(h[2 * idx] | h[2 * idx + 1] << 8));
    }
    return ((const float *)v)[idx];
}

static inline void dot_ref(const float *q, size_t qstride, int n_q, const void *v, size_t nt, size_t E, float *s,
                           size_t sstride, int HALF)
{
    for (int j = 0; j < n_q; j++) {
        const float *qj = q + (size_t)j * qstride;
        for (size_t i = 0; i < nt; i++) {
            float t = 0.0f;
            for (size_t e = 0; e < E; e++)
                t += qj[e] * row_at(v, i * E + e, HALF);
            s[(size_t)j * sstride + i] = t;
        }
    }
}

static inline void axpy_ref(const float *w, size_t wstride, int n_q, const void *v, size_t nt, size_t E, float *acc,
                            size_t astride, int HALF)
{
    for (int j = 0; j < n_q; j++) {
        float *a = acc + (size_t)j * astride;
        for (size_t i = 0; i < nt; i++) {
            float wi = w[(size_t)j * wstride + i];
            for (size_t e = 0; e < E; e++)
                a[e] += wi * row_at(v, i * E + e, HALF);
        }
    }
}

void vq_dense_dot_ref(const float *q, size_t qstride, int n_q, const float *v, size_t nt, size_t E, float *s,
                      size_t sstride)
{
    dot_ref(q, qstride, n_q, v, nt, E, s, sstride, 0);
}

void vq_dense_axpy_ref(const float *w, size_t wstride, int n_q, const float *v, size_t nt, size_t E, float *acc,
                       size_t astride)
{
    axpy_ref(w, wstride, n_q, v, nt, E, acc, astride, 0);
}

void vq_half_dot_ref(const float *q, size_t qstride, int n_q, const uint8_t *v, size_t nt, size_t E, float *s,
                     size_t sstride)
{
    dot_ref(q, qstride, n_q, v, nt, E, s, sstride, 1);
}

void vq_half_axpy_ref(const float *w, size_t wstride, int n_q, const uint8_t *v, size_t nt, size_t E, float *acc,
                      size_t astride)
{
    axpy_ref(w, wstride, n_q, v, nt, E, acc, astride, 1);
}
