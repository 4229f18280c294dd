/* dense.c -- scalar references of dense.h and the run-time dispatch. */
#include "codec/dense.h"
#include "core/cpu.h"

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

void vq_dense_dot(const float *q, size_t qstride, int n_q, const float *v, size_t nt, size_t E, float *s,
                  size_t sstride)
{
    if ((vq_cpu_features() & VQ_CPU_AVX2) && E % 8 == 0)
        vq_dense_dot_avx2(q, qstride, n_q, v, nt, E, s, sstride);
    else
        vq_dense_dot_ref(q, qstride, n_q, v, nt, E, s, sstride);
}

void vq_dense_axpy(const float *w, size_t wstride, int n_q, const float *v, size_t nt, size_t E, float *acc,
                   size_t astride)
{
    if ((vq_cpu_features() & VQ_CPU_AVX2) && E % 8 == 0)
        vq_dense_axpy_avx2(w, wstride, n_q, v, nt, E, acc, astride);
    else
        vq_dense_axpy_ref(w, wstride, n_q, v, nt, E, acc, astride);
}
