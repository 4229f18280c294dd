/* dense.c -- scalar references of dense.h: one loop for each kernel, the
 * element type read per element (clarity over speed: the SIMD twins are
 * the fast paths). */
#include "kernels/dense.h"

#include "core/fp16.h"

/* element idx of the rows v */
static inline float row_at(const void *v, size_t idx, vq_elem elem)
{
    if (elem == VQ_ELEM_F16) {
        const uint8_t *h = v;
        return vq_fp16_to_fp32((vq_fp16)(h[2 * idx] | h[2 * idx + 1] << 8));
    }
    return ((const float *)v)[idx];
}

void vq_dense_dot_ref(const float *q, size_t qstride, int n_q, const void *v, vq_elem elem, size_t nt, size_t E,
                      float *s, size_t sstride)
{
    for (int j = 0; j < n_q; j++) {
        const float *qj = q + (size_t)j * qstride;
        for (size_t i = 0; i < nt; i++) {
            float t = 0.0f;
            for (size_t e = 0; e < E; e++)
                t += qj[e] * row_at(v, i * E + e, elem);
            s[(size_t)j * sstride + i] = t;
        }
    }
}

void vq_dense_axpy_ref(const float *w, size_t wstride, int n_q, const void *v, vq_elem elem, size_t nt, size_t E,
                       float *acc, size_t astride)
{
    for (int j = 0; j < n_q; j++) {
        float *a = acc + (size_t)j * astride;
        for (size_t i = 0; i < nt; i++) {
            float wi = w[(size_t)j * wstride + i];
            for (size_t e = 0; e < E; e++)
                a[e] += wi * row_at(v, i * E + e, elem);
        }
    }
}
