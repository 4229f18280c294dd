/* dense.c -- scalar references of dense.h. */
#include "kernels/dense.h"

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
